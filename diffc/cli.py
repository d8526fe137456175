"""The `diffc` command.

    diffc compile FILE.slang --emit mlir|lowered|opencl|cuda    each stage of the compiler; `lowered` and
                                                             `opencl` are what a dispatch builds (`cuda`: the same kernels as CUDA C)
                                                             (--device, --check, --set FIELD=VALUE);
                                                             a module without entry point: its functions
    diffc run FILE.slang [--device cpu|gpu|auto] [--entry computeMain] [--groups X,Y,Z]
    diffc suite DIR [-j N]                                   run a folder of Slang tests (diffc.conformance)
    diffc check FILE.slang [--domain LO,HI] [--samples N] [--tol T] [--function F] [--device]
                                                             derivatives against finite differences (diffc.gradcheck)
    diffc demo | version | --version | --help

`--device` overrides DIFFC_DEVICE (gpu|cpu|auto, default auto).

`run` allocates every buffer a Slang test annotation declares, binds it to the global buffer of
that name, dispatches [numthreads] x groups work-items and prints every `out` buffer: its name and
element type (`outputBuffer: float`), then one value per line; `--slang-output` prints Slang's
test runner's unnamed `type: float` instead, and `--slang-data` reads `data=[...]` as that
runner does (each element a 32-bit word: an integer literal its bits); docs/test-input.md
describes the format. A file without a compute entry point but with a parameterless
`void main()` / `printMain()` runs that as one work-item, its printf output going to stdout. Errors print located diagnostics and exit 1, without a traceback.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from diffc.diagnostics import DiffcError, SourceLocation, format_diagnostic, read_source, render_error

PRINT_ENTRIES = ("printMain", "main")
DEFAULT_ENTRY = "computeMain"
MAX_GROUPS = 2**31 - 1  # per dimension: OpenCL's sizes are size_t, pyopencl's casts fail far above


def _frontend(path: str, conformance: Sequence[str] = ()):
    """(module, text) of a file; a Slang file's dynamic interface values take the conformance ids
    of its `//TEST_INPUT: type_conformance` lines and of `--conformance` (`conformance`)."""
    from diffc.cli_run import conformance_ids, merge_conformance_options
    from diffc.compiler import parse_source

    p = Path(path)
    if not p.is_file():
        raise DiffcError(f"error: no such file '{path}'")
    text = read_source(p)
    options = {}
    if p.suffix == ".slang":
        options["conformance_ids"] = merge_conformance_options(conformance_ids(text, str(p)), list(conformance))
    elif conformance:
        raise DiffcError(f"error: --conformance applies to .slang files, not '{path}'")
    return parse_source(text, str(p), frontend_options=options), text


def _at_function(fn, message: str) -> str:
    """`message` as a diagnostic at the function's declaration (where the front end put it)."""
    from xdsl.dialects.builtin import FileLineColLoc

    loc = fn.location
    if not isinstance(loc, FileLineColLoc):
        return f"error: {message}"
    where = SourceLocation(loc.filename.data, loc.line.data, loc.column.data)
    try:
        source = read_source(Path(where.file))
    except (OSError, DiffcError):
        source = None
    return format_diagnostic(where, message, None, source)


