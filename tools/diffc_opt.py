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
from collections.abc import Callable, Sequence
from io import StringIO
from pathlib import Path
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import BlockArgument, Operation, OpResult
from xdsl.dialects import scf
from xdsl.dialects.builtin import UnregisteredOp
from xdsl.traits import IsTerminator, NoTerminator
from xdsl.parser import Parser
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    PassFailedException,
    VerifyException,
)
from xdsl.xdsl_opt_main import xDSLOptMain

from diffc import registry
from diffc.diagnostics import (
    DiffcError,
    decode_source,
    failed_in_pass,
    format_diagnostic,
    line_col,
    op_location,
    read_source,
    render_error,
)
from diffc.dialects.diff import verify_op_facts


class LocatingParser(Parser):
    """A parser that gives each operation the file:line:col it was read from, so that a
    verifier failure can point at the source."""

    def __init__(self, ctx: Context, text: str, name: str, line_offset: int = 0):
        super().__init__(ctx, text, name)
        self._text = text
        self._name = name
        self._line_offset = line_offset

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        try:
            op = super().parse_operation()
        except (VerifyException, MemoryError) as e:  # an op whose constructor checks its types, or a huge constant
            line_end = self._text.find("\n", start)
            message = str(e) if isinstance(e, VerifyException) else "too large to build in memory"
            self.raise_error(message, start, min(self.pos, len(self._text) if line_end < 0 else line_end))
        if isinstance(op.location, UnknownLoc):
            line, col = line_col(self._text, start)
            op.location = FileLineColLoc(
                StringAttr(self._name), IntAttr(line + self._line_offset), IntAttr(col)
            )
        return op

    def _parse_block(self):
        # xDSL's parser fails with KeyError on some repeated block labels (a label used, then
        # defined twice)
        token = self._current_token
        try:
            return super()._parse_block()
        except KeyError:
            self.raise_error(f"block {token.text} is defined twice", token.span.start, token.span.end)

    def resolve_operand(self, operand, type):
        # Remember where each not-yet-defined name is first used, to point there if it
        # never gets defined.
        if operand.operand_name not in self.ssa_values:
            self._first_use.setdefault(operand.operand_name, operand.span)
        return super().resolve_operand(operand, type)

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        self._first_use = {}
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError as e:
            undefined = [n for n in self.forward_ssa_references if n in self._first_use]
            if e.msg.startswith("values used but not defined") and undefined:
                span = self._first_use[undefined[0]]
                names = ", ".join("%" + n for n in self.forward_ssa_references)
                self.raise_error(f"use of undefined value %{undefined[0]} (never defined: {names})", span.start, span.end)
            raise

    def _parse_dialect_type_or_attribute_body(self, attr_name, is_type, is_opaque, starting_opaque_pos):
        # A parametrized type that fails its verifier is reported where it was written.
        start = self.pos
        try:
            return super()._parse_dialect_type_or_attribute_body(
                attr_name, is_type, is_opaque, starting_opaque_pos
            )
        except VerifyException as e:
            self.raise_error(str(e), start, self.pos)


def verify_located(module: ModuleOp, sources: dict[str, str], after: str | None = None) -> None:
    """Verifies op by op so that a failure names the op and where it was written; `after`
    names the pass that produced the IR, if any."""
    problem = _dominance_problem(module)  # first: some verifiers crash on values used out of scope
    if problem is not None:
        op, message = problem
        if after is not None:
            message += f" (in the IR left by pass '{after}')"
        raise VerifyException(_located_message(op, message, sources))
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
            verify_op_facts(op)
        except DiagnosticException as e:
            cause = e.__cause__ if isinstance(e.__cause__, Exception) else e
            message = str(cause).removeprefix("Operation does not verify: ")
            if after is not None:
                message += f" (in the IR left by pass '{after}')"
            raise VerifyException(_located_message(op, message, sources)) from None
        except Exception as e:  # a verifier that crashes on malformed IR
            if os.environ.get("DIFFC_TRACEBACK"):
                raise
            message = f"cannot be verified ({type(e).__name__}: {e})"
            raise VerifyException(_located_message(op, message, sources)) from None


def _yield_problem(op: Operation) -> tuple[Operation, str] | None:
    """An scf region whose terminator passes other types than the op expects (xDSL's scf
    verifiers let an scf.if with results end in an empty implicit scf.yield)."""
    expected: list[tuple[Operation, list]] = []
    if isinstance(op, scf.IfOp):
        expected = [(r.block.last_op, list(op.result_types)) for r in op.regions if r.blocks]
    elif isinstance(op, scf.ForOp):
        expected = [(op.body.block.last_op, [a.type for a in op.iter_args])]
    elif isinstance(op, scf.WhileOp):
        cond = op.before_region.block.last_op
        expected = [(op.after_region.block.last_op, [a.type for a in op.before_region.block.args])]
        if isinstance(cond, scf.ConditionOp):
            expected.append((cond, list(op.result_types)))
    for term, types in expected:
        if term is None:
            continue
        got = [v.type for v in (term.args if isinstance(term, scf.ConditionOp) else term.operands)]
        if got != types:
            where = term if op_location(term) is not None else op  # (an implicit scf.yield has no place)
            return where, (f"'{term.name}' passes ({', '.join(map(str, got))}) where '{op.name}' expects "
                           f"({', '.join(map(str, types))})")
    return None


