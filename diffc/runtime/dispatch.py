"""Dispatching compute entry points (`[shader("compute")]` functions), SlangPy-style:

    m = diffc.load_module("mlp.slang")
    m.learnGradient.dispatch(thread_count=N, network={"layer1": {"weights": w1, ...}, ...},
                             lossBuffer=loss, inputs=xy, count=N)

Arguments bind by the entry point's parameter names (keywords only):

* a pointer parameter (`T*`: a `memref<?xE>` parameter X followed by its `index` offset, as
  their `diff.abi` roles say, dialects/abi.py) takes a Tensor of E's dtype (pointing at element
  0) or `tensor.at(offset)`;
* a struct parameter (flattened by the front end into leaves `<param>_<field>_<subfield>...`)
  takes a nested dict of field name -> value, an array field (leaves `<field>_0`, ...) a list;
* a scalar takes a Python number (f16 and f32 scalars travel as float32), a vector a sequence;
* a global buffer (`RWStructuredBuffer`, a `memref.global`) takes a Tensor under its name;
* the thread-id parameters (SV_DispatchThreadID, ...) are supplied by the dispatch.

`thread_count` is an int or (x, y, z); each dimension is rounded up to whole work groups of the
entry point's [numthreads], so kernels guard with `if (tid >= count) return;` as in Slang.
Every compute entry point of a module is lowered and built once, into one program.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    ModuleOp,
    VectorType,
)

from diffc.kernel_program import EntryKernelInfo, KernelParam, KernelProgram  # noqa: F401 (KernelParam: imported from here)
from diffc.runtime.device import device, kernel_settings
from diffc.runtime.errors import CallError, RuntimeDiffcError
from diffc.runtime.bounds import BoundsBuffer, proven
from diffc.runtime.status import StatusBuffers
from diffc.runtime.tensor import Tensor, TensorPointer
from diffc.runtime.textures import NAMED as TEXTURE_NAMED, ROLES as TEXTURE_ROLES, SIZES as TEXTURE_SIZES
from diffc.runtime.textures import BoundTexture, bind_texture


@dataclass
class EntryKernel:
    """An entry point's kernel as dispatch binds it: what the compiler says of it, and the
    device buffers of its checks."""

    info: EntryKernelInfo
    status: object = None  # StatusBuffers of its status parameters (runtime/status.py), or None
    bounds: object = None  # its BoundsBuffer (runtime/bounds.py), or None
    uninit: object = None  # its UninitStatus (runtime/uninit.py; the sanitizer mode), or None

    def __post_init__(self):
        from diffc.runtime.uninit import UninitStatus

        info = self.info
        self.status = StatusBuffers(list(info.status)) if info.status else None
        self.bounds = BoundsBuffer(list(info.bounds_sites)) if info.bounds_sites is not None else None
        self.uninit = UninitStatus(list(info.uninit_sites)) if info.uninit_sites is not None else None
        self.params = list(info.params)

    # what the compiler says of it
    name = property(lambda self: self.info.name)  # the entry point's symbol
    c_name = property(lambda self: self.info.c_name)  # its name in the OpenCL program
    thread_ids = property(lambda self: self.info.thread_ids)  # parameter name -> semantic
    numthreads = property(lambda self: self.info.numthreads)
    proofs = property(lambda self: self.info.proofs)  # bounds.Proof of its thread-indexed accesses
    inbounds = property(lambda self: self.info.inbounds)  # the C name of the variant launched when they all hold


@dataclass
class EntryProgram:
    source: str
    program: object
    kernels: dict[str, EntryKernel]
    index_dtype: np.dtype
    cl_kernels: dict[str, object] = field(default_factory=dict)
    accumulated: dict[str, object] = field(default_factory=dict)  # entry -> accumulate.AccumulatedKernel
    plans: dict[str, list] = field(default_factory=dict)  # entry -> its last dispatches' DispatchPlans
    build_options: tuple[str, ...] = ()  # what `program` was built with


def entry_program(module) -> EntryProgram:
    """The module's compute entry points, lowered and built (once per Module)."""
    cached = module._entry_program
    if cached is None:
        from diffc.stages import stage

        with stage("compiling the compute entry points"):
            cached = module._entry_program = _load(_build_or_load(module))
    return cached


