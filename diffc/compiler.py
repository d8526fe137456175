"""The compiler driver: one context, one IR parser, one pipeline definition.

diffc-opt, the `diffc` command, the runtime and the tests all build their context, parse IR and
run the differentiation pipeline through these functions, so a pass added to `AD_PIPELINE` is
added everywhere at once.

    module = parse_source(text, "f.mlir")      # or a .slang file, through registry.FRONTENDS
    differentiate(module)                      # AD_PIPELINE: no diff.* op or type is left
    lower_kernels(module, settings)            # the kernel pipeline: the same call for dispatch,
    program = kernel_program(module, settings, front)  # diffc run / compile and the caches
    emit_opencl(module, options)               # OpenCL C

The kernel passes run only in `lower_kernels` (entry points) and `lower_call_kernel` (the
element-wise kernels of calls over tensors), from one `KernelSettings` (diffc/pipeline.py).

Errors: `parse_ir` raises xDSL's ParseError, located (`parse_error_message` formats it);
`parse_source` raises DiffcError (the runtime's RuntimeDiffcError where it calls it); a pass
raises its PassFailedException (`name_failing_pass=True` wraps it as `pass 'p' failed: ...`,
keeping its location).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Operation
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import ParseError, PassFailedException, VerifyException

from diffc import registry
from diffc.diagnostics import DiffcError, failed_in_pass, line_col
from diffc.pipeline import (  # noqa: F401 (re-exported)
    AD_PIPELINE,
    AD_PIPELINE_SPEC,
    CALL_KERNEL_PIPELINE,
    KERNEL_PIPELINE,
    KernelBuild,
    KernelSettings,
    KernelStep,
)
from diffc.stages import stage
from diffc.verify import verify_located
from diffc.xdsl_adapter import HookedParser


# ---- context ----------------------------------------------------------------------------------


def make_context() -> Context:
    """Every xDSL dialect and every diffc one (registry.DIALECTS, plugins included), loaded
    lazily; arith carries the ops diffc adds to it (arith.remf)."""
    from xdsl.dialects import get_all_dialects

    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    for name, factory in registry.DIALECTS.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)
    return ctx


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's passes and diffc's (registry.PASSES, plugins included), by name."""
    from xdsl.transforms import get_all_passes

    return {**get_all_passes(), **registry.PASSES}


# ---- parsing ----------------------------------------------------------------------------------


class LocatingParser(HookedParser):
    """A parser that gives each operation the file:line:col it was read from, so that a
    verifier failure can point at the source."""

    def __init__(self, ctx: Context, text: str, name: str, line_offset: int = 0, locate: bool = True):
        super().__init__(ctx, text, name)
        self._text = text
        self._name = name
        self._line_offset = line_offset
        self._locate = locate

    def parse_operation(self) -> Operation:
        start = self.token_start()
        try:
            op = super().parse_operation()
        except (VerifyException, MemoryError) as e:  # an op whose constructor checks its types, or a huge constant
            line_end = self._text.find("\n", start)
            message = str(e) if isinstance(e, VerifyException) else "too large to build in memory"
            self.raise_error(message, start, min(self.pos, len(self._text) if line_end < 0 else line_end))
        if self._locate and isinstance(op.location, UnknownLoc):
            line, col = line_col(self._text, start)
            op.location = FileLineColLoc(
                StringAttr(self._name), IntAttr(line + self._line_offset), IntAttr(col)
            )
        return op

    def block_label_clash(self, token):
        # xDSL's parser fails with KeyError on some repeated block labels (a label used, then
        # defined twice)
        self.raise_error(f"block {token.text} is defined twice", token.span.start, token.span.end)

    def attribute_body_failed(self, error: Exception, start: int):
        # A parametrized type that fails its verifier is reported where it was written.
        self.raise_error(str(error), start, self.pos)

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


def parse_error_message(e: ParseError) -> str:
    loc = e.span.get_location()
    context = e.span.print_with_context("").splitlines()[1:]
    text = "\n".join("  " + line for line in context if line.strip())
    return f"{loc.file}:{loc.line}:{loc.col}: error: {e.msg}" + (f"\n{text}" if text else "")


def parse_ir(
    text: str, filename: str = "<string>.mlir", *, line_offset: int = 0, implicit_module: bool = True,
    ctx: Context | None = None, locate: bool = True,
) -> ModuleOp:
    """IR text -> module, every op located at file:line:col (unless `locate` is False: IR
    built by tests, whose messages then name no place). Not verified (see parse_source)."""
    parser = LocatingParser(ctx or make_context(), text, filename, line_offset, locate)
    return parser.parse_module(implicit_module)