def _terminator_hint(op: Operation) -> str:
    return {"scf.if": "scf.yield", "scf.for": "scf.yield", "scf.while": "scf.condition / scf.yield",
            "func.func": "func.return"}.get(op.name, "a terminator op")


def _dominance_problem(module: ModuleOp) -> tuple[Operation, str] | None:
    """The first block without a terminator, or op that uses a value not defined above it in its
    block or an enclosing one (xDSL's verifier checks neither, and every pass assumes both). In the module body, a
    graph region, only the enclosing is checked; values flowing between blocks of one region
    (CFG dominance) are not checked."""
    position: dict[Operation, int] = {}
    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                for k, o in enumerate(block.ops):
                    position[o] = k
    for op in module.walk():
        graph = isinstance(op.parent_op(), ModuleOp)  # the module body is a graph region: any order
        for v in op.operands:
            name = f"%{v.name_hint}" if v.name_hint else "a value"
            if isinstance(v, OpResult):
                block, at = v.op.parent_block(), position.get(v.op, -1)
            elif isinstance(v, BlockArgument):
                block, at = v.block, -1
            else:
                return op, f"uses {name}, which is never defined"
            cur: Operation | None = op
            while cur is not None and cur.parent_block() is not block:
                if block is not None and cur.parent_region() is block.parent:
                    break  # another block of the defining region: not checked
                cur = cur.parent_op()
            if cur is None:
                return op, f"uses {name} outside the region that defines it"
            if cur.parent_block() is block and position.get(cur, -1) <= at and not graph:
                return op, f"uses {name} before its definition"
    for op in module.walk():
        if op.regions and not op.has_trait(NoTerminator) and not isinstance(op, UnregisteredOp):
            for region in op.regions:
                for block in region.blocks:
                    last = block.last_op
                    if last is None or not last.has_trait(IsTerminator):
                        where = last if last is not None else op
                        return where, f"ends a block of '{op.name}' without a terminator ({_terminator_hint(op)})"
            problem = _yield_problem(op)
            if problem is not None:
                return problem
    return None


def _located_message(op: Operation, message: str, sources: dict[str, str]) -> str:
    if not message.startswith(f"'{op.name}'"):
        message = f"'{op.name}' op {message}"
    loc = op_location(op)
    if loc is None:
        return format_diagnostic(None, message) + f"\n    in: {_short(op)}"
    return format_diagnostic(loc, message, source=sources.get(loc.file))


def _short(op: Operation) -> str:
    out = StringIO()
    try:
        Printer(stream=out).print_op(op.clone_without_regions() if op.regions else op)
    except Exception:  # some ops (builtin.module) cannot print without their region
        return op.name
    return out.getvalue().splitlines()[0]


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
    """Imports a Python file and returns every ModulePass subclass it defines."""
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
    if not passes:
        raise DiffcError(f"error: --load-pass-plugin: '{path}' defines no ModulePass subclass with a name")
    return passes


class _HeldOutput(StringIO):
    """Output kept in memory until the whole run succeeded: no half-written files."""

    def close(self) -> None:
        pass


class DiffcOptMain(xDSLOptMain):
    version_format = "diffc-opt (xdsl {xdsl_version})"

    def __init__(self, args: Sequence[str] | None = None):
        self.sources: dict[str, str] = {}
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

    # -- pipeline ----------------------------------------------------------------------------

    _chunk_offset = 0

    def setup_pipeline(self):
        for path in self.args.load_pass_plugin:
            for pass_type in load_pass_plugin(path):
                self.available_passes[pass_type.name] = lambda t=pass_type: t
        if self.args.pass_pipeline is not None:
            if self.args.passes:
                raise DiffcError("error: give either --pass-pipeline or -p/--passes, not both")
            self.args.passes = pipeline_from_mlir_syntax(self.args.pass_pipeline)
        check_pipeline(self.args.passes, self.available_passes)
        super().setup_pipeline()
        self.pipeline = PassPipeline(self.pipeline.passes, self._between_passes)

    _running: ModulePass | None = None

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
        if not self.args.disable_verify:
            verify_located(module, self.sources, previous.name if previous else None)
        if previous and following and self.args.print_between_passes:
            print(f"IR after {previous.name}:")
            Printer(stream=sys.stdout).print_op(module)
            print("\n\n\n")
        self._running = following

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


def parse_error_message(e: ParseError) -> str:
    loc = e.span.get_location()
    context = e.span.print_with_context("").splitlines()[1:]
    text = "\n".join("  " + line for line in context if line.strip())
    return f"{loc.file}:{loc.line}:{loc.col}: error: {e.msg}" + (f"\n{text}" if text else "")


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