def _build_or_load(module) -> KernelProgram:
    """The compiler's KernelProgram of the module's entry points, or what an earlier build of the
    unchanged module under the same settings kept (module_cache.py)."""
    from diffc.runtime import module_cache

    settings = kernel_settings(module.check)
    name = module_cache.kernel_key(module.cache_key, "entry points", settings)
    kept = module_cache.load_entry_program(name)
    if kept is not None:
        return kept
    prog = _build(module, settings)
    module_cache.store_entry_program(name, prog)
    return prog


def _build(module, settings) -> KernelProgram:
    from xdsl.utils.exceptions import DiagnosticException, PassFailedException, VerifyException

    from diffc import compiler
    from diffc.kernel_program import KernelABIError
    from diffc.runtime.errors import located_failure, with_source_line
    from diffc.runtime.program import check_work_group_memory

    low: ModuleOp = module.ir.clone()
    try:
        compiler.lower_kernels(low, settings)
    except (DiagnosticException, PassFailedException, VerifyException) as e:
        raise located_failure(e, module, "lowering the compute entry points failed: ") from None
    check_work_group_memory(low)
    try:
        return with_source_line(compiler.kernel_program, module.sources)(low, settings, module.ir)
    except KernelABIError as e:
        raise RuntimeDiffcError(str(e)) from None


def _load(prog: KernelProgram) -> EntryProgram:
    """The program built on the device, and each kernel's check buffers."""
    from diffc.runtime import accumulate
    from diffc.runtime.program import build_program

    kernels = {name: EntryKernel(info) for name, info in prog.kernels.items()}
    index_dtype = np.dtype(np.int64 if prog.index_type == "long" else np.int32)
    return EntryProgram(prog.source, build_program(prog.source, prog.build_options), kernels, index_dtype,
                        accumulated={of: accumulate.AccumulatedKernel.of(plan) for of, plan in prog.accumulated.items()},
                        build_options=prog.build_options)


# -- binding ------------------------------------------------------------------------------


def _flatten(key: str, value, path: str, out: dict[str, tuple[str, object]], names: set[str]) -> None:
    """Nested dicts of struct fields (and lists for array fields, whose leaves the front end
    names `<field>_<i>`) -> {leaf parameter name: (path as written, value)}."""
    if isinstance(value, Mapping):
        for field, inner in value.items():
            if not isinstance(field, str):
                raise CallError(f"error: argument '{path}': field names must be strings, got {field!r}", key)
            _flatten(f"{key}_{field}", inner, f"{path}.{field}", out, names)
    elif isinstance(value, (list, tuple)) and key not in names and any(
        n == f"{key}_0" or n.startswith(f"{key}_0_") for n in names
    ):
        for i, inner in enumerate(value):
            _flatten(f"{key}_{i}", inner, f"{path}[{i}]", out, names)
    else:
        out[key] = (path, value)


def _element_dtypes(element) -> tuple[np.dtype, ...]:
    if isinstance(element, Float16Type):
        return (np.dtype(np.float16),)
    if isinstance(element, Float32Type):
        return (np.dtype(np.float32),)
    if isinstance(element, Float64Type):
        return (np.dtype(np.float64),)
    if isinstance(element, IndexType):
        return (np.dtype(np.int64),)
    if isinstance(element, IntegerType) and element.width.data == 32:
        return (np.dtype(np.int32), np.dtype(np.uint32))  # signless: the kernel says how to read it
    if isinstance(element, IntegerType) and element.width.data == 64:
        return (np.dtype(np.int64),)
    if isinstance(element, IntegerType) and element.width.data == 1:
        return (np.dtype(np.bool_),)  # one byte each, as OpenCL C's bool (and torch's)
    return ()


