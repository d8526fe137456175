"""Calls with torch CUDA tensors as CUDA kernels in torch's own context, on torch's current stream.

The element-wise kernel of a call (runtime/kernels.py builds it, as for OpenCL) is printed as
CUDA C (the emitter's CUDA target), compiled by NVRTC (nvrtc.py, cached on disk), loaded into the
primary context of the tensors' device (the one torch uses: cuModuleLoadData) and launched with
cuLaunchKernel on torch's current stream, its arguments the tensors' data_ptr()s. Results and
gradients are torch tensors torch allocates on that stream. Nothing goes through OpenCL or the
host, nothing waits, and the GPU never leaves torch's context (cuda_shared.py's path, over
memory OpenCL shares, pays ~270 us per switch between the two contexts).

What a launch does per call is precomputed once per kernel (`Launch`): the argument keys in the
kernel's order (kernels.kernel_layout), one ctypes cell per argument and the array of their
addresses that cuLaunchKernel reads; a call writes the cells and launches.

Kernels with loop-overrun checks (status slots) get zeroed int32 status tensors and are read
after the launch (a host wait, as the OpenCL path's blocking read). What is not done here falls
back, with its reason (`why_not`, `Launch.reason`, warned once per function and kernel), to the
paths of torch_bridge.py: the sanitizer (module.check), grow_tape, arguments that are not all CUDA
tensors of one device or scalars, a kernel NVRTC or the driver refuses.

`ENABLED[0] = False` turns the path off (the bench's "shared" rows)."""

from __future__ import annotations

import ctypes
import math
import sys
import threading
import warnings
from types import SimpleNamespace

import numpy as np

from diffc.runtime.errors import BuildError, CallError
from diffc.runtime.torch_gradients import input_gradients

ENABLED: list = [True]
WORK_GROUP = 256  # threads per block of the element-wise kernels (runtime/module.py's WORK_GROUP)

_state: list = [None]  # the _Driver, or the reason string, once asked
FALLBACKS: dict = {}  # (function, mode) -> why its calls took another path (tests and the GPU script read it)
CONTEXTS: dict = {}  # thread name -> the CUDA context it had current at its first launch here (the GPU script prints it)

_HOST_DATA: tuple = ()  # numpy arrays and diffc Tensors (set at the first call: tensor.py is not imported here)
_NP_OF_TORCH = {"torch.float32": np.dtype(np.float32), "torch.float64": np.dtype(np.float64),
                "torch.int32": np.dtype(np.int32), "torch.float16": np.dtype(np.float16),
                "torch.int64": np.dtype(np.int64), "torch.bool": np.dtype(np.bool_)}


def unavailable() -> str | None:
    """Why calls with CUDA tensors cannot run as CUDA kernels in this process (None: they can)."""
    if not ENABLED[0]:
        return "turned off (cuda_kernels.ENABLED[0] is False)"
    got = _state[0]
    if got is None:
        global _HOST_DATA
        _HOST_DATA = _host_data()
        try:
            got = _state[0] = _Driver()
        except (ImportError, RuntimeError, OSError, BuildError) as e:
            got = _state[0] = str(e)
    return got if isinstance(got, str) else None


def _check(res, what: str = "CUDA driver"):
    from cuda.bindings import driver

    err, rest = (res[0], res[1:]) if isinstance(res, tuple) else (res, ())
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{what}: {err.name} ({driver.cuGetErrorString(err)[1]})")
    return rest[0] if len(rest) == 1 else rest


