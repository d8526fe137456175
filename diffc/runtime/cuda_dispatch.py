"""`entry.dispatch(...)` with torch CUDA tensors as CUDA kernels in torch's own context.

The entry points are lowered as for OpenCL (compiler.lower_kernels, GPU settings, PTX atomics),
printed as CUDA C (the emitter's CUDA target), compiled by NVRTC and loaded into the tensors'
device's primary context (cuda_kernels._Driver). The arguments bind as dispatch.bind binds diffc
Tensors: each torch tensor becomes a Tensor whose `buffer` is its device address (`DevicePointer`),
so struct dicts, dtype and size checks and the parameters' order are dispatch's own. The launches
are the OpenCL dispatch's: the entry point's kernel (its __inbounds form where the bounds proofs
hold) with the same global and local sizes, or accumulate-gradients' kernel and, in
deterministic mode, its finish kernel, one after the other on torch's current stream; the
partial sums are a torch tensor. Nothing waits on the host. A dispatch with the same arguments
as a recent one (the same tensors at the same addresses, the same numbers: a training loop's)
launches that one's prepared launches again, without binding (`Plan`).

Bounds checks: the status of a kernel's checked accesses is a torch tensor read without a host
wait (BoundsReader): a later dispatch of the entry point raises what an earlier one found, as
the OpenCL path's deferred checks (dispatch_plan.py) do; dispatch_plan.check_pending waits for
the last read (its readers are the module's `_cuda_bounds`).

What this path does not take yet falls back (the reason in cuda_kernels.FALLBACKS, keyed
(entry, "dispatch")): a kernel with status parameters (a loop's [MaxIters] in a backward pass:
read on the OpenCL path), the sanitizer, a texture or uniform argument,
tensors on several devices or not contiguous, NVRTC's or the driver's refusal. The fallback copies
the torch tensors into diffc Tensors, dispatches on OpenCL and copies every buffer back."""

from __future__ import annotations

import ctypes
import sys
import weakref

import numpy as np

from diffc.runtime import cuda_kernels
from diffc.runtime.errors import CallError

ACCUM_GROUPS_PER_SM = 8  # accumulate.py's groups per compute unit on a GPU
PATHS: dict = {}  # (entry, "cuda" or "fallback") -> dispatches that took that path (the GPU script prints it)


class DevicePointer:
    """A CUDA device address where dispatch.bind puts an OpenCL buffer."""

    __slots__ = ("address",)

    def __init__(self, address: int):
        self.address = address