def choose_entry(module, wanted: str | None, path: str | None = None):
    """The entry function: --entry, else the only compute shader (computeMain among several),
    else printMain/main. `path`: the file, which an error about it names."""
    from xdsl.dialects import func

    from diffc.kernel_program import is_compute_entry

    funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}
    shaders = [n for n, f in funcs.items() if is_compute_entry(f)]
    if wanted is not None:
        if wanted not in funcs:
            raise DiffcError(
                f"error: unknown entry point '{wanted}' (compute entry points: {', '.join(shaders) or 'none'}; "
                f"functions: {', '.join(funcs) or 'none'})"
            )
        return funcs[wanted]
    if len(shaders) == 1:
        return funcs[shaders[0]]
    if DEFAULT_ENTRY in shaders:  # Slang's default entry name
        return funcs[DEFAULT_ENTRY]
    if len(shaders) > 1:
        raise DiffcError(_at_function(funcs[shaders[1]], f"several compute entry points ({', '.join(shaders)}); "
                                                         "choose one with --entry"))
    for name in PRINT_ENTRIES:
        f = funcs.get(name)
        if f is not None and not f.function_type.inputs.data and not f.function_type.outputs.data:
            return f
    message = ("no entry point: the file has no [shader(\"compute\")] function and no parameterless "
               "void main() or printMain()")
    # (a whole-file fact: it is named at the file's start)
    raise DiffcError(format_diagnostic(SourceLocation(path, 1, 1), message) if path else f"error: {message}")


class Lowered(NamedTuple):
    module: object  # the lowered module: the entry point and what it calls, as kernels
    entry: str
    numthreads: tuple[int, int, int]
    text: str  # the source file's text
    front: object  # the front end's module
    settings: object  # the KernelSettings it was lowered under
    keep: object = None  # (KernelProgram, work-group bytes) -> None: diffc run's module cache entry


class CachedRun:
    """A `diffc run` of an unchanged file from the module cache (runtime/module_cache.py's
    RunPlan): what run_kernel needs, without the IR. `module` and `front` (the Lowered's) are
    made, by compiling the file again, only where an error must point into them."""

    keep = None

    def __init__(self, plan, text: str, settings, remake):
        self.plan, self.text, self.settings = plan, text, settings
        self.entry, self.numthreads = plan.entry, plan.numthreads
        self._remake = remake
        self._made = None

    def _lowered(self) -> Lowered:
        if self._made is None:
            from diffc.diagnostics import recording_warnings

            with recording_warnings(echo=False):  # (printed already, from the plan)
                self._made = self._remake()
        return self._made

    @property
    def module(self):
        return self._lowered().module

    @property
    def front(self):
        return self._lowered().front


def settings_for(device: str | None, check: bool = False, changes: Sequence[str] = ()):
    """The kernel settings of `diffc compile` / `diffc run`: a dispatch's on the device `device`
    names (cpu, gpu, auto; None: no device, portable atomics), with the sanitizer mode if
    `check`, then `--set FIELD=VALUE` changes."""
    from diffc.kernel_settings import for_device

    cl_device = None
    if device is not None:
        os.environ["DIFFC_DEVICE"] = device
        from diffc.runtime.device import device as current

        cl_device = current().cl_device
    return for_device(cl_device, sanitize=check, **_setting_changes(changes))


def _setting_changes(changes: Sequence[str]) -> dict:
    from dataclasses import fields

    from diffc.pipeline import KernelSettings

    kinds = {f.name: type(getattr(KernelSettings(), f.name)) for f in fields(KernelSettings)}
    out: dict = {}
    for text in changes:
        name, eq, value = text.partition("=")
        name, value = name.strip().replace("-", "_"), value.strip()
        kind = kinds.get(name)
        if not eq or kind is None:
            raise DiffcError(f"error: --set {text}: expected FIELD=VALUE with FIELD one of {', '.join(kinds)}")
        if kind is bool and value in ("0", "1", "true", "false"):
            out[name] = value in ("1", "true")
        elif kind is int and value.isdigit():
            out[name] = int(value)
        elif kind is str and value:
            out[name] = value
        else:
            raise DiffcError(f"error: --set {text}: {name} takes {'0 or 1' if kind is bool else kind.__name__}")
    return out