class _Driver:
    """The driver bindings, torch, and the modules loaded per (device, binary)."""

    def __init__(self):
        torch = sys.modules.get("torch")
        if torch is None or not torch.cuda.is_available():
            raise RuntimeError("torch has no CUDA device")
        from diffc.runtime import nvrtc

        why = nvrtc.unavailable()
        if why is not None:
            raise RuntimeError(f"NVRTC cannot compile here: {why}")
        try:
            from cuda.bindings import driver
        except ImportError:
            raise RuntimeError("the CUDA bindings are not installed: pip install cuda-bindings") from None
        self.driver, self.torch, self.nvrtc = driver, torch, nvrtc
        torch.cuda.init()
        _check(driver.cuInit(0))
        self.functions: dict = {}  # (device index, binary key, name) -> CUfunction
        self.launch = driver.cuLaunchKernel
        self.success = driver.CUresult.CUDA_SUCCESS
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # (the int handle, without a Stream object)
        self.stream = raw if raw is not None else (lambda i: torch.cuda.current_stream(i).cuda_stream)
        self.current_device = torch.cuda.current_device
        self.primary: dict = {}  # device index -> its primary context (torch's)
        self.threads = threading.local()  # .index: the device whose primary context this thread has current

    def arch(self, index: int) -> str:
        major, minor = self.torch.cuda.get_device_capability(index)
        return f"sm_{major}{minor}"

    def context_for(self, index: int) -> None:
        """Makes device `index`'s primary context (torch's) current on the calling thread, once
        per thread: a launch goes into the thread's current context, and a thread may have none
        (one torch made no runtime call on yet) or another one (NVIDIA's OpenCL makes its own
        CUDA context; a launch there pays the GPU's switch between contexts, ~270 us). What the
        thread had is kept in CONTEXTS."""
        d = self.driver
        ctx = self.primary.get(index)
        if ctx is None:
            ctx = self.primary[index] = _check(d.cuDevicePrimaryCtxRetain(_check(d.cuDeviceGet(index))))
        had = _check(d.cuCtxGetCurrent())
        name = threading.current_thread().name
        try:
            what = "primary" if int(had) == int(ctx) else f"another context ({int(had):#x})" if int(had) else "none"
        except TypeError:  # (a handle without __int__: compared as the bindings compare them)
            what = "primary" if had == ctx else f"another context ({had!r})"
        CONTEXTS.setdefault(name, what)
        if what != "primary":
            _check(d.cuCtxSetCurrent(ctx))
        self.threads.index = index

    def multiprocessors(self, index: int) -> int:
        return self.torch.cuda.get_device_properties(index).multi_processor_count

    def function(self, index: int, image: bytes, key: str, name: str):
        """The kernel `name` of `image` (a cubin), loaded into device `index`'s primary context."""
        got = self.functions.get((index, key, name))
        if got is None:
            d = self.driver
            ctx = _check(d.cuDevicePrimaryCtxRetain(_check(d.cuDeviceGet(index))))
            _check(d.cuCtxPushCurrent(ctx))
            try:
                module = _check(d.cuModuleLoadData(image), "cuModuleLoadData")
                got = _check(d.cuModuleGetFunction(module, name.encode()), f"cuModuleGetFunction({name})")
            finally:
                _check(d.cuCtxPopCurrent())
            self.functions[(index, key, name)] = got
        return got


# -- per call -----------------------------------------------------------------------------------


def why_not(fn, values: list, idx: list, tensors: list) -> str | None:
    """Why this call cannot run as CUDA kernels (None: it may; what depends on the tensors'
    dtypes and devices is decided once per kind of call, by `_entry`): the process, the
    module's settings, or an argument. (Every call with CUDA tensors asks: cheap checks only.)"""
    why = unavailable()
    if why is not None:
        return why
    if fn._n_results != 1 or fn.result_dtype is None:
        return "not a function of one scalar result (the OpenCL path says why)"
    module = fn.module
    if module.check:
        return "the sanitizer (check=True) runs on the OpenCL path"
    if module.grow_tape:
        return "grow_tape reruns on the OpenCL path"
    if not tensors:
        return "no tensor argument"
    for t in tensors:
        if not t.is_cuda:
            return "a CPU tensor among the arguments"
    for v in values:
        if isinstance(v, _HOST_DATA):
            return "an argument is host data or a diffc Tensor"
    return None


def _host_data() -> tuple:
    from diffc.runtime.tensor import Tensor

    return (np.ndarray, Tensor)


def _tensors_problem(tensors: list) -> str | None:
    """What the path cannot take in the tensors themselves (asked once per kind of call)."""
    dev = tensors[0].device
    for t in tensors:
        if t.device != dev:
            return f"tensors on several devices ({dev}, {t.device})"
        if str(t.dtype) not in _NP_OF_TORCH:
            return f"a tensor of dtype {t.dtype}"
    return None


def _device_index(t) -> int:
    i = t.device.index
    return 0 if i is None else i


def _shape_and_specs(fn, tensors_at: dict, mode: str, wants: set):
    """(the call's shape, the KernelSpec) for tensors by argument index."""
    from diffc.runtime.kernels import ArgSpec, KernelSpec

    shapes = [tuple(t.shape) for t in tensors_at.values()]
    shape = shapes[0] if shapes else ()
    if any(s != shape for s in shapes):
        try:
            shape = tuple(np.broadcast_shapes(*shapes))
        except ValueError:
            i = next(iter(tensors_at))
            raise CallError(f"error: {fn.name}(): the arguments' shapes {shapes} do not broadcast", fn.params[i]) from None
    specs = [ArgSpec("s")] * len(fn.params)
    for i, t in tensors_at.items():
        specs[i] = ArgSpec("f" if tuple(t.shape) == shape else "b", i in wants)
    bcast = any(s.kind == "b" for s in specs)
    group = 0
    if mode == "bwds" and any(s.kind == "b" and s.grad for s in specs):
        group = WORK_GROUP
    return shape, KernelSpec(fn.name, mode, tuple(specs), len(shape) if bcast else 0, False, group, False)