def torch_leaves(value, out: list) -> list:
    """The torch tensors among a dispatch's arguments (nested dicts and lists), in order."""
    if type(value).__module__ == "torch" and type(value).__name__ in ("Tensor", "Parameter"):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            torch_leaves(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            torch_leaves(v, out)
    return out


def gpu_settings():
    """The kernel settings of NVIDIA GPUs without asking OpenCL (kernel_settings.for_device's
    choices for a GPU: 64 work-items per accumulated group, 256 per finish group, 44 KiB of the
    48 KiB of static shared memory)."""
    from diffc.kernel_settings import for_device
    from diffc.runtime.device import SETTINGS

    return for_device(None, **{"accumulate_work_group": 64, "accumulate_finish_group": 256,
                               "accumulate_local_bytes": 44 * 1024, **SETTINGS,
                               "atomics": "ptx", "sanitize": False, "index_type": "long"})


def cuda_program(module):
    """The KernelProgram of the module's entry points with CUDA C as its source (once per Module,
    kept in the module cache as the OpenCL one is)."""
    got = module.__dict__.get("_cuda_entry_program")
    if got is not None:
        return got
    from diffc import compiler
    from diffc.backend.opencl.module import ModuleEmitter
    from diffc.backend.opencl.options import EmitOptions
    from diffc.kernel_program import read_program
    from diffc.runtime import module_cache
    from diffc.runtime.errors import located_failure
    from diffc.stages import stage
    from xdsl.utils.exceptions import DiagnosticException, PassFailedException, VerifyException

    settings = gpu_settings()
    name = module_cache.kernel_key(module.cache_key, "entry points (cuda)", settings)
    prog = module_cache.load_entry_program(name)
    if prog is None:
        low = module.ir.clone()
        with stage("compiling the compute entry points for CUDA"):
            try:
                compiler.lower_kernels(low, settings)
            except (DiagnosticException, PassFailedException, VerifyException) as e:
                raise located_failure(e, module, "lowering the compute entry points failed: ") from None
            options = EmitOptions(atomics="ptx", index_type="long", unroll=settings.unroll, target="cuda")
            emitter = ModuleEmitter(low, options)
            source = emitter.emit()
            prog = read_program(low, module.ir, source, emitter.names, settings, ())
        module_cache.store_entry_program(name, prog)
    module.__dict__["_cuda_entry_program"] = prog
    return prog


class BoundsReader:
    """An entry kernel's bounds status on one device (3 int32 per site, bounds.py's layout) read
    without a host wait: the flags accumulate over dispatches; after a launch, where no read is in
    flight, a copy into pinned host memory and an event are enqueued on torch's stream; a later
    dispatch of the entry (or dispatch_plan.check_pending) raises what a finished read found, as the OpenCL
    path's deferred checks do, and zeroes the status."""

    def __init__(self, sites: list, torch, device):
        from types import SimpleNamespace

        self.torch, self.sites = torch, SimpleNamespace(sites=list(sites), zeroed=False)
        self.status = torch.zeros(max(1, 3 * len(sites)), dtype=torch.int32, device=device)
        self.host = torch.empty(self.status.shape, dtype=torch.int32, pin_memory=self.status.is_cuda)
        self.event = None
        self.what = None

    def poll(self, wait: bool = False) -> None:
        """Raises what a finished read found (`wait`: waits for one in flight first)."""
        event = self.event
        if event is None or not (wait or event.query()):
            return
        if wait:
            event.synchronize()
        self.event = None
        host = self.host.numpy().copy()
        if host[0::3].any():
            from diffc.runtime.bounds import BoundsBuffer

            self.status.zero_()
            kernel, where, sources = self.what
            BoundsBuffer._raise_from(self.sites, host, kernel, where, sources)

    def launched(self, kernel: str, where: str, sources) -> None:
        if self.event is None:
            self.host.copy_(self.status, non_blocking=True)
            self.event = self.torch.cuda.Event()
            self.event.record()
            self.what = (kernel, where, sources)


class _Kernel:
    """What dispatch.bind reads of an entry kernel, without OpenCL buffers: its bounds status
    buffer is the device address of a BoundsReader's tensor."""

    def __init__(self, info, bounds_address: int):
        from types import SimpleNamespace

        self.info, self.params, self.thread_ids = info, list(info.params), info.thread_ids
        self.status, self.uninit = None, None
        self.bounds = SimpleNamespace(buffer=DevicePointer(bounds_address)) if info.bounds_sites is not None else None


def _why_not(info) -> str | None:
    if info.status:
        return "the kernel has status parameters (read on the OpenCL path)"
    if info.uninit_sites is not None:
        return "the sanitizer runs on the OpenCL path"
    if any(p.kind in ("uniform", "texels", "dims", "width", "height") for p in info.params):
        return "a texture or uniform argument"
    return None


def _why_not_tensors(leaves: list) -> str | None:
    dev = leaves[0].device
    for t in leaves:
        if not t.is_cuda:
            return "a CPU tensor among the arguments"
        if t.device != dev:
            return f"tensors on several devices ({dev}, {t.device})"
        if not t.is_contiguous():
            return "a tensor that is not contiguous"
        if str(t.dtype) not in cuda_kernels._NP_OF_TORCH:
            return f"a tensor of dtype {t.dtype}"
    return None


def _as_tensors(value, torch):
    """The arguments with each torch tensor as a diffc Tensor over its device memory."""
    from diffc.runtime.tensor import Tensor

    if isinstance(value, torch.Tensor):
        dt = cuda_kernels._NP_OF_TORCH[str(value.dtype)]
        return Tensor(tuple(value.shape), dt, _buffer=DevicePointer(value.data_ptr()), _storage=value)
    if isinstance(value, dict):
        return {k: _as_tensors(v, torch) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_as_tensors(v, torch) for v in value)
    return value


def _cell(value):
    """The ctypes cell cuLaunchKernel reads one kernel argument from."""
    if isinstance(value, DevicePointer):
        return ctypes.c_uint64(value.address)
    a = np.asarray(value)
    return (ctypes.c_char * a.nbytes).from_buffer_copy(a.tobytes())


def _variant(name: str, inbounds, proofs, params, args: list, global_size) -> str:
    """The kernel form to launch: its __inbounds form where the arguments prove its
    thread-indexed accesses in bounds, else the checked one (accumulate._variant's choice)."""
    from diffc.runtime.bounds import proven

    if proofs and inbounds is not None:
        values = dict(zip(params, args))
        if proven(proofs, lambda n: values[n], global_size):
            return inbounds
    return name


def dispatch(fn, thread_count, kwargs: dict, leaves: list) -> bool:
    """Runs entry point `fn` over `thread_count` threads on torch's current stream with the
    torch CUDA tensors of `kwargs`; False (FALLBACKS says why) where this path cannot."""
    from diffc.runtime import dispatch as opencl_dispatch

    where = f"{fn.name}.dispatch"
    why = cuda_kernels.unavailable() or _why_not_tensors(leaves)
    if why is not None:
        cuda_kernels.FALLBACKS[(fn.name, "dispatch")] = why
        return False
    try:
        prog = cuda_program(fn.module)
    except Exception as e:  # (a lowering the CUDA target refuses: the OpenCL path says it located)
        cuda_kernels.FALLBACKS[(fn.name, "dispatch")] = f"{type(e).__name__}: {e}"
        return False
    info = prog.kernels[fn.name]
    acc = prog.accumulated.get(fn.name)
    why = _why_not(info)
    if why is not None:
        cuda_kernels.FALLBACKS[(fn.name, "dispatch")] = why
        return False
    drv = cuda_kernels._state[0]
    torch = drv.torch
    plans = fn.__dict__.setdefault("_cuda_plans", [])
    for plan in plans:  # the same dispatch as a recent one (a training loop's): launch it again
        if plan.matches(thread_count, kwargs, torch):
            plan.run(drv, where, fn)
            return True
    snap = _snapshot(kwargs, torch)
    kwargs = dict(kwargs)
    names = {p.name for p in info.params}  # (options that are also parameters are arguments)
    deterministic = kwargs.pop("deterministic", None) if "deterministic" not in names else None
    if "deferred_checks" not in names:  # (reads here are always deferred: BoundsReader)
        kwargs.pop("deferred_checks", None)
    device = leaves[0].device
    index = cuda_kernels._device_index(leaves[0])
    reader = None
    if info.bounds_sites is not None:
        readers = fn.module.__dict__.setdefault("_cuda_bounds", {})
        reader = readers.get((fn.name, index))
        if reader is None:
            reader = readers[(fn.name, index)] = BoundsReader(info.bounds_sites, torch, device)
        reader.poll()
    kernel = _Kernel(info, reader.status.data_ptr() if reader is not None else 0)
    index_dtype = np.dtype(np.int64)
    args = opencl_dispatch.bind(where, kernel, _as_tensors(kwargs, torch), index_dtype)
    global_size = opencl_dispatch._global_size(where, thread_count, info.numthreads)
    local = info.numthreads
    if int(np.prod(local)) > 1024:
        raise CallError(f"error: {where}: [numthreads{local}] is more than CUDA's 1024 threads per block", fn.name)
    if 0 in global_size:
        return True
    names = [p.name for p in info.params]
    keep: list = []
    if acc is not None and global_size[1] == global_size[2] == 1:
        runs = _accumulated(fn, acc, args, names, global_size, deterministic, drv, index, device, keep)
    else:
        name = _variant(info.c_name, info.inbounds, info.proofs, names, args, global_size)
        runs = [(name, args, global_size, local)]
    try:
        image = _image(drv, index, prog, fn.name)
    except Exception as e:  # (NVRTC's refusal: the OpenCL path)
        cuda_kernels.FALLBACKS[(fn.name, "dispatch")] = f"{type(e).__name__}: {e}"
        return False
    plan = Plan(thread_count, snap, prepare(drv, index, image, runs), index, reader, keep)
    if snap is not None:
        plans.insert(0, plan)
        del plans[4:]  # a few: a training loop alternates a handful of dispatches
    plan.run(drv, where, fn)
    return True


class Plan:
    """A dispatch made here, kept to be launched again by one with the same arguments: the same
    dict and list structure, the same torch tensors (held weakly) at the same addresses and shapes,
    numbers of the same type and value, the same thread_count. Its launches' argument cells stay
    set (cuLaunchKernel copies them as it is called); `keep` holds the partial sums it points at."""

    __slots__ = ("thread_count", "snap", "launches", "index", "reader", "keep")

    def __init__(self, thread_count, snap, launches, index, reader, keep):
        self.thread_count, self.snap, self.launches = thread_count, snap, launches
        self.index, self.reader, self.keep = index, reader, keep

    def matches(self, thread_count, kwargs: dict, torch) -> bool:
        if type(thread_count) is not type(self.thread_count) or thread_count != self.thread_count:
            return False
        return _same(kwargs, self.snap, torch)

    def run(self, drv, where: str, fn) -> None:
        reader = self.reader
        if reader is not None:
            reader.poll()
        for function, grid, block, pointers, _cells, name in self.launches:
            cuda_kernels.launch_on_stream(drv, self.index, function, grid, block, ctypes.addressof(pointers), name)
        if reader is not None:
            reader.launched(fn.name, where, fn.module.sources)


def _snapshot(value, torch):
    """What `_same` compares a later dispatch's arguments with (None: not to be replayed)."""
    if isinstance(value, torch.Tensor):
        return ("t", weakref.ref(value), value.data_ptr(), tuple(value.shape))
    if type(value) in (int, bool):
        return ("n", type(value), value)
    if type(value) is float:
        return ("n", float, value.hex())  # (-0.0 and 0.0 apart)
    if isinstance(value, dict):
        items = tuple((k, _snapshot(v, torch)) for k, v in value.items())
        return None if any(s is None for _, s in items) else ("d", items)
    if isinstance(value, (list, tuple)):
        items = tuple(_snapshot(v, torch) for v in value)
        return None if any(s is None for s in items) else ("l", type(value), items)
    return None


def _same(value, snap, torch) -> bool:
    kind = snap[0]
    if kind == "t":
        return value is snap[1]() and value.data_ptr() == snap[2] and tuple(value.shape) == snap[3]
    if kind == "n":
        return type(value) is snap[1] and (value.hex() if snap[1] is float else value) == snap[2]
    if kind == "d":
        items = snap[1]
        if not isinstance(value, dict) or len(value) != len(items):
            return False
        for k, s in items:
            if k not in value or not _same(value[k], s, torch):
                return False
        return True
    return (type(value) is snap[1] and len(value) == len(snap[2])
            and all(_same(v, s, torch) for v, s in zip(value, snap[2])))


def _accumulated(fn, acc, args, names, global_size, deterministic, drv, index, device, keep: list):
    """accumulate.launches' kernels as (C name, arguments, global size, local size)."""
    torch = drv.torch
    virtual = global_size[0] // acc.entry_group
    groups = max(1, min(-(-global_size[0] // acc.group), drv.multiprocessors(index) * ACCUM_GROUPS_PER_SM))
    det = _deterministic_default() if deterministic is None else bool(deterministic)
    need = max(groups * acc.slots, 1)
    partials = fn.module.__dict__.setdefault("_cuda_partials", {})
    buf = partials.get((fn.name, index))
    if buf is None or buf.numel() < need:
        buf = partials[(fn.name, index)] = torch.empty(need, dtype=torch.float32, device=device)
    keep.append(buf)  # (a later, larger buffer replaces it here, not under a plan's launches)
    values = dict(zip(names, args))
    values.update({acc.partials_param: DevicePointer(buf.data_ptr()), acc.mode_param: np.int32(1 if det else 0),
                   acc.partials_length_param: np.int64(buf.numel())})
    main_args = [np.int64(virtual) if n == acc.groups_param else values[n] for n in acc.params]
    size = (groups * acc.group, 1, 1)
    main = _variant(acc.c_name, acc.inbounds, acc.proofs, acc.params, main_args, size)
    runs = [(main, main_args, size, (acc.group, 1, 1))]
    if det:
        finish_args = [np.int64(groups) if n == acc.groups_param else values[n] for n in acc.finish_params]
        finish_size = (acc.slots * acc.finish_group, 1, 1)
        finish = _variant(acc.finish_c_name, acc.finish_inbounds, acc.finish_proofs, acc.finish_params,
                          finish_args, finish_size)
        runs.append((finish, finish_args, finish_size, (acc.finish_group, 1, 1)))
    return runs


def _deterministic_default() -> bool:
    from diffc.runtime import accumulate

    return accumulate.DETERMINISTIC


def _image(drv, index: int, prog, entry: str) -> tuple:
    """(arch, the program's cubin, its key) for device `index` (NVRTC once per arch)."""
    arch = drv.arch(index)
    images = prog.__dict__.setdefault("_cuda_images", {})
    got = images.get(arch)
    if got is None:
        got = images[arch] = (arch, drv.nvrtc.compile_cuda(prog.source, arch, f"{entry}.cu"),
                              drv.nvrtc.key(prog.source, arch))
    return got


def prepare(drv, index: int, image: tuple, runs: list) -> list:
    """Each (C name, arguments, global size, local size) of `runs` as what a launch on torch's
    current stream of device `index` needs: (CUfunction, grid, block, the array of the argument
    cells' addresses, the cells, the name); they launch in order (the stream orders them)."""
    out = []
    for name, args, global_size, local in runs:
        function = drv.function(index, image[1], image[2], name)
        cells = [_cell(a) for a in args]
        pointers = (ctypes.c_void_p * max(1, len(cells)))(*[ctypes.addressof(c) for c in cells])
        grid = tuple(g // b for g, b in zip(global_size, local))
        out.append((function, grid, tuple(local), pointers, cells, name))
    return out


def fallback(fn, thread_count, kwargs: dict, leaves: list):
    """The OpenCL dispatch over copies of the torch tensors (through the host), each copied back
    after it: correct, slow (cuda_kernels.FALLBACKS says why the CUDA path did not take it)."""
    import torch

    from diffc.runtime.tensor import Tensor

    copies: list = []

    def conv(value):
        if isinstance(value, torch.Tensor):
            t = Tensor.from_numpy(value.detach().cpu().numpy())
            copies.append((value, t))
            return t
        if isinstance(value, dict):
            return {k: conv(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(conv(v) for v in value)
        return value

    from diffc.runtime.dispatch import dispatch as opencl_dispatch

    event = opencl_dispatch(fn, thread_count, conv(kwargs))
    for original, t in copies:
        with torch.no_grad():
            original.copy_(torch.from_numpy(t.numpy()).to(original.device))
    return event


def count(entry: str, path: str) -> None:
    PATHS[(entry, path)] = PATHS.get((entry, path), 0) + 1


def uses_torch(kwargs: dict) -> list:
    """The torch tensors among `kwargs` (empty where torch is not loaded)."""
    if "torch" not in sys.modules:
        return []
    return torch_leaves(kwargs, [])