def parse_source(text: str, filename: str, error: type[DiffcError] = DiffcError,
                 frontend_options: dict | None = None) -> ModuleOp:
    """IR text (.mlir) or, through `registry.FRONTENDS`, another language; verified. Failures
    are `error` (a DiffcError subclass) with a located message. `frontend_options`: keyword
    arguments for the front end (the Slang one's `conformance_ids`)."""
    ext = Path(filename).suffix.lstrip(".")
    registry.load_installed_plugins()
    if ext in registry.FRONTENDS:
        with stage(f"reading {Path(filename).name}"):
            module = registry.FRONTENDS[ext]()(text, filename, **(frontend_options or {}))
    elif ext in ("mlir", ""):
        if frontend_options:
            raise error(f"error: '{filename}' is IR text: front-end options ({', '.join(frontend_options)}) do not "
                        "apply to it")
        try:
            module = parse_ir(text, filename)
        except ParseError as e:  # xDSL's own type: the caller's, with the located message
            raise error(parse_error_message(e)) from None
    else:
        known = ", ".join(sorted({"mlir", *registry.FRONTENDS}))
        raise error(f"error: cannot load '{filename}': unknown extension '.{ext}' (known: {known})")
    try:
        verify_located(module, {filename: text})
    except VerifyException as e:
        raise error(str(e)) from None
    return module


# ---- pipelines --------------------------------------------------------------------------------


def build_pipeline(
    spec: str | Sequence[str] = AD_PIPELINE_SPEC,
    callback: Callable[[ModulePass | None, ModuleOp, ModulePass | None], None] | None = None,
) -> PassPipeline:
    """The passes of `spec` (xDSL's pipeline syntax, or a sequence of pass names)."""
    if not isinstance(spec, str):
        spec = ",".join(spec)
    passes = PassPipeline.parse_spec(available_passes(), spec).passes
    return PassPipeline(passes, callback) if callback is not None else PassPipeline(passes)


def apply_pass(p: ModulePass, module: ModuleOp, ctx: Context | None = None, *, name_failing_pass: bool = True) -> None:
    """Runs one pass; with `name_failing_pass` its failure says `pass 'p' failed: ...` (and keeps
    the location of the op at fault)."""
    try:
        p.apply(ctx or make_context(), module)
    except PassFailedException as e:
        if not name_failing_pass:
            raise
        raise failed_in_pass(p.name, e) from None


def apply_pipeline(
    module: ModuleOp, spec: str | Sequence[str] = AD_PIPELINE_SPEC, ctx: Context | None = None,
    *, name_failing_pass: bool = False,
) -> None:
    ctx = ctx or make_context()
    with fewer_collections():
        for p in build_pipeline(spec).passes:
            apply_pass(p, module, ctx, name_failing_pass=name_failing_pass)


def differentiate(module: ModuleOp, ctx: Context | None = None) -> None:
    """AD_PIPELINE over `module`: afterwards no `diff.*` op or type remains."""
    apply_pipeline(module, AD_PIPELINE_SPEC, ctx)


def lower_entry_points(module: ModuleOp, entry: str | None = None, *, reduce_atomics: bool,
                       ctx: Context | None = None, name_failing_pass: bool = False) -> None:
    """Compute entry points (all, or `entry`) -> kernels; then reduce-atomics if asked. (Tests of
    those two passes; programs are lowered by `lower_kernels`.)"""
    from diffc.passes.lower_entry_points import LowerEntryPointsPass

    ctx = ctx or make_context()
    lep = LowerEntryPointsPass(entry=entry) if entry is not None else LowerEntryPointsPass()
    apply_pass(lep, module, ctx, name_failing_pass=name_failing_pass)
    if reduce_atomics:
        from diffc.passes.reduce_atomics import ReduceAtomicsPass

        apply_pass(ReduceAtomicsPass(), module, ctx, name_failing_pass=name_failing_pass)


# ---- the kernel pipeline ----------------------------------------------------------------------