def _scalar(where: str, t, value, index_dtype: np.dtype, arg: str):
    """The numpy value a kernel scalar of IR type t is set from."""
    if isinstance(value, (Tensor, TensorPointer)):
        raise CallError(f"error: {where}: argument '{arg}' is a {t} value, got a Tensor", arg)
    if isinstance(t, VectorType):
        n = t.get_shape()[0]
        items = list(value) if isinstance(value, (Sequence, np.ndarray)) and not isinstance(value, str) else None
        if items is None or len(items) != n:
            raise CallError(f"error: {where}: argument '{arg}' is a {t}: pass {n} numbers", arg)
        el = t.element_type
        scalars = [_scalar(where, el, v, index_dtype, arg) for v in items]
        pad = [0] * (4 - n if n == 3 else 0)  # a 3-vector is 4 wide in C
        if isinstance(el, IntegerType | IndexType):
            # one C element type for all: each value's bits in the signed type of the width
            if isinstance(el, IndexType):
                bits = index_dtype.itemsize * 8
            elif el.width.data == 1:  # an int vector in C, where true is all bits set
                bits, scalars = 32, [-int(v) for v in scalars]
            else:
                bits = el.width.data
            words = [int(v) & ((1 << bits) - 1) for v in scalars] + pad
            return np.array(words, np.dtype(f"uint{bits}")).view(np.dtype(f"int{bits}"))
        dt = np.dtype(np.float64 if isinstance(el, Float64Type) else np.float32)
        return np.array(scalars + pad, dt)
    if isinstance(value, (bool, np.bool_)) and not (isinstance(t, IntegerType) and t.width.data == 1):
        raise CallError(f"error: {where}: argument '{arg}' is a {t}, got a bool", arg)
    if isinstance(t, (Float16Type, Float32Type, Float64Type)):
        if not isinstance(value, (int, float, np.integer, np.floating)):
            raise CallError(f"error: {where}: argument '{arg}' is a {t}, got {type(value).__name__}", arg)
        return np.float64(value) if isinstance(t, Float64Type) else np.float32(value)
    if isinstance(t, (IntegerType, IndexType)):
        if not isinstance(value, (int, np.integer, bool, np.bool_)):
            raise CallError(f"error: {where}: argument '{arg}' is an integer ({t}), got {type(value).__name__}", arg)
        v = int(value)
        if isinstance(t, IndexType):
            dt = index_dtype
        elif t.width.data == 1:
            return np.int32(1 if v else 0)  # bool kernel arguments travel as int
        else:
            w = t.width.data
            if not -(1 << (w - 1)) <= v < (1 << w):
                raise CallError(f"error: {where}: argument '{arg}' = {v} does not fit in {w} bits", arg)
            dt = np.dtype(f"int{w}") if v < (1 << (w - 1)) else np.dtype(f"uint{w}")
        info = np.iinfo(dt)
        if not info.min <= v <= info.max:
            raise CallError(f"error: {where}: argument '{arg}' = {v} does not fit in {dt.name}", arg)
        return dt.type(v)
    raise CallError(f"error: {where}: parameter '{arg}' has type {t}, which dispatch cannot pass", arg)


def _pointer(where: str, p: KernelParam, value) -> tuple[Tensor, int]:
    if isinstance(value, TensorPointer):
        tensor, offset = value.tensor, value.offset
    elif isinstance(value, Tensor):
        tensor, offset = value, 0
    else:
        hint = " (copy numpy arrays in with diffc.Tensor.from_numpy)" if isinstance(value, np.ndarray) else ""
        raise CallError(
            f"error: {where}: argument '{p.name}' is a pointer/buffer ({p.type}): pass a Tensor or "
            f"tensor.at(offset), got {type(value).__name__}{hint}",
            p.name,
        )
    if offset and p.kind != "pointer":
        raise CallError(f"error: {where}: argument '{p.name}' is a buffer without an offset: pass the Tensor itself", p.name)
    t = p.type
    assert isinstance(t, MemRefType)
    if isinstance(t.element_type, VectorType):  # a buffer of vectors: a tensor of their scalars
        return _vector_buffer(where, p, tensor, offset)
    if t.element_type == IntegerType(8):  # bytes (a void*, a struct of mixed scalars): any Tensor's
        return tensor, offset * tensor.dtype.itemsize
    want = _element_dtypes(t.element_type)
    if tensor.dtype not in want:
        names = " or ".join(d.name for d in want) or str(t.element_type)
        raise CallError(
            f"error: {where}: argument '{p.name}' is a {tensor.dtype.name} Tensor, the parameter ({t}) needs {names}",
            p.name,
        )
    static = t.get_shape()
    if static and all(d >= 0 for d in static) and tensor.size < int(np.prod(static)):
        raise CallError(f"error: {where}: argument '{p.name}' has {tensor.size} elements, {t} needs {int(np.prod(static))}", p.name)
    return tensor, offset