def _launch_for(fn, spec, index: int):
    """The Launch of `spec` on device `index` (built on first use), or the reason it cannot run."""
    table = fn.__dict__.setdefault("_cuda_launches", {})
    got = table.get((spec, index))
    if got is None:
        try:
            got = Launch(fn, spec, index)
        except Exception as e:  # (NVRTC's or the driver's refusal, an op the CUDA emitter lacks: the next path)
            got = f"{type(e).__name__}: {e}"
            FALLBACKS[(fn.name, spec.mode)] = got
            warnings.warn(f"diffc: {spec.mode} of {fn.name}() with CUDA tensors is not run as a CUDA kernel "
                          f"({got.splitlines()[0]}); it takes the path through OpenCL", RuntimeWarning, stacklevel=3)
        table[(spec, index)] = got
    return got


def _as(t, want: np.dtype, torch):
    """`t` as a contiguous CUDA tensor of dtype `want` (a copy on torch's stream only where it is not)."""
    if _NP_OF_TORCH.get(str(t.dtype)) != want:
        t = t.to(_torch_dtype(want, torch))
    return t if t.is_contiguous() else t.contiguous()


def _torch_dtype(d: np.dtype, torch):
    return {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32, "float16": torch.float16,
            "int64": torch.int64, "bool": torch.bool, "uint32": torch.uint32}[np.dtype(d).name]


def _entry(fn, values: list, idx: list, tensors: list, mode: str, wants: tuple):
    """(the Launch or the reason it cannot run, the call's shape, the result's torch dtype,
    whether some tensor needs a conversion or an expansion first), kept per function for the
    tensors' shapes, dtypes, layouts and device: a repeated call finds it in one lookup."""
    calls = fn.__dict__.get("_cuda_calls")
    if calls is None:
        calls = fn.__dict__["_cuda_calls"] = {}
    key = (mode, wants, *[(t.shape, t.dtype, t.is_contiguous(), t.get_device()) for t in tensors])
    got = calls.get(key)
    if got is None:
        why = _tensors_problem(tensors)
        if why is not None:
            FALLBACKS[(fn.name, mode)] = why
            got = calls[key] = (why, (), None, False, set())
            return got
        torch = _state[0].torch
        want = {i for i, w in zip(idx, wants) if w and fn.diffable[i]} if mode == "bwds" else set()
        at = _arguments(fn, idx, tensors, want, None)
        shape, spec = _shape_and_specs(fn, at, mode, want)
        convert = any(a is not t for a, t in zip(at.values(), tensors))
        got = calls[key] = (_launch_for(fn, spec, _device_index(tensors[0])), shape,
                            _torch_dtype(fn.result_dtype, torch), convert, want)
    return got


def _arguments(fn, idx: list, tensors: list, want: set, shape: tuple | None) -> dict:
    """The tensors by argument index, each contiguous and of its parameter's dtype, a wanted
    gradient's non-float32 broadcast input expanded to the call's shape (no atomics for its sum)."""
    torch = _state[0].torch
    at = {i: _as(t, fn.dtypes[i], torch) for i, t in zip(idx, tensors)}
    if want:
        out = tuple(np.broadcast_shapes(*[tuple(t.shape) for t in at.values()])) if shape is None else shape
        for i in want:
            t = at[i]
            if tuple(t.shape) != out and fn.dtypes[i] != np.float32:
                at[i] = t.expand(out).contiguous()
    return at


def forward(fn, values: list, idx: list, tensors: list):
    """The call's result, a new torch tensor, computed by its CUDA kernel on torch's current
    stream; None when the kernel cannot run here (FALLBACKS says why)."""
    launch, shape, dtype, convert, _ = _entry(fn, values, idx, tensors, "call", ())
    if type(launch) is str:
        return None
    t0 = tensors[0]
    if convert:
        at = _arguments(fn, idx, tensors, set(), shape)
        values = list(values)
        for i, t in at.items():
            values[i] = t
    y = _state[0].torch.empty(shape, dtype=dtype, device=t0.device)
    launch.run(values, y, None, shape)
    return y


