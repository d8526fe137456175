"""diffc-opt: xDSL's optimizer driver with diffc's dialects, passes and targets, MLIR's
`--pass-pipeline` syntax, pass plugins, and located diagnostics without tracebacks."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import importlib.machinery
import importlib.util
import inspect
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from io import StringIO
from pathlib import Path
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    PassFailedException,
)
from xdsl.xdsl_opt_main import xDSLOptMain

from diffc import registry
from diffc.diagnostics import DiffcError, decode_source, failed_in_pass, read_source, render_error
from diffc.compiler import LocatingParser, parse_error_message
from diffc.verify import verify_located

__all__ = ["LocatingParser", "parse_error_message", "verify_located", "main"]  # tests import these from here


_MLIR_PIPELINE = re.compile(r"^\s*builtin\.module\s*\((?P<inner>.*)\)\s*$", re.DOTALL)


def pipeline_from_mlir_syntax(spec: str) -> str:
    """`builtin.module(a, b{x=1})` -> `a,b{x=1}`; any other nesting is refused. Blanks between
    passes are dropped (xDSL's pipeline syntax has none); inside `{...}` they are kept."""
    m = _MLIR_PIPELINE.match(spec)
    if m is None:
        raise DiffcError(
            f"error: --pass-pipeline must have the form 'builtin.module(pass1,pass2{{opt=value}})', got '{spec}'"
        )
    inner = m.group("inner")
    out: list[str] = []
    depth = 0
    quote = False
    for i, c in enumerate(inner):
        if c == '"':
            quote = not quote
        elif quote:
            pass
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c in "()" and depth == 0:
            raise DiffcError(
                f"error: --pass-pipeline: only passes on 'builtin.module' are supported; "
                f"nested pipelines such as '{inner[: i + 1].strip()}...' are not (diffc passes run on "
                f"the whole module: write 'builtin.module(pass)')"
            )
        elif c.isspace() and depth == 0:
            continue
        out.append(c)
    return "".join(out)


def check_pipeline(spec: str, available: dict[str, Callable[[], type[ModulePass]]]) -> None:
    """Names unknown passes and unknown options before xDSL builds the pipeline."""
    if not spec.strip():
        return
    try:
        specs = list(parse_pipeline(spec))
    except ArgSpecParseError as e:
        raise DiffcError(f"error: {e}") from None
    for ps in specs:
        if ps.name not in available:
            close = difflib.get_close_matches(ps.name, list(available), n=3)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise DiffcError(
                f"error: unknown pass '{ps.name}'{hint} (diffc-opt --help lists the passes; "
                f"--load-pass-plugin=FILE.py adds more)"
            )
        try:
            pass_type = available[ps.name]()
        except Exception as e:
            raise DiffcError(f"error: pass '{ps.name}' could not be loaded: {type(e).__name__}: {e}") from None
        if not dataclasses.is_dataclass(pass_type):
            continue
        fields = [f.name for f in dataclasses.fields(pass_type) if f.name != "name" and f.init]
        for opt in ps.normalize_parameter_names().parameters:
            if opt not in fields:
                known = ", ".join(fields) if fields else "none"
                raise DiffcError(
                    f"error: pass '{ps.name}' has no option '{opt}' (its options: {known})"
                )
        try:
            pass_type.from_pass_spec(ps)
        except Exception as e:
            raise DiffcError(f"error: pass '{ps.name}': bad option value: {e}") from None


def load_pass_plugin(path: str) -> list[type[ModulePass]]:
    """Imports a Python file and returns every ModulePass subclass it defines. A file that defines
    `register(registry)` gets it called with a diffc.registry.PluginRegistry first, as an
    installed plugin's entry point: it may add dialects, passes and derivative rules."""
    file = Path(path)
    if not file.is_file():
        raise DiffcError(f"error: --load-pass-plugin: no such file '{path}'")
    mod_name = f"diffc_plugin_{abs(hash(str(file.resolve())))}"
    # read as Python whatever the file's suffix: a file that is not Python then says so below
    loader = importlib.machinery.SourceFileLoader(mod_name, str(file))
    spec = importlib.util.spec_from_loader(mod_name, loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except (SyntaxError, ValueError, UnicodeDecodeError) as e:  # not Python source at all
        sys.modules.pop(mod_name, None)
        line = getattr(e, "lineno", None)
        col = getattr(e, "offset", None)
        where = f"{path}:{line}:{col or 1}: " if line else ""
        what = getattr(e, "msg", None) or str(e)
        if file.suffix == ".py":
            problem = f"is not valid Python: {what}"
        else:
            problem = f"is not a Python file (a plugin is Python source defining ModulePass subclasses): {what}"
        raise DiffcError(f"{where}error: --load-pass-plugin: '{path}' {problem}") from None
    except Exception as e:  # the plugin's own bug: say where, not a traceback
        raise DiffcError(f"error: --load-pass-plugin: loading '{path}' failed: {type(e).__name__}: {e}") from None
    except SystemExit as e:  # a script, not a plugin: its exit would end diffc-opt without a word
        raise DiffcError(f"error: --load-pass-plugin: loading '{path}' failed: it called sys.exit({e.code!r})") from None
    passes = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, ModulePass)
        and obj.__module__ == mod_name
        and not inspect.isabstract(obj)
        and isinstance(getattr(obj, "name", None), str)
    ]
    hook = vars(module).get("register")
    if callable(hook) and getattr(hook, "__module__", None) == mod_name:
        try:
            hook(registry.PluginRegistry())
        except Exception as e:
            raise DiffcError(f"error: --load-pass-plugin: register() of '{path}' failed: {type(e).__name__}: {e}") from None
        passes += [registry.PASSES[n]() for n in list(registry.PASSES) if registry.PASSES[n]().__module__ == mod_name
                   and registry.PASSES[n]() not in passes]
    elif not passes:
        raise DiffcError(f"error: --load-pass-plugin: '{path}' defines no ModulePass subclass with a name "
                         f"and no register(registry) function")
    return passes