def _vector_buffer(where: str, p: KernelParam, tensor: Tensor, offset: int) -> tuple[Tensor, int]:
    """A `RWStructuredBuffer<float2>` (`float4`, `int2`, ...) takes a Tensor of the lanes' dtype
    whose last dimension is the vector (shape (N, 2)); a 3-vector is 4 wide in OpenCL C, so its
    Tensor must hold (N, 4) with the fourth lane unused."""
    vec = p.type.element_type
    n = vec.get_shape()[0]
    width = 4 if n == 3 else n
    want = _element_dtypes(vec.element_type)
    if tensor.dtype not in want:
        names = " or ".join(d.name for d in want) or str(vec.element_type)
        raise CallError(f"error: {where}: argument '{p.name}' is a {tensor.dtype.name} Tensor, the parameter "
                        f"({p.type}) needs {names}", p.name)
    if not tensor.shape or tensor.shape[-1] != width:
        pad = " (a 3-vector is 4 wide on the device: pad each to 4 lanes)" if n == 3 else ""
        raise CallError(f"error: {where}: argument '{p.name}' has shape {tuple(tensor.shape)}, the parameter "
                        f"({p.type}) needs a last dimension of {width}{pad}", p.name)
    return tensor, offset


def bind(where: str, kernel: EntryKernel, kwargs: dict, index_dtype: np.dtype, keep: list | None = None) -> list:
    """The kernel's argument list from the keyword arguments (CallError naming a bad one).
    `keep` receives what the arguments point at that no caller holds (textures' buffers)."""
    leaves: dict[str, tuple[str, object]] = {}
    structs: list[str] = []
    # the status buffers the runtime passes, by what they report for (their parameters' `of`)
    status = {s.name: b for s, b in zip(kernel.status.slots, kernel.status.buffers)} if kernel.status else {}
    if kernel.bounds is not None:
        status["bounds"] = kernel.bounds.buffer
    uninit = kernel.uninit
    if uninit is not None:
        status["uninit"] = uninit.buffer
        uninit.start()
    by_name = {p.name: p for p in kernel.params if not p.supplied and p.kind not in TEXTURE_SIZES}
    for p in kernel.params:  # a texture is one argument, named as the texture
        if p.kind in TEXTURE_NAMED:
            by_name.setdefault(p.of, p)
    textures: dict[str, BoundTexture] = {}
    for key, value in kwargs.items():
        if key in kernel.thread_ids:
            raise CallError(f"error: {where}: '{key}' is the thread id ({kernel.thread_ids[key]}); dispatch supplies it", key)
        _flatten(key, value, key, leaves, set(by_name))
        if not (key in leaves and leaves[key][1] is value):
            structs.append(key)
    for leaf, (path, _) in leaves.items():
        p = by_name.get(leaf)
        if p is None or p.kind == "offset":
            root = re.split(r"[.\[]", path)[0]
            fields = [q.name[len(root) + 1:] for q in kernel.params if q.name.startswith(root + "_") and q.kind != "offset"]
            if root != path and fields:
                more = f"; the leaves of '{root}' are: {', '.join(fields)}"
            else:
                more = f"; parameters: {', '.join(q.name for q in kernel.params if q.kind not in ('offset', *TEXTURE_SIZES) and not q.supplied)}"
            why = " (offsets come with pointers: pass tensor.at(offset))" if p is not None else ""
            raise CallError(f"error: {where}: unknown argument '{path}'{why}{more}", path)
    args: list = []
    sizes: dict[str, int] = {}  # buffer parameter -> its tensor's elements
    bound: dict[str, tuple] = {}  # buffer parameter -> (its Tensor, the argument's path, its offset)
    for p in kernel.params:
        if p.kind == "offset":
            continue  # set with its pointer
        if p.kind in TEXTURE_ROLES:
            args.append(_texture_arg(where, kernel, p, leaves, textures, sizes, bound, keep))
            continue
        if p.kind == "status":
            args.append(status[p.of])
            continue
        if p.kind == "length":  # bounds-check's (its buffer comes before it)
            args.append(index_dtype.type(sizes[p.of]))
            continue
        if p.kind in ("shadow", "track"):  # uninit-check's (the sanitizer)
            args.append(uninit.argument(p.kind, p.of, bound))
            continue
        if p.name not in leaves:
            root = next((s for s in structs if p.name.startswith(s + "_")), None)
            what = f"field '{p.name[len(root) + 1:]}' of '{root}' (parameter {p.name})" if root else f"argument '{p.name}'"
            raise CallError(f"error: {where}: missing {what}", p.name)
        path, value = leaves[p.name]
        if p.kind == "uniform":  # a global uniform value: its scalars in a buffer of their own
            tensor = _uniform_buffer(where, p, value, path)
            if keep is not None:
                keep.append(tensor)
            sizes[p.name] = tensor.size
            bound[p.name] = (tensor, path, 0)
            args.append(tensor.buffer)
            continue
        if p.kind in ("pointer", "buffer"):
            tensor, offset = _pointer(where, p, value)
            # counted in the memref's elements (a vector buffer's are vectors: the last dimension)
            sizes[p.name] = tensor.size // (tensor.shape[-1] if isinstance(p.type.element_type, VectorType) else 1)
            if p.type.element_type == IntegerType(8):
                sizes[p.name] = tensor.size * tensor.dtype.itemsize  # (counted in bytes)
            bound[p.name] = (tensor, path, offset)
            args.append(tensor.buffer)
            if p.kind == "pointer":
                args.append(index_dtype.type(offset))
        else:
            args.append(_scalar(where, p.type, value, index_dtype, path))
    return args


