"""What `diffc run` needs beyond compiling: Slang test annotations and one kernel launch.

Annotations (one per line, anywhere in the file):

    //TEST_INPUT:ubuffer(data=[1 2 3 4], stride=4):out,name=gradBuffer
    //TEST_INPUT: set gradBuffer = out ubuffer(data=[0 0 0 0], stride=4)

`data` lists the initial elements (spaces or commas between them); `count=N` pads with zeros
(or sets the size of a buffer without data). `out` marks buffers printed after the run.

A buffer binds to the entry point's global buffer of that name, or to a pointer parameter of
that name (whose offset is then 0). Scalar parameters have no annotation here: they are a
located error (dispatch such entry points from Python: `m.entry.dispatch(...)`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from diffc.diagnostics import DiffcError, SourceLocation, format_diagnostic

_OLD = re.compile(r"^ubuffer\((?P<opts>[^)]*)\)\s*(?::(?P<flags>.*))?$")
_NEW = re.compile(r"^set\s+(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<out>out\s+)?ubuffer\((?P<opts>[^)]*)\)\s*$")


@dataclass
class TestBuffer:
    name: str
    data: list[str]
    count: int | None
    out: bool
    where: SourceLocation
    line: str
    type_name: str = "float"

    def format(self, v) -> str:
        if self.type_name in ("float", "double", "half"):
            return f"{float(v):f}"
        return str(int(v))


def _error(where: SourceLocation, line: str, message: str) -> DiffcError:
    source = "\n" * (where.line - 1) + line  # the annotation's line at its place
    return DiffcError(format_diagnostic(where, message, "test-input", source))


def _options(text: str, where, line) -> tuple[list[str], int | None]:
    data: list[str] = []
    count = None
    rest = text
    m = re.search(r"data\s*=\s*\[([^\]]*)\]", rest)
    if m:
        data = [x for x in re.split(r"[\s,]+", m.group(1).strip()) if x]
        rest = rest[: m.start()] + rest[m.end():]
    for part in (p.strip() for p in rest.split(",")):
        if not part:
            continue
        key, _, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if key == "stride":
            if value != "4":
                raise _error(where, line, f"TEST_INPUT: only stride=4 (32-bit elements) is supported, got stride={value}")
        elif key == "count" and value.isdigit():
            count = int(value)
        else:
            raise _error(where, line, f"TEST_INPUT: unknown ubuffer option '{part}' (known: data=[...], stride=4, count=N)")
    return data, count


def parse_test_inputs(text: str, filename: str) -> list[TestBuffer]:
    """Every `//TEST_INPUT` ubuffer of the file; a malformed one is a located error."""
    buffers: list[TestBuffer] = []
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if not stripped.startswith("//TEST_INPUT"):
            continue
        col = len(line) - len(stripped) + 1
        where = SourceLocation(filename, n, col)
        body = stripped[len("//TEST_INPUT"):].lstrip(":").strip()
        m = _NEW.match(body)
        if m:
            data, count = _options(m.group("opts"), where, line)
            buffers.append(TestBuffer(m.group("name"), data, count, bool(m.group("out")), where, line))
            continue
        m = _OLD.match(body)
        if m:
            data, count = _options(m.group("opts"), where, line)
            flags = [f.strip() for f in (m.group("flags") or "").split(",") if f.strip()]
            name = next((f.split("=", 1)[1].strip() for f in flags if f.startswith("name=")), None)
            if not name:
                raise _error(where, line, "TEST_INPUT: the ubuffer has no name=NAME to bind it to a buffer")
            unknown = [f for f in flags if f != "out" and not f.startswith("name=")]
            if unknown:
                raise _error(where, line, f"TEST_INPUT: unknown flag '{unknown[0]}' (known: out, name=NAME)")
            buffers.append(TestBuffer(name, data, count, "out" in flags, where, line))
            continue
        raise _error(
            where, line,
            "TEST_INPUT: cannot read this annotation; expected 'ubuffer(data=[...], stride=4):out,name=NAME' "
            "or 'set NAME = out ubuffer(data=[...], stride=4)'",
        )
    seen: dict[str, TestBuffer] = {}
    for b in buffers:
        if b.name in seen:
            raise _error(b.where, b.line, f"TEST_INPUT: buffer '{b.name}' is declared twice")
        seen[b.name] = b
    return buffers


def _dtype(element) -> tuple[np.dtype, str]:
    from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerType

    if isinstance(element, Float32Type):
        return np.dtype(np.float32), "float"
    if isinstance(element, Float64Type):
        return np.dtype(np.float64), "double"
    if isinstance(element, IntegerType) and element.width.data == 32:
        return np.dtype(np.int32), "int"
    raise DiffcError(f"error: buffers of element type {element} are not supported by diffc run")


def _array(b: TestBuffer, dtype: np.dtype, max_bytes: int | None = None) -> np.ndarray:
    """The buffer's initial contents; `max_bytes`: the most one device buffer may hold."""
    try:
        if dtype.kind == "f":
            values = [float(x) for x in b.data]
        else:
            values = [int(x, 0) if not re.fullmatch(r"-?\d+\.0*", x) else int(float(x)) for x in b.data]
    except ValueError as e:
        raise _error(b.where, b.line, f"TEST_INPUT: bad element in data for '{b.name}' ({e})") from None
    n = max(len(values), b.count or 0, 1)
    if max_bytes is not None and n * dtype.itemsize > max_bytes:
        raise _error(b.where, b.line, f"TEST_INPUT: '{b.name}' has {n} elements ({n * dtype.itemsize} bytes); "
                                      f"the device allocates at most {max_bytes} bytes per buffer")
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        bad = next((v for v in values if not info.min <= v <= info.max), None)
        if bad is not None:
            raise _error(b.where, b.line, f"TEST_INPUT: element {bad} of '{b.name}' does not fit in its "
                                          f"{dtype.name} elements")
    arr = np.zeros(n, dtype)
    arr[: len(values)] = values
    return arr