def lowered(path: str, entry: str | None = None, grow: list | None = None, check: bool = False,
            conformance: Sequence[str] = (), settings=None, report: bool = False, parsed=None) -> Lowered:
    """The file's entry point lowered by the kernel pipeline (diffc.compiler.lower_kernels) as a
    dispatch lowers it. `grow`: (StatusSlot, count) of loops whose [MaxIters] a rerun raises
    (--grow-tape); `check`: the sanitizer mode (runtime/sanitize.py); `conformance`:
    --conformance options; `settings`: the KernelSettings, or what makes them (default: no
    device's, settings_for);
    `report`: passes print what they did (--report); `parsed`: the front end's (module, text)
    of the file, where the caller has it."""
    from diffc.compiler import lower_kernels
    from diffc.kernel_program import numthreads

    module, text = parsed if parsed is not None else _frontend(path, conformance)
    if grow:
        from diffc.kernel_program import grow_max_iters

        for slot, count in grow:
            grow_max_iters(module, slot, count)
    fn = choose_entry(module, entry, path)
    name = fn.sym_name.data
    if settings is None:
        settings = settings_for(None, check)
    elif callable(settings):  # (a device's: opened once the file has read well)
        settings = settings()
    low = module.clone()
    lower_kernels(low, settings, entry=name, name_failing_pass=True, report=report)
    return Lowered(low, name, numthreads(fn), text, module, settings)


def has_entry(module) -> bool:
    """Whether `choose_entry` finds an entry point without --entry."""
    try:
        choose_entry(module, None)
    except DiffcError:
        return False
    return True


def _has_functions(module) -> bool:
    from xdsl.dialects import func

    return any(isinstance(op, func.FuncOp) and op.body.blocks for op in module.ops)


def cmd_compile(args) -> int:
    _setting_changes(args.set)  # (a bad --set before any work)
    parsed = _frontend(args.file, args.conformance)
    if args.emit == "mlir" and not args.report:
        print(parsed[0])
        return 0
    if args.entry is None and not has_entry(parsed[0]) and _has_functions(parsed[0]):
        return _compile_library(parsed[0], args)  # (a file of no function at all: no entry point is the error)
    got = lowered(args.file, args.entry, conformance=args.conformance, report=args.report, parsed=parsed,
                  settings=lambda: settings_for(args.device, args.check, args.set))
    if args.report:  # what accumulate-gradients did with each kernel
        return 0
    if args.emit == "lowered":
        print(got.module)
        return 0
    if args.emit == "cuda":  # the same kernels as CUDA C (what runtime/cuda_kernels.py builds with NVRTC)
        from diffc.backend.opencl import emit_cuda
        from diffc.compiler import emit_options

        sys.stdout.write(emit_cuda(got.module, emit_options(got.settings)))
        return 0
    from diffc.compiler import kernel_program

    sys.stdout.write(kernel_program(got.module, got.settings, got.front, got.entry).source)
    return 0


def _compile_library(module, args) -> int:
    """A module with no entry point (a library that calls over tensors use, as
    examples/poly.slang): its functions after the differentiation passes, as IR or OpenCL C.
    (Calls build their element-wise kernels around these when they run.)"""
    from diffc.compiler import differentiate, emit_opencl

    print(f"note: {args.file} has no entry point (no [shader(\"compute\")] function, no parameterless "
          f"void main()): showing its functions after the differentiation passes", file=sys.stderr)
    if args.report:
        return 0
    differentiate(module)
    if args.emit == "lowered":
        print(module)
    elif args.emit == "cuda":
        from diffc.backend.opencl import emit_cuda

        sys.stdout.write(emit_cuda(module))
    else:
        sys.stdout.write(emit_opencl(module))
    return 0


def _groups(text: str) -> tuple[int, int, int]:
    try:
        vals = [int(x) for x in text.split(",")]
    except ValueError:
        vals = []
    if not 1 <= len(vals) <= 3 or any(not 1 <= v <= MAX_GROUPS for v in vals):
        raise DiffcError(f"error: --groups must be 1 to 3 integers from 1 to {MAX_GROUPS} like 4,1,1; got '{text}'")
    return tuple((vals + [1, 1])[:3])  # type: ignore[return-value]