def _uniform_buffer(where: str, p, value, arg: str) -> Tensor:
    """The buffer of a global uniform value (`#diff.abi<uniform>`): its scalars, in order, from a
    number, a list or array of them (a vector, an array, a matrix row by row) or a Tensor."""
    t = p.type
    n, el = t.get_shape()[0], t.element_type
    if isinstance(value, Tensor):
        if value.size != n:
            raise CallError(f"error: {where}: '{arg}' is a uniform value of {n} scalars, got a Tensor of {value.size}", arg)
        return value
    try:
        a = np.asarray(value).reshape(-1)
    except (ValueError, TypeError):
        a = None
    if a is None or a.size != n or a.dtype.kind not in "biuf":
        raise CallError(f"error: {where}: '{arg}' is a uniform value of {n} {el} scalars: pass "
                        f"{'a number' if n == 1 else f'{n} numbers (a list or array)'}, got {value!r}", arg)
    if isinstance(el, (Float16Type, Float32Type, Float64Type)):
        dt = {Float16Type: np.float16, Float32Type: np.float32, Float64Type: np.float64}[type(el)]
        return Tensor.from_numpy(a.astype(dt))
    if a.dtype.kind == "f" and not np.all(a == np.round(a)):
        raise CallError(f"error: {where}: '{arg}' is a uniform value of {el} scalars, got fractions {value!r}", arg)
    bits = el.width.data
    words = (a.astype(np.int64) & ((1 << bits) - 1)).astype(np.dtype(f"uint{bits}")).view(np.dtype(f"int{bits}"))
    return Tensor.from_numpy(words)


def _texture_arg(where, kernel, p, leaves, textures, sizes, bound, keep):
    """The kernel argument of one texture parameter (texels, width, height or dims)."""
    bt = textures.get(p.of)
    if bt is None:
        if p.of not in leaves:
            raise CallError(f"error: {where}: missing texture '{p.of}'", p.of)
        path, value = leaves[p.of]
        texels = next((q for q in kernel.params if q.kind == "texels" and q.of == p.of), None)
        dtypes = _element_dtypes(texels.type.element_type) if texels is not None else (np.dtype(np.float32),)
        bt = textures[p.of] = bind_texture(where, path, value, p.lanes, dtypes)
        if keep is not None:
            keep.append(bt)
    if p.kind == "texels":
        sizes[p.name] = bt.tensor.size
        bound[p.name] = (bt.tensor, leaves[p.of][0], 0)
        return bt.tensor.buffer
    if p.kind == "dims":
        sizes[p.name] = 2
        return bt.dims.buffer
    return np.int32(bt.width if p.kind == "width" else bt.height)