class _HeldOutput(StringIO):
    """Output kept in memory until the whole run succeeded: no half-written files."""

    def close(self) -> None:
        pass


class DiffcOptMain(xDSLOptMain):
    version_format = "diffc-opt (xdsl {xdsl_version})"

    def __init__(self, args: Sequence[str] | None = None):
        self.sources: dict[str, str] = {}
        self._argv = args
        registry.load_installed_plugins()
        super().__init__(description="diffc modular optimizer driver", args=args)

    # -- registration ------------------------------------------------------------------------

    def register_all_dialects(self):
        super().register_all_dialects()
        for name, factory in registry.DIALECTS.items():
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        super().register_all_passes()
        for name, factory in registry.PASSES.items():
            self.available_passes.setdefault(name, factory)

    def register_all_targets(self):
        super().register_all_targets()
        for name, factory in registry.TARGETS.items():
            self.available_targets.setdefault(name, factory)

    def register_all_frontends(self):
        super().register_all_frontends()

        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            name = self.get_input_name()
            text = decode_source(io.read(), name)
            if self.args.input_file is not None:  # the whole file, for every split chunk
                self.sources.setdefault(name, read_source(self.args.input_file))
            else:
                self.sources.setdefault(name, text)
            return LocatingParser(self.ctx, text, name, self._chunk_offset).parse_module(
                not self.args.no_implicit_module
            )

        self.available_frontends["mlir"] = parse_mlir

        for ext, factory in registry.FRONTENDS.items():

            def parse_other(io: IO[bytes], factory=factory) -> ModuleOp:
                name = self.get_input_name()
                text = decode_source(io.read(), name)
                self.sources.setdefault(name, text)
                return factory()(text, name)

            self.available_frontends[ext] = parse_other

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
        if {"-h", "--help"} & set(sys.argv[1:] if self._argv is None else self._argv):
            arg_parser.epilog = self._pass_list()  # (imports every pass: only for --help)
            arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        arg_parser.add_argument(
            "--pass-pipeline",
            type=str,
            default=None,
            help="MLIR-style pipeline, e.g. 'builtin.module(diff-fwd,canonicalize)'",
        )
        arg_parser.add_argument(
            "--load-pass-plugin",
            action="append",
            default=[],
            metavar="FILE.py",
            help="load every ModulePass subclass defined in FILE.py (repeatable)",
        )

    def _pass_list(self) -> str:
        """diffc's passes (plugins' among them), one line each, for --help."""
        passes = dict(registry.PASSES)
        argv = list(sys.argv[1:] if self._argv is None else self._argv)
        for k, arg in enumerate(argv):  # (the files --load-pass-plugin names, read before the help)
            path = arg.partition("=")[2] if arg.startswith("--load-pass-plugin=") else \
                argv[k + 1] if arg == "--load-pass-plugin" and k + 1 < len(argv) else None
            if path:
                try:
                    passes.update({t.name: (lambda t=t: t) for t in load_pass_plugin(path)})
                except DiffcError:
                    pass  # (the run after --help reports it)
        rows = []
        for name, factory in sorted(passes.items()):
            try:
                what = registry.pass_description(factory())
            except Exception as e:  # a plugin that fails to load is named, the help still prints
                what = f"(cannot load: {type(e).__name__}: {e})"
            rows.append((name, what))
        width = max(len(n) for n, _ in rows)
        lines = [f"  {n.ljust(width)}  {w}" for n, w in rows]
        return ("diffc's passes (-p NAME{option=value}; the xDSL passes are listed under -p above):\n"
                + "\n".join(lines))

    # -- pipeline ----------------------------------------------------------------------------

    _chunk_offset = 0

    def setup_pipeline(self):
        for path in self.args.load_pass_plugin:
            for pass_type in load_pass_plugin(path):
                self.available_passes[pass_type.name] = lambda t=pass_type: t
        for name, factory in registry.DIALECTS.items():  # those a plugin's register() added
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)
        if self.args.pass_pipeline is not None:
            if self.args.passes:
                raise DiffcError("error: give either --pass-pipeline or -p/--passes, not both")
            self.args.passes = pipeline_from_mlir_syntax(self.args.pass_pipeline)
        check_pipeline(self.args.passes, self.available_passes)
        super().setup_pipeline()
        self.pipeline = PassPipeline(self.pipeline.passes, self._between_passes)

    _running: ModulePass | None = None
    _pass_start = 0.0

    def apply_passes(self, prog: ModuleOp):
        """Runs the pipeline; a pass that fails or crashes is named in the message."""
        self._running = None
        try:
            super().apply_passes(prog)
        except PassFailedException as e:
            if self._running is None:
                raise
            raise failed_in_pass(self._running.name, e) from None
        except DiagnosticException:
            raise
        except Exception as e:
            if self._running is None or os.environ.get("DIFFC_TRACEBACK"):
                raise
            raise DiffcError(
                f"error: pass '{self._running.name}' crashed: {type(e).__name__}: {e} "
                f"(set DIFFC_TRACEBACK=1 to see the Python traceback)"
            ) from None

    def _between_passes(
        self, previous: ModulePass | None, module: ModuleOp, following: ModulePass | None
    ) -> None:
        self._running = None
        if self.args.time_passes and previous is not None:  # xdsl-opt's line (its callback is replaced here)
            # (on stderr, as mlir-opt's timing report: the IR on stdout can go on to FileCheck)
            print(f"Pass {previous.name} took {time.perf_counter() - self._pass_start} seconds", file=sys.stderr)
        if not self.args.disable_verify:
            verify_located(module, self.sources, previous.name if previous else None)
        if previous and following and self.args.print_between_passes:
            print(f"IR after {previous.name}:")
            Printer(stream=sys.stdout).print_op(module)
            print("\n\n\n")
        self._running = following
        self._pass_start = time.perf_counter()  # after verifying: the pass's own time, as xdsl-opt measures

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0):
        self._chunk_offset = start_offset
        try:
            return super().parse_chunk(chunk, file_extension, start_offset)
        except ParseError as e:
            # Under --verify-diagnostics / --parsing-diagnostics a parse error (a syntax error,
            # or a type whose parameters fail its verifier) is one more expected diagnostic:
            # print it in the same located form and go on with the next chunk.
            if not (self.args.verify_diagnostics or self.args.parsing_diagnostics):
                raise
            e.span = dataclasses.replace(e.span, line_offset=start_offset)
            print(parse_error_message(e))
            return None

    # -- output ------------------------------------------------------------------------------

    def prepare_output(self) -> IO[str]:
        return _HeldOutput() if self.args.output_file is not None else sys.stdout

    def run(self):
        output = self.prepare_output()
        self.prepare_output = lambda: output  # type: ignore[method-assign]
        super().run()
        if isinstance(output, _HeldOutput):
            Path(self.args.output_file).write_text(output.getvalue())


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: every failure is a message on stderr and a non-zero exit."""
    opt: DiffcOptMain | None = None
    try:
        opt = DiffcOptMain(args=argv)
        opt.run()
        return 0
    except ParseError as e:
        print(parse_error_message(e), file=sys.stderr)
    except (DiagnosticException, DiffcError) as e:  # a pass's or the emitter's error shows its source line
        print(render_error(e, opt.sources if opt is not None else None), file=sys.stderr)
    except ArgSpecParseError as e:
        print(f"error: {e}", file=sys.stderr)
    except RecursionError:
        if os.environ.get("DIFFC_TRACEBACK"):
            raise
        print("error: the input is nested too deeply for diffc-opt (Python's recursion limit)", file=sys.stderr)
    except Exception as e:  # an unknown pass, a bad option value, a failing plugin
        if os.environ.get("DIFFC_TRACEBACK"):
            raise
        print(f"error: {e}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