class _PrintfOutput:
    """Holds what the kernel's printf writes to the process's stdout (file descriptor 1, where
    OpenCL's printf writes) until `close`, which writes it out unless `discard`ed before."""

    def __init__(self):
        import tempfile

        sys.stdout.flush()
        self.file = tempfile.TemporaryFile()
        self.saved = os.dup(1)
        os.dup2(self.file.fileno(), 1)
        self.keep = True

    def discard(self) -> None:
        self.keep = False

    def close(self) -> None:
        from diffc.cli_run import _flush_c_stdout

        _flush_c_stdout()
        sys.stdout.flush()
        os.dup2(self.saved, 1)
        os.close(self.saved)
        if self.keep:
            self.file.seek(0)
            sys.stdout.buffer.write(self.file.read())
            sys.stdout.flush()
        self.file.close()


def cmd_run(args) -> int:
    from diffc.cli_run import parse_test_inputs

    groups = _groups(args.groups)
    _setting_changes(args.set)
    from diffc.cli_run import run_kernel
    from diffc.runtime.sanitize import enabled_by_default
    from diffc.runtime.status import MAX_GROWS, LoopOverrunError

    grow: list = []
    settings = []  # (made once, after the front end: the device is opened for them)

    def made_settings():
        if not settings:
            settings.append(settings_for(args.device or os.environ.get("DIFFC_DEVICE", "auto"),
                                         args.check or enabled_by_default(), args.set))
        return settings[0]

    while True:
        got = None if grow else _cached_run(args, made_settings)
        if got is None:
            got = _compiled_run(args, grow, made_settings)
        buffers = parse_test_inputs(got.text, args.file, slang_words=args.slang_data)
        printed = _PrintfOutput() if args.grow_tape else None  # (a rerun's printfs replace the run's before)
        try:
            outputs = run_kernel(got, groups, buffers, args.file)
            break
        except LoopOverrunError as e:  # --grow-tape: run again from the initial buffers
            if not args.grow_tape or len(grow) >= MAX_GROWS:
                raise
            grow.append((e.slot, e.count))
            if printed is not None:
                printed.discard()
        finally:
            if printed is not None:
                printed.close()
    for buf, values in outputs:
        # each block named by its buffer; --slang-output: Slang's runner's unnamed `type:` blocks
        print(f"type: {buf.type_name}" if args.slang_output else f"{buf.name}: {buf.type_name}")
        for v in values:
            print(buf.format(v))
    sys.stdout.flush()
    return 0


def _run_key(args) -> tuple[str | None, str | None]:
    """The first key of `diffc run`'s module cache entries for this file (runtime/module_cache.py)
    and the file's text; (None, None) when the cache is off or the file cannot be read (the
    compile says why)."""
    from diffc.runtime import module_cache

    p = Path(args.file)
    if not p.is_file():
        return None, None
    try:
        text = read_source(p)
    except DiffcError:
        return None, None
    verify = os.environ.get("DIFFC_VERIFY", "").strip()  # (a pipeline that verifies can fail where one did not)
    # (--groups and --slang-data too: with the buffers' lengths, they choose the form of the kernel
    # the program holds, cli_run.run_kernel)
    options = (args.entry, tuple(args.conformance), verify, args.groups, args.slang_data)
    return module_cache.run_key(args.file, text, options), text


def _cached_run(args, made_settings) -> CachedRun | None:
    """The run of an unchanged file from the module cache, else None (nothing compiled)."""
    from diffc.runtime import module_cache

    first, text = _run_key(args)
    read_before = module_cache.load_dependencies(first)
    if read_before is None:
        return None
    settings = made_settings()
    key = module_cache.with_dependencies(first, read_before)
    plan = module_cache.load_run_plan(module_cache.kernel_key(key, "diffc run", settings))
    if plan is None:
        return None
    for warning in plan.warnings:
        print(warning, file=sys.stderr)
    return CachedRun(plan, text, settings,
                     lambda: lowered(args.file, args.entry, conformance=args.conformance, settings=settings))