def _global_size(where: str, thread_count, numthreads: tuple[int, int, int]) -> tuple[int, int, int]:
    if isinstance(thread_count, (int, np.integer)) and not isinstance(thread_count, bool):
        counts = [int(thread_count)]
    elif isinstance(thread_count, Sequence) and 1 <= len(thread_count) <= 3 and all(
        isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in thread_count
    ):
        counts = [int(c) for c in thread_count]
    else:
        raise CallError(f"error: {where}: thread_count must be an int or 1 to 3 ints, got {thread_count!r}", "thread_count")
    if any(c < 0 for c in counts):
        raise CallError(f"error: {where}: thread_count cannot be negative, got {thread_count!r}", "thread_count")
    counts = (counts + [1, 1])[:3]
    return tuple(-(-c // n) * n for c, n in zip(counts, numthreads))  # type: ignore[return-value]


def _position(kernel: EntryKernel, name: str) -> int:
    """Where parameter `name` sits in the kernel's argument list (bind keeps the parameters' order)."""
    return next(i for i, p in enumerate(kernel.params) if p.name == name)


def dispatch(fn, thread_count, kwargs: dict):
    """Runs the compute entry point `fn` (a module.Function) over `thread_count` threads; returns the
    OpenCL event."""
    import pyopencl as cl

    where = f"{fn.name}.dispatch"
    if not fn.is_entry:
        raise CallError(
            f"error: {where}: @{fn.name} is not a compute entry point ([shader(\"compute\")], "
            "diffc.shader = \"compute\"); call it over tensors as m.{fn.name}(...) instead",
            fn.name,
        )
    prog = entry_program(fn.module)
    kernel = prog.kernels[fn.name]
    from diffc.runtime import capture, dispatch_plan

    # deterministic=True/False (default: DIFFC_DETERMINISTIC), deferred_checks=True/False
    # (default: DIFFC_DEFERRED_CHECKS), unless the kernel has such a parameter
    deterministic, deferred = None, dispatch_plan.DEFERRED_CHECKS
    options = dispatch_plan.dispatch_options(kernel)
    if "deterministic" in kwargs and "deterministic" in options:
        deterministic = kwargs.pop("deterministic")
    if "deferred_checks" in kwargs and "deferred_checks" in options:
        deferred = bool(kwargs.pop("deferred_checks"))
    plans = prog.plans.setdefault(fn.name, [])
    for plan in plans:  # the same call as a recent one: replay it
        event = plan.replay(thread_count, kwargs, deterministic, deferred)
        if event is not dispatch_plan.MISS:
            for step in capture.RECORDING:
                step.record(plan, kwargs)
            return event
    textures: list = []
    args = bind(where, kernel, kwargs, prog.index_dtype, textures)
    global_size = _global_size(where, thread_count, kernel.numthreads)
    dev = device()
    local = kernel.numthreads
    if int(np.prod(local)) > dev.max_work_group_size:
        raise CallError(
            f"error: {where}: [numthreads{local}] is more than the device's {dev.max_work_group_size} work-items per group",
            fn.name,
        )
    if 0 in global_size:
        return None
    acc = prog.accumulated.get(fn.name)
    if acc is not None and global_size[1] == global_size[2] == 1:  # accumulate-gradients' kernels
        from diffc.runtime.accumulate import launches

        runs, combine, keep = launches(prog, acc, args, [p.name for p in kernel.params], global_size, deterministic)
    else:
        name = kernel.c_name
        if kernel.proofs and proven(kernel.proofs, lambda n: args[_position(kernel, n)], global_size):
            name = kernel.inbounds  # every thread-indexed access is in bounds: the variant without their checks
        k = cl.Kernel(prog.program, name)  # its own: a plan keeps its arguments set
        if args:
            k.set_args(*args)
        runs, combine, keep = [(k, global_size, local)], None, []
    plan = dispatch_plan.make(fn, kernel, thread_count, kwargs, deterministic, deferred, runs, dev.queue, combine,
                              [*keep, *args, *textures])
    if plan.snap is not None and kernel.uninit is None:  # (the sanitizer binds each dispatch's shadows)
        plans.insert(0, plan)
        del plans[4:]  # a few: a training loop alternates a handful of calls
    from diffc.stages import stage

    with stage(f"{fn.name}'s first launch (a CPU driver compiles the kernel now)"):
        event = plan.run()
    if kernel.uninit is not None:
        kernel.uninit.finish(fn.name, where, fn.module.sources)
    for step in capture.RECORDING:
        step.record(plan, kwargs)
    return event