_quiet_depth = 0


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Python's cycle collector held back while passes run: they make and drop hundreds of
    thousands of ops (each a cycle with its results and its block), and each time the young
    objects outnumber the old by a quarter the collector scans every object of the process, the
    module's included (a quarter of the 10,000-op function's pipelines). The objects alive
    before are frozen out of those scans and the youngest generation collects 50,000 allocations
    at a time instead of 700; the module's garbage is still collected, by the next scans."""
    global _quiet_depth
    if _quiet_depth or not gc.isenabled():
        yield
        return
    threshold = gc.get_threshold()
    _quiet_depth += 1
    gc.freeze()
    gc.set_threshold(max(threshold[0], 50_000), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
        _quiet_depth -= 1


def primal_functions(module: ModuleOp) -> set[str]:
    """Before the differentiation pipeline: the names of `module`'s functions that are not custom
    derivatives (the pipeline drops the attributes that name those)."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import SymbolRefAttr

    from diffc.dialects.diff import BWD_DERIVATIVE, FWD_DERIVATIVE

    names, custom = set(), set()
    for f in module.walk():
        if isinstance(f, func.FuncOp):
            names.add(f.sym_name.data)
            for key in (FWD_DERIVATIVE, BWD_DERIVATIVE):
                target = f.attributes.get(key)
                if isinstance(target, SymbolRefAttr):
                    custom.add(target.root_reference.data)
    return names - custom


def derivative_functions(module: ModuleOp, primal: set[str]) -> tuple[str, ...]:
    """The functions of the differentiated `module` that hold derivative code (those the pipeline
    made, and custom derivatives); `primal`: primal_functions before the pipeline."""
    from xdsl.dialects import func

    return tuple(sorted(f.sym_name.data for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data not in primal))


def run_kernel_steps(module: ModuleOp, steps: Sequence[KernelStep], settings: KernelSettings, build: KernelBuild,
                     ctx: Context | None = None, *, name_failing_pass: bool = False) -> None:
    """The steps of a kernel pipeline that `settings` turn on, each with its options."""
    ctx = ctx or make_context()
    passes = available_passes()
    for step in steps:
        if step.when is not None and not getattr(settings, step.when):
            continue
        options = step.options(settings, build)
        if options is None:
            continue
        with stage(f"kernel pass {step.name}"), fewer_collections():
            apply_pass(passes[step.name]()(**options), module, ctx, name_failing_pass=name_failing_pass)


def lower_kernels(module: ModuleOp, settings: KernelSettings, *, entry: str | None = None, ctx: Context | None = None,
                  name_failing_pass: bool = False, report: bool = False) -> None:
    """The kernel pipeline, in place: differentiates the front end's `module` (AD_PIPELINE) and
    lowers its compute entry points (or only `entry`, which may be a plain function such as
    `main`) into kernels with KERNEL_PIPELINE under `settings`; verified when DIFFC_VERIFY=1.
    Dispatch, `diffc run`, `diffc compile` and the benches lower through here, so they build the
    same kernels. `report`: passes that can say what they did print it (accumulate-gradients,
    `diffc compile --report`)."""
    ctx = ctx or make_context()
    primal = primal_functions(module)
    with fewer_collections():
        with stage("differentiating"):
            apply_pipeline(module, AD_PIPELINE_SPEC, ctx, name_failing_pass=name_failing_pass)
        build = KernelBuild(entry, derivative_functions(module, primal), report)
        run_kernel_steps(module, KERNEL_PIPELINE, settings, build, ctx, name_failing_pass=name_failing_pass)
    if os.environ.get("DIFFC_VERIFY", "").strip() not in ("", "0"):
        # xDSL's verifier over the lowered module costs a third of the kernel pipeline (the
        # MLP's learnGradient: 20,000 ops); the passes' own tests run with it (tests/conftest.py)
        with stage("verifying the kernels"):
            module.verify()


def lower_call_kernel(module: ModuleOp, settings: KernelSettings, primal: set[str], ctx: Context | None = None):
    """The element-wise kernel of a call over tensors (runtime/kernels.py built it, then
    `differentiate`d it; `primal`: primal_functions before that), in place: CALL_KERNEL_PIPELINE,
    then its status globals become its trailing parameters. Returns the StatusSlots of those
    parameters in order, or None when it has none (or has other globals, which such kernels
    cannot take)."""
    from xdsl.dialects import func, memref

    from diffc.dialects.kernel import is_kernel
    from diffc.kernel_program import status_slots
    from diffc.passes.lower_entry_points import thread_global_buffers

    run_kernel_steps(module, CALL_KERNEL_PIPELINE, settings, KernelBuild(None, derivative_functions(module, primal)), ctx)
    globals_ = [g for g in module.ops if isinstance(g, memref.GlobalOp)]
    slots = {s.name: s for s in status_slots(module)}
    if not slots or len(globals_) != len(slots):
        return None
    threaded = thread_global_buffers(module)
    kernel = next(f for f in module.ops if isinstance(f, func.FuncOp) and is_kernel(f))
    names = threaded.get(kernel.sym_name.data, [])
    return [slots[n] for n in names] if names else None


def emit_options(settings: KernelSettings):
    """The OpenCL emitter's options of `settings`."""
    from diffc.backend.opencl.options import EmitOptions

    return EmitOptions(atomics=settings.atomics, index_type=settings.index_type, unroll=settings.unroll,
                       reassociate=settings.reassociate)


def kernel_program(low: ModuleOp, settings: KernelSettings, front: ModuleOp, entry: str | None = None):
    """A KernelProgram (diffc/kernel_program.py) of `low`, which `lower_kernels(.., entry=entry)`
    lowered from the front end's `front`: its OpenCL C, build options and what binds its kernels.
    No pass runs here."""
    from diffc.backend.opencl import build_options
    from diffc.backend.opencl.module import ModuleEmitter
    from diffc.kernel_program import read_program

    options = emit_options(settings)
    emitter = ModuleEmitter(low, options)
    with stage("emitting OpenCL"):
        source = emitter.emit()
    return read_program(low, front, source, emitter.names, settings, tuple(build_options(options)), entry)


def emit_opencl(module: ModuleOp, options=None) -> str:
    """OpenCL C of a lowered module (see diffc.backend.opencl)."""
    from diffc.backend.opencl import emit_opencl as emit
    from diffc.backend.opencl.options import EmitOptions

    with fewer_collections():
        return emit(module, options if options is not None else EmitOptions())