def backward(fn, values: list, idx: list, tensors: list, wants, gy) -> list | None:
    """The gradients (torch tensors, or None) of the torch inputs at `idx`, given the output's
    gradient `gy`, by the bwds kernel on torch's current stream; None when it cannot run here."""
    torch = _state[0].torch
    wants = tuple(bool(w) for w in wants)
    launch, shape, dtype, convert, want = _entry(fn, values, idx, tensors, "bwds", wants)
    if type(launch) is str:
        return None
    if tuple(gy.shape) != shape:
        raise CallError(f"error: {fn.name}: the output gradient has shape {tuple(gy.shape)}, the result {shape}")
    if convert:
        values = list(values)
        for i, t in _arguments(fn, idx, tensors, want, shape).items():
            values[i] = t
    grads = {}
    for i in want:
        a = values[i]
        grads[i] = torch.zeros(a.shape, dtype=a.dtype, device=a.device)
    scratch = torch.empty(shape, dtype=dtype, device=gy.device)
    launch.run(values, scratch, _as(gy, fn.result_dtype, torch), shape, grads)
    return input_gradients(idx, tensors, grads)


# -- one kernel ---------------------------------------------------------------------------------

# ctypes cell of a kernel parameter, by the IR type of the function's parameter ("val") or its role
_CELL = {"f32": ctypes.c_float, "f64": ctypes.c_double, "f16": ctypes.c_float, "i1": ctypes.c_int32,
         "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
         "index": ctypes.c_int64}