def _flush_c_stdout() -> None:
    """OpenCL printf writes through the C library's stdout: flush it where the runtime did not."""
    import ctypes

    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


def _parameter_location(fn, param: str, source: str | None, filename: str) -> SourceLocation | None:
    """Where the entry point declares `param` (a flattened leaf `a_b_c` is found as `a_b_c`,
    `a_b` or `a`), else where the entry point is; None when neither can be found."""
    from xdsl.dialects.builtin import FileLineColLoc

    from diffc.diagnostics import line_col

    loc = fn.location
    start = 0
    if source is not None and isinstance(loc, FileLineColLoc):
        start = sum(len(ln) + 1 for ln in source.splitlines()[: loc.line.data - 1])
    if source is None:
        return SourceLocation(filename, loc.line.data, loc.column.data) if isinstance(loc, FileLineColLoc) else None
    name = fn.sym_name.data
    parts = param.split("_")
    for m in re.finditer(rf"\b{re.escape(name)}\s*\(", source[start:]):
        open_at = start + m.end()
        close_at = source.find(")", open_at)
        params = source[open_at: close_at if close_at >= 0 else len(source)]
        for k in range(len(parts), 0, -1):
            hit = re.search(rf"%?\b{re.escape('_'.join(parts[:k]))}\b", params)
            if hit:
                return SourceLocation(filename, *line_col(source, open_at + hit.start()))
        return SourceLocation(filename, *line_col(source, start + m.start()))
    return None


def _numthreads_location(source: str | None, filename: str) -> SourceLocation | None:
    """Where the file writes `[numthreads(...)]` (the first one), if it does."""
    from diffc.diagnostics import line_col

    m = re.search(r"numthreads\s*\(", source or "")
    return SourceLocation(filename, *line_col(source, m.start())) if m and source else None


