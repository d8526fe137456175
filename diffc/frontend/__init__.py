"""The Slang-subset front end: `compile_slang(text, filename) -> ModuleOp`.

Phases, each a sub-package: source/ (preprocess.py: directives and macros; source_map.py takes
locations back to the files; lexer.py: tokens) -> parser/ (parser.py: the tree of ast.py) ->
checker/ (checker.py with calls.py, type_resolution.py, ...: types, diagnostics) -> lowering/
(lower.py, lower_expr.py, lower_calls.py: IR per docs/architecture.md). Language features are
one module each in features/, called by the phases through feature.py's hooks.

Error codes (printed as `file:line:col: error[CODE]: message`, the line and a caret):
  E0001 syntax, E0002 undefined name/type, E0003 type mismatch, E0004 unknown member,
  E0005 wrong argument count, E0006 derivative-carrying value into a non-differentiable
  function or operation (a buffer or raw-pointer write), E0007 loop without a bound in a function that
  bwd_diff differentiates, E0008 valid Slang this front end does not support, E0009 a second global
  of one name.
E0006/E0007 on the lowered IR come from lowering/derivative_checks.py (what the passes would refuse).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from diffc.frontend.errors import FrontendError
from diffc.frontend.features import FEATURES  # noqa: F401 (installs the language features' hooks)


def compile_slang(text: str, filename: str = "<input>", defines: dict[str, str] | None = None,
                  include_dirs: Iterable[str] = (),
                  conformance_ids: Mapping[str, Mapping[str, int]] | None = None,
                  preludes: Iterable[str] = ()) -> ModuleOp:
    """Preprocesses, parses, checks and lowers Slang source; raises `DiffcError` with a located
    message. `filename` is where `#include "x"` looks first; `defines` are macros defined
    beforehand (like `-D name=value`), `include_dirs` where `#include` looks next.
    `conformance_ids`: interface -> {struct: id}, the tag a dynamic value of the interface has
    when it holds that struct (Slang's type conformance ids; features/dynamic.py numbers the others).
    `preludes`: Slang files read before the program, as if it imported them first (their types are
    known to it: diffc/lib/slangtorch.slang for diffc.slangtorch)."""
    from diffc.frontend.checker.checker import Checker
    from diffc.frontend.parser.imports import Loader
    from diffc.frontend.lowering.lower import Lowering
    from diffc.frontend.parser import MAX_NESTING

    # The parser caps nesting (parser.MAX_NESTING); each level is a dozen or so Python frames
    # of recursive descent (and a few of checking and lowering), more than the default allows.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20 * MAX_NESTING + 1000))
    loader = Loader(filename, defines, include_dirs)
    sources = loader.sources  # every file read so far, preprocessed: an error names the file it is in
    try:
        first = [loader.parse(_read_prelude(p), p) for p in preludes]
        prog = loader.parse(text, filename)  # with the files it imports (imports.py)
        prog.decls[:0] = [d for q in first for d in q.decls]
        checker = Checker()
        checker.conformance_ids = {_no_spaces(i): {_no_spaces(t): int(k) for t, k in ids.items()}
                                   for i, ids in (conformance_ids or {}).items()}
        checker.check_program(prog)
        module = Lowering(checker, sources).module(prog)
        _print_warnings(checker.warnings, sources)
        return module
    except FrontendError as e:
        raise e.to_diffc_error(sources) from None
    finally:
        sys.setrecursionlimit(limit)


def _read_prelude(path: str) -> str:
    from diffc.frontend.source import files_read

    text = Path(path).read_text(encoding="utf-8")
    files_read.read(path, text)
    return text


def _no_spaces(type_name: str) -> str:
    return "".join(type_name.split())  # `ISensor< float >` names what `ISensor<float>` does


def _print_warnings(warnings, source_map) -> None:
    """Warnings go to stderr as located diagnostics, as Slang prints them."""
    from diffc.diagnostics import format_diagnostic, print_warning

    for (start, end), message in warnings:
        loc = source_map.location(start)
        last = source_map.location(max(start, end - 1), end=True)
        length = last.col - loc.col + 1 if (last.file, last.line) == (loc.file, loc.line) else 1
        print_warning(format_diagnostic(loc, message, None, source_map.source(loc.file), max(1, length),
                                        severity="warning"))


# What the registry's FRONTENDS["slang"] loads: a `(text, filename) -> ModuleOp` callable.
parse_slang = compile_slang
