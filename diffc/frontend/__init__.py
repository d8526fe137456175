"""The Slang-subset front end: `compile_slang(text, filename) -> ModuleOp`.

Stages: lexer.py (tokens) -> parser.py (ast.py) -> checker.py + calls.py (types, diagnostics)
-> lower.py + lower_expr.py + lower_calls.py (IR per docs/architecture.md).

Error codes (printed as `file:line:col: error[CODE]: message`, the line and a caret):
  E0001 syntax, E0002 undefined name/type, E0003 type mismatch, E0004 unknown member,
  E0005 wrong argument count, E0006 derivative-carrying value into a non-differentiable
  function or operation (a buffer or raw-pointer write), E0007 loop without a bound in a function that
  bwd_diff differentiates, E0008 valid Slang this front end does not support, E0009 a second global
  of one name.
E0006/E0007 on the lowered IR come from derivative_checks.py (what the passes would refuse).
"""

from __future__ import annotations

import sys

from xdsl.dialects.builtin import ModuleOp

from diffc.frontend.errors import FrontendError


def compile_slang(text: str, filename: str = "<input>") -> ModuleOp:
    """Parses, checks and lowers Slang source; raises `DiffcError` with a located message."""
    from diffc.frontend.checker import Checker
    from diffc.frontend.lower import Lowering
    from diffc.frontend.parser import MAX_NESTING, parse

    # The parser caps nesting (parser.MAX_NESTING); each level is a dozen or so Python frames
    # of recursive descent (and a few of checking and lowering), more than the default allows.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20 * MAX_NESTING + 1000))
    try:
        prog = parse(text, filename)
        checker = Checker()
        checker.check_program(prog)
        module = Lowering(checker, text, filename).module(prog)
        _print_warnings(checker.warnings, text, filename)
        return module
    except FrontendError as e:
        raise e.to_diffc_error(text, filename) from None
    finally:
        sys.setrecursionlimit(limit)


def _print_warnings(warnings, text: str, filename: str) -> None:
    """Warnings go to stderr as located diagnostics, as Slang prints them."""
    from diffc.diagnostics import SourceLocation, format_diagnostic, line_col

    for (start, end), message in warnings:
        line, col = line_col(text, start)
        print(format_diagnostic(SourceLocation(filename, line, col), message, None, text,
                                max(1, end - start), severity="warning"), file=sys.stderr)


# What the registry's FRONTENDS["slang"] loads: a `(text, filename) -> ModuleOp` callable.
parse_slang = compile_slang