class Launch:
    """One element-wise kernel loaded into a device's context, with its argument cells."""

    def __init__(self, fn, spec, index: int):
        from diffc.runtime.kernels import kernel_layout

        drv = _state[0]
        self.fn, self.spec, self.index, self.drv = fn, spec, index, drv
        source, self.slots = build_source(fn, spec)
        self.source = source
        arch = drv.arch(index)
        image = drv.nvrtc.compile_cuda(source, arch, f"{fn.name}_{spec.mode}.cu")
        key = drv.nvrtc.key(source, arch)
        self.function = drv.function(index, image, key, spec.kernel_name)
        self.layout = kernel_layout(spec)
        ptypes = list(fn.op.function_type.inputs.data)
        cells = []
        for k in self.layout:
            if k[0] == "val":
                c = _CELL.get(str(ptypes[k[1]]))
                if c is None:
                    raise RuntimeError(f"a parameter of type {ptypes[k[1]]}")
                cells.append(c())
            elif k[0] in ("n", "shape", "stride"):
                cells.append(ctypes.c_int64())
            else:  # a buffer: its device address
                cells.append(ctypes.c_uint64())
        cells += [ctypes.c_uint64() for _ in self.slots or ()]
        self.cells = cells
        self.pointers = (ctypes.c_void_p * len(cells))(*[ctypes.addressof(c) for c in cells])
        self.params = ctypes.addressof(self.pointers)
        self.bcast = [i for i, s in enumerate(spec.args) if s.kind == "b"]
        self.period_of: dict = {}
        # what each cell is set from: (cell, kind, argument index or dimension), kinds by number
        kinds = {"buf": 0, "val": 1, "out": 2, "grad": 3, "out_grad": 4, "n": 5, "shape": 6, "stride": 7}
        self.plan = [(c, kinds[k[0]], k[1] if len(k) > 1 else 0) for c, k in zip(cells, self.layout)]
        self.convert = {k[1]: _scalar_converter(fn, k[1]) for k in self.layout if k[0] == "val"}
        self.sms = drv.multiprocessors(index)
        self.lock = threading.Lock()

    def run(self, values: list, out, out_grad, shape: tuple, grads: dict | None = None) -> None:
        """Sets the cells from the call (`values`: the bound arguments, each tensor contiguous and
        of its parameter's dtype) and launches on torch's current stream; no wait, unless the
        kernel has status slots: then they are read, as the OpenCL path reads them. (One thread
        at a time: the cells are the kernel's, and cuLaunchKernel copies them as it returns.)"""
        with self.lock:
            self._run(values, out, out_grad, shape, grads)

    def _run(self, values: list, out, out_grad, shape: tuple, grads: dict | None) -> None:
        size = out.numel()
        if not size:
            return
        strides = None
        for cell, kind, i in self.plan:
            if kind == 0:  # a tensor's buffer
                cell.value = values[i].data_ptr()
            elif kind == 1:  # a scalar
                cell.value = self.convert[i](values[i])
            elif kind == 2:
                cell.value = out.data_ptr()
            elif kind == 3:
                cell.value = grads[i].data_ptr()
            elif kind == 4:
                cell.value = out_grad.data_ptr()
            elif kind == 5:
                cell.value = size
            elif kind == 6:
                cell.value = shape[i]
            else:  # the broadcast strides, in the layout's order
                if strides is None:
                    strides = iter(self._strides(values, shape))
                cell.value = next(strides)
        status = None
        if self.slots:
            torch = self.drv.torch
            status = torch.zeros(len(self.slots), dtype=torch.int32, device=out.device)
            base = len(self.layout)
            for k in range(len(self.slots)):
                self.cells[base + k].value = status.data_ptr() + 4 * k
        grid, block = self._grid(size, values, shape)
        drv = self.drv
        if drv.current_device() != self.index:
            with drv.torch.cuda.device(self.index):
                self._launch(grid, block, drv.stream(self.index))
        else:
            self._launch(grid, block, drv.stream(self.index))
        if status is not None:
            from diffc.runtime.status import StatusBuffers

            found = [int(v) for v in status.cpu()]
            StatusBuffers._raise_from(SimpleNamespace(slots=self.slots), found, f"{self.spec.mode} of @{self.fn.name}",
                                      self.fn.module.sources, self.spec.kernel_name)

    def _launch(self, grid: int, block: int, stream: int) -> None:
        drv = self.drv
        if getattr(drv.threads, "index", None) != self.index:  # (the backward runs on torch's autograd thread)
            drv.context_for(self.index)
        err = drv.launch(self.function, grid, 1, 1, block, 1, 1, 0, stream, self.params, 0)[0]
        if err != drv.success:
            _check((err,), f"cuLaunchKernel of {self.spec.kernel_name}")

    def _strides(self, values: list, shape: tuple) -> list:
        from diffc.runtime.kernels import broadcast_strides

        return [s for i in self.bcast for s in broadcast_strides(tuple(values[i].shape), shape)]

    def _grid(self, size: int, values: list, shape: tuple) -> tuple[int, int]:
        spec = self.spec
        if not spec.reduces:
            return -(-size // WORK_GROUP), WORK_GROUP
        from diffc.runtime.kernels import broadcast_period, broadcast_strides, reduce_groups

        wg = spec.group
        periods = [broadcast_period(shape, broadcast_strides(tuple(values[i].shape), shape))
                   for i, s in enumerate(spec.args) if s.kind == "b" and s.grad]
        period = math.lcm(*periods)
        return reduce_groups(size, wg, period, self.sms), wg


def _scalar_converter(fn, i: int):
    """A scalar argument i as its kernel cell's value, checked as the OpenCL path's _classify does."""
    want = fn.dtypes[i]
    name = fn.params[i]
    if want is None:
        def refuse(v):
            raise CallError(f"error: {fn.name}(): parameter '{name}' has type {fn.sig.param_types[i]}, "
                            "which calls over tensors cannot pass", name)
        return refuse
    if want.kind == "f":
        return float
    if want.kind == "b":
        return lambda v: int(bool(v))
    lo, hi = int(np.iinfo(want).min), int(np.iinfo(want).max)

    def integer(v):
        if isinstance(v, (float, np.floating)):
            raise CallError(f"error: {fn.name}(): argument '{name}' is a float, parameter is {want.name}", name)
        if not lo <= int(v) <= hi:
            raise CallError(f"error: {fn.name}(): argument '{name}' = {int(v)} does not fit in {want.name}", name)
        return int(v)
    return integer


def build_source(fn, spec) -> tuple[str, list | None]:
    """(the CUDA C of `spec`'s element-wise kernel of Function `fn`, its status slots or None):
    the kernel the OpenCL path builds (module.py's Function._compile), printed for CUDA."""
    from diffc.backend.opencl import EmitOptions, emit_opencl
    from diffc.kernel_settings import for_device
    from diffc.runtime.device import SETTINGS
    from diffc.runtime.errors import with_source_line

    settings = for_device(None, **{**SETTINGS, "atomics": "ptx", "sanitize": False})
    module, slots = fn.lowered_kernel(spec, settings)
    options = EmitOptions(atomics="ptx", index_type=settings.index_type, unroll=0, target="cuda")
    return with_source_line(emit_opencl, fn.module.sources)(module, options), slots


def launch_on_stream(drv, index: int, function, grid: tuple, block: tuple, params: int, name: str) -> None:
    """Launches `function` (grid and block of 3 dimensions, `params` the address of the array of
    argument addresses) on torch's current stream of device `index`, in torch's context."""
    if drv.current_device() != index:
        with drv.torch.cuda.device(index):
            return launch_on_stream(drv, index, function, grid, block, params, name)
    if getattr(drv.threads, "index", None) != index:
        drv.context_for(index)
    err = drv.launch(function, *grid, *block, 0, drv.stream(index), params, 0)[0]
    if err != drv.success:
        _check((err,), f"cuLaunchKernel of {name}")