def run_kernel(module, entry: str, threads, groups, buffers: list[TestBuffer], filename: str, source: str | None = None):
    """Builds the lowered module, binds buffers, runs [threads x groups] work-items; returns
    [(TestBuffer, values)] for the `out` buffers, in declaration order. `source` (the file's
    text) lets errors about parameters point at them."""
    import sys

    import pyopencl as cl
    from xdsl.dialects import func
    from xdsl.dialects.builtin import MemRefType

    from diffc.backend.opencl import build_options, emit_opencl, options_for_device
    from diffc.runtime.device import device
    from diffc.runtime.program import build_program

    fn = next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == entry)
    by_name = {b.name: b for b in buffers}
    args: list = []
    arrays: list[tuple[TestBuffer, np.ndarray, object]] = []
    dev = device()
    from xdsl.dialects.builtin import IndexType

    from diffc.runtime.dispatch import OFFSET_SUFFIX

    from diffc.passes.lower_entry_points import param_names

    from diffc.runtime.status import StatusBuffers, status_slots

    params = list(fn.body.block.args)
    names = param_names(fn)
    slots = {s.name: s for s in status_slots(module)}
    status = StatusBuffers([slots[n] for n in names if n in slots]) if set(names) & set(slots) else None
    from diffc.runtime.bounds import LEN_PREFIX, STATUS_NAME, BoundsBuffer, bounds_sites

    sizes: dict[str, int] = {}
    bounds = None
    for k, arg in enumerate(params):
        t = arg.type
        name = names[k]
        if status is not None and name in slots:  # a status buffer (runtime/status.py), checked below
            args.append(status.buffers[[s.name for s in status.slots].index(name)])
            continue
        if name == STATUS_NAME:  # bounds-check's status buffer, checked below
            bounds = BoundsBuffer(bounds_sites(module))
            args.append(bounds.buffer)
            continue
        if name.startswith(LEN_PREFIX) and name[len(LEN_PREFIX):] in sizes:  # a buffer's length
            args.append(np.int64(sizes[name[len(LEN_PREFIX):]]))
            continue
        if isinstance(t, IndexType) and k and isinstance(params[k - 1].type, MemRefType) and (
            name == f"{names[k - 1]}{OFFSET_SUFFIX}"
        ):
            args.append(np.int64(0))  # the offset of a pointer bound to a whole buffer
            continue
        if not isinstance(t, MemRefType):
            where = _parameter_location(fn, name, source, filename)
            message = (f"entry point '{entry}' has a parameter '{name}' of type {t}, which //TEST_INPUT cannot "
                       f"supply (diffc run binds buffers only); run it from Python with m.{entry}.dispatch(...)")
            if where is None:
                raise DiffcError(f"error[run-parameter]: {filename}: {message}")
            raise DiffcError(format_diagnostic(where, message, "run-parameter", source))
        b = by_name.get(name)
        if b is None:
            raise DiffcError(
                f"error: {filename}: buffer '{name}' is used by '{entry}' but no //TEST_INPUT declares it "
                f"(add e.g. //TEST_INPUT: set {name} = out ubuffer(data=[0 0 0 0], stride=4))"
            )
        dtype, b.type_name = _dtype(t.element_type)
        arr = _array(b, dtype, int(dev.cl_device.max_mem_alloc_size))
        mem = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=arr)
        args.append(mem)
        sizes[name] = arr.size
        arrays.append((b, arr, mem))
    options = options_for_device(dev.cl_device)
    program = build_program(emit_opencl(module, options), tuple(build_options(options)))
    kernels = [k for k in program.all_kernels()]
    if len(kernels) != 1:
        raise DiffcError(f"error: expected one kernel for '{entry}', the program has {len(kernels)}")
    kern = kernels[0]
    if args:
        kern.set_args(*args)
    local = tuple(threads)
    global_size = tuple(t * g for t, g in zip(threads, groups))
    if int(np.prod(local)) > dev.max_work_group_size:
        message = (f"[numthreads{local}] is {int(np.prod(local))} work-items per group; the device "
                   f"'{dev.name}' runs at most {dev.max_work_group_size}")
        where = _numthreads_location(source, filename)
        raise DiffcError(format_diagnostic(where, message, "run-launch", source) if where else f"error: {filename}: {message}")
    sys.stdout.flush()
    try:
        if status is not None:
            status.reset()
        if bounds is not None:
            bounds.reset()
        cl.enqueue_nd_range_kernel(dev.queue, kern, global_size, local)
        dev.queue.finish()
    except cl.Error as e:
        raise DiffcError(f"error: {filename}: the device could not run '{entry}' over {global_size} work-items "
                         f"in groups of {local}: {e}") from None
    _flush_c_stdout()
    sources = {filename: source} if source is not None else None
    if bounds is not None:
        bounds.check(entry, f"running '{entry}'", sources)
    if status is not None:
        status.check(f"running '{entry}'", sources)
    used = {b.name for b, _, _ in arrays}
    for b in buffers:
        if b.name not in used:
            # declared but unused by this entry point: printed with its initial data
            b.type_name = "float"
    out = []
    for b in buffers:
        if not b.out:
            continue
        hit = next(((arr, mem) for bb, arr, mem in arrays if bb is b), None)
        if hit is None:
            out.append((b, _array(b, np.dtype(np.float32), int(dev.cl_device.max_mem_alloc_size))))
            continue
        arr, mem = hit
        cl.enqueue_copy(dev.queue, arr, mem)
        out.append((b, arr))
    dev.queue.finish()
    return out