def _compiled_run(args, grow: list, made_settings) -> Lowered:
    """The file compiled for the run; without `grow`, its KernelProgram, once built, goes into
    the module cache under the files the front end read."""
    from diffc.diagnostics import recording_warnings
    from diffc.frontend.source import files_read
    from diffc.runtime import module_cache

    if grow:
        return lowered(args.file, args.entry, grow, conformance=args.conformance, settings=made_settings)
    first, _ = _run_key(args)
    with files_read.recording() as read, recording_warnings() as warnings:
        got = lowered(args.file, args.entry, conformance=args.conformance, settings=made_settings)
    own = os.path.abspath(args.file)  # (already in the first key)
    read = {p: h for p, h in read.items() if p != own}

    def keep(program, work_group_bytes):
        key = module_cache.with_dependencies(first, read)
        from diffc.cli_run import byte_address_buffers

        plan = module_cache.RunPlan(got.entry, tuple(got.numthreads), program, dict(work_group_bytes), tuple(warnings),
                                    byte_address_buffers(got.front))
        module_cache.store_dependencies(first, read)
        module_cache.store_run_plan(module_cache.kernel_key(key, "diffc run", got.settings), plan)

    return got._replace(keep=keep)


# how a process killed by SIGPIPE exits, as `diffc compile x.slang | head -1` expects
EXIT_BROKEN_PIPE = 128 + 13
EXIT_INTERRUPTED = 128 + 2  # as a shell reports a process that SIGINT ended


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; a reader that closes the pipe early (`| head`) ends it quietly."""
    try:
        code = _unread_launch_errors(_main(argv))
        sys.stdout.flush()  # here, not at exit, where a closed pipe would print a traceback
        return code
    except BrokenPipeError:
        # later flushes (at interpreter exit) must not fail again: stdout goes nowhere now
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        # Ctrl-C, also while waiting for the device (runtime/waiting.py). A kernel still running
        # cannot be stopped, and the OpenCL library would wait for it at a normal exit: leave now.
        print("error: interrupted (Ctrl-C); nothing more was written", file=sys.stderr)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(EXIT_INTERRUPTED)


def _unread_launch_errors(code: int) -> int:
    """A launch's error that nothing raised (runtime/pending.py) is printed now, and the command
    fails: this process is diffc's own."""
    pending = sys.modules.get("diffc.runtime.pending")  # (not imported: nothing was launched)
    if pending is not None:
        sys.stdout.flush()
        if pending.report_unread():
            return code or 1
    return code


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """The command line's parser (made once: `diffc suite`'s workers parse a command per file)."""
    from diffc import __version__

    parser = argparse.ArgumentParser(prog="diffc", description="Slang-style automatic differentiation to OpenCL")
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("version", help="print the version")
    sub.add_parser("demo", help="differentiate a few functions and run them on the default device")
    c = sub.add_parser("compile", help="show a stage of compiling a .slang file")
    c.add_argument("file")
    c.add_argument("--emit", choices=("mlir", "lowered", "opencl", "cuda"), default="opencl")
    c.add_argument("--entry", default=None, help="the entry point (default: the only compute shader, or main)")
    c.add_argument("--device", choices=("cpu", "gpu", "auto"), default=None,
                   help="build what a dispatch on this device builds: its atomics, unrolling and group sizes "
                        "(default: no device: portable cmpxchg atomics, a GPU's group sizes)")
    c.add_argument("--report", action="store_true",
                   help="say whether accumulate-gradients rewrites the entry point's gradient adds, or why not")
    c.add_argument("--check", action="store_true", help="the sanitizer mode's kernels (as DIFFC_CHECK=1 builds)")
    set_help = ("change a kernel setting (diffc/pipeline.py's KernelSettings, e.g. bounds_check=0, accumulate=0, "
                "atomics=ext); repeatable. DIFFC_* variables change them too, as for a dispatch")
    c.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help=set_help)
    conformance_help = ("STRUCT:INTERFACE=ID: a dynamic INTERFACE value holding a STRUCT has tag ID (Slang's type "
                        "conformance id; also from the file's //TEST_INPUT: type_conformance lines); repeatable")
    c.add_argument("--conformance", action="append", default=[], metavar="STRUCT:INTERFACE=ID", help=conformance_help)
    r = sub.add_parser("run", help="compile and run an entry point, print its out buffers")
    # (check and suite read their own options, above: listed here for --help; `diffc check -h`)
    sub.add_parser("check", help="check a module's derivatives against finite differences (diffc check -h)",
                   add_help=False)
    sub.add_parser("suite", help="run a folder of Slang tests as Slang's test runner does (diffc suite -h)",
                   add_help=False)
    r.add_argument("--conformance", action="append", default=[], metavar="STRUCT:INTERFACE=ID", help=conformance_help)
    r.add_argument("file")
    r.add_argument("--device", choices=("cpu", "gpu", "auto"), default=None,
                   help="the OpenCL device (default: $DIFFC_DEVICE, else auto)")
    r.add_argument("--entry", default=None)
    r.add_argument("--groups", default="1,1,1", help="work-groups X,Y,Z (default 1,1,1)")
    r.add_argument("--grow-tape", action="store_true",
                   help="a while loop that overruns its [MaxIters] in a backward pass: run again with a larger "
                        "bound (max(count, 2 x bound)) instead of failing")
    r.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help=set_help)
    r.add_argument("--slang-output", action="store_true",
                   help="print each out buffer as Slang's test runner does ('type: float', then its values) "
                        "instead of under its name ('outputBuffer: float'); diffc suite compares this")
    r.add_argument("--slang-data", action="store_true",
                   help="read //TEST_INPUT data as Slang's test runner does: each element one 32-bit word, an "
                        "integer literal its bits (data=[2] in a float buffer is the float whose bits are 2), "
                        "other numbers a float32's bits; diffc suite reads data so")
    r.add_argument("--check", action="store_true",
                   help="sanitizer mode (also DIFFC_CHECK=1): derivative code that makes a NaN or an infinity "
                        "is an error naming the op's source line")
    return parser


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["suite"]:
        from diffc import conformance

        return conformance.main(argv[1:], run=lambda args: main(["run", *args]))
    if argv[:1] == ["check"]:
        from diffc import gradcheck_cli

        return gradcheck_cli.main(argv[1:])
    from diffc import __version__

    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "version":
            print(__version__)
            return 0
        if args.command == "demo":
            try:
                from diffc import demo
            except ModuleNotFoundError as e:
                if e.name != "diffc.demo":
                    raise
                raise DiffcError("error: this diffc has no demo (diffc/demo.py is missing)") from None
            return int(demo.main() or 0)
        if args.command == "compile":
            return cmd_compile(args)
        return cmd_run(args)
    except DiffcError as e:  # located ones (the OpenCL emitter's) show their source line
        sys.stdout.flush()
        print(render_error(e), file=sys.stderr)
        return 1
    except RecursionError:
        if os.environ.get("DIFFC_TRACEBACK"):
            raise
        sys.stdout.flush()
        print(f"error: {getattr(args, 'file', 'diffc')}: the program is nested too deeply for diffc (Python's recursion limit)",
              file=sys.stderr)
        return 1
    except Exception as e:  # xDSL's VerifyException / PassFailedException and the like
        from xdsl.utils.exceptions import DiagnosticException, PassFailedException, VerifyException

        if isinstance(e, DiagnosticException | PassFailedException | VerifyException) and not os.environ.get(
            "DIFFC_TRACEBACK"
        ):
            sys.stdout.flush()
            print(render_error(e), file=sys.stderr)  # a pass's error at an op: its source line
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
