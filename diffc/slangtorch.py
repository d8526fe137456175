"""slang-torch's Python API over diffc: a slang-torch driver runs with its import changed,
`import diffc.slangtorch as slangtorch`.

    m = slangtorch.loadModule("bezier.slang", defines={"NUM_CTRL_PTS": 6})
    m.bezier2D(t=t, control_pts=c, output=out).launchRaw(blockSize=(256, 1, 1), gridSize=(4, 1, 1))
    m.bezier2D.bwd(t=(t, dt), control_pts=(c, dc), output=(out, dout)).launchRaw(...)
    m.bezier2D.fwd(t=(t, dt), ...).launchRaw(...)

The program sees slang-torch's Slang-side built-ins: `TensorView<T>`, `DiffTensorView<T>`
(diffc/lib/slangtorch.slang, imported after the program's own text) and `cudaThreadIdx()`,
`cudaBlockIdx()`, `cudaBlockDim()`, `reinterpret<To, From>` (diffc/frontend/cuda_builtins.py).
Each function marked `[CUDAKernel]` (or `[CudaKernel]`) is launched through a compute entry
point diffc generates for it: `f(args)`, `fwd_diff(f)(args)` or `bwd_diff(f)(args)` with
`[numthreads]` = blockSize, run over gridSize work-groups (CUDA's blocks): one diffc module per
kernel, mode and block size, built on first launch.

Arguments are keywords, as in slang-torch: a torch tensor for a TensorView, a tensor or a
(primal, gradient) pair for a DiffTensorView (in fwd, the gradient tensor holds tangents), a
number for a scalar. Tensors are copied to the device and back after the launch (CPU tensors
and CUDA ones alike: diffc runs on OpenCL), so results land in the tensors given. A TensorView
of a vector type (`TensorView<float2>`) takes a tensor whose last dimension is the vector.

Differences from slang-torch: the tensors are copied (no zero-copy); views have at most 4
dimensions; an index outside a view's shape reads 0 and its store is dropped (CUDA's is
undefined); importing diffc.slangtorch makes `.cuda()` return the tensor (or module) itself when
torch has no CUDA device, so drivers written for CUDA run on the CPU (where `.cuda()` would raise;
nothing else about torch changes); `launchRaw` is the only launch.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from diffc.runtime.errors import CallError

PRELUDE = Path(__file__).resolve().parent / "lib" / "slangtorch.slang"
KERNEL_ATTRS = ("CUDAKernel", "CudaKernel")
MAX_DIMS = 4
_DIFFERENTIABLE_VALUE = re.compile(r"^(float|half|double)([1-4](x[1-4])?)?$")
_VECTOR_LANES = {f"{s}{n}": n for s in ("float", "int", "uint", "half", "double") for n in (2, 3, 4)}


@dataclass(frozen=True)
class _Param:
    name: str
    type_text: str  # as written, for the generated entry point
    view: str | None  # "TensorView", "DiffTensorView" or None
    elem: str  # the view's element type ("float" by default)
    no_diff: bool = False  # marked `no_diff`: a plain value in fwd and bwd launches too


@dataclass(frozen=True)
class _Kernel:
    name: str
    params: tuple[_Param, ...]


def _type_text(t) -> str:
    from diffc.frontend import ast as A

    args = [(_type_text(a) if isinstance(a, A.TypeRef) else str(a)) for a in t.args]
    s = t.name + (f"<{', '.join(args)}>" if args else "") + "*" * t.pointer
    return s + "".join(f"[{d}]" for d in t.dims)


def _kernels(path: str, text: str, defines: dict, include_dirs) -> tuple[dict[str, _Kernel], dict[str, tuple]]:
    """The program's [CUDAKernel] functions and their parameters, and its non-generic structs'
    field names, from its syntax tree."""
    from diffc.frontend import ast as A
    from diffc.frontend.errors import FrontendError
    from diffc.frontend.parser.imports import Loader

    loader = Loader(path, defines, include_dirs)
    try:
        loader.parse(PRELUDE.read_text(encoding="utf-8"), str(PRELUDE))  # its type names, for the program's
        prog = loader.parse(text, path)
    except FrontendError as e:
        raise e.to_diffc_error(loader.sources) from None
    out = {}
    structs = {d.name: tuple(f.name for f in d.fields) for d in prog.decls
               if isinstance(d, A.Struct) and not d.generic_params}
    for d in prog.decls:
        if isinstance(d, A.Func) and any(a.name in KERNEL_ATTRS for a in d.attrs) and d.body is not None:
            params = []
            for p in d.params:
                view = p.type.name if p.type.name in ("TensorView", "DiffTensorView") else None
                elem = _type_text(p.type.args[0]) if view and p.type.args else "float"
                params.append(_Param(p.name, _type_text(p.type), view, elem, "no_diff" in p.mods))
            out[d.name] = _Kernel(d.name, tuple(params))
    return out, structs


def _cuda_fallback() -> None:
    """`.cuda()` of a tensor is the tensor itself where torch has no CUDA (drivers written for
    CUDA then run on the CPU; diffc copies tensors to its OpenCL device in either case)."""
    import torch

    if torch.cuda.is_available() or getattr(torch.Tensor.cuda, "_diffc_fallback", False):
        return

    def cuda(self, *args, **kwargs):
        return self

    cuda._diffc_fallback = True  # type: ignore[attr-defined]
    torch.Tensor.cuda = cuda  # type: ignore[method-assign]
    torch.nn.Module.cuda = lambda self, *a, **k: self  # type: ignore[method-assign]


_cuda_fallback()  # on import: drivers call .cuda() before they load a module


def loadModule(fileName, skipSlang=None, verbose=False, defines=None, includePaths=(), **_options) -> SlangTorchModule:
    """slang-torch's `loadModule`: the program of `fileName`, its macros `defines`
    (name -> value) defined first. Compiles it once to find errors and kernels."""
    return SlangTorchModule(str(fileName), defines or {}, includePaths)


class SlangTorchModule:
    def __init__(self, path: str, defines: dict, include_dirs=()):
        self.path = os.path.abspath(path)
        self.defines = {str(k): str(v) for k, v in defines.items()}
        self.include_dirs = tuple(str(d) for d in include_dirs)
        with open(self.path, encoding="utf-8") as f:
            self.text = f.read()
        self._base = self.text + "\n"
        self.kernels, self.structs = _kernels(self.path, self._base, self.defines, self.include_dirs)
        self._modules: dict[tuple, object] = {}
        self._compile("")  # located errors now, as slang-torch reports them at load time

    def _compile(self, extra: str):
        from diffc.compiler import parse_source
        from diffc.runtime.module import Module

        text = self._base + extra
        options = {"defines": self.defines, "include_dirs": self.include_dirs, "preludes": (str(PRELUDE),)}
        return Module(parse_source(text, self.path, frontend_options=options), self.path, {self.path: text},
                      options=options)

    def _entry(self, kernel: _Kernel, mode: str, block: tuple[int, int, int]):
        key = (kernel.name, mode, block)
        m = self._modules.get(key)
        if m is None:
            entry = f"slangtorch_{mode}_{kernel.name}"
            params = ", ".join(f"{'no_diff ' if p.no_diff else ''}{p.type_text} {p.name}" for p in kernel.params)
            args = ", ".join(p.name for p in kernel.params)
            call = {"primal": kernel.name, "fwd": f"fwd_diff({kernel.name})", "bwd": f"bwd_diff({kernel.name})"}[mode]
            m = self._modules[key] = (self._compile(
                f"[shader(\"compute\")] [numthreads({block[0]}, {block[1]}, {block[2]})]\n"
                f"void {entry}({params}) {{ {call}({args}); }}\n"), entry)
        return m

    def __getattr__(self, name: str):
        """A [CUDAKernel] function, or a struct's constructor (`m.Camera(o=(0, 0), ...)`: the
        struct argument, a dict of its fields)."""
        if not name.startswith("__") and name in self.__dict__.get("kernels", {}):
            return KernelFunction(self, self.kernels[name])
        if not name.startswith("__") and name in self.__dict__.get("structs", {}):
            return _StructConstructor(name, self.structs[name])
        raise AttributeError(f"'{getattr(self, 'path', '?')}' has no [CUDAKernel] function or struct '{name}'")


class _StructConstructor:
    def __init__(self, name: str, fields: tuple[str, ...]):
        self.name, self.fields = name, fields

    def __call__(self, **fields) -> dict:
        unknown = [f for f in fields if f not in self.fields]
        missing = [f for f in self.fields if f not in fields]
        if unknown or missing:
            raise CallError(f"error: {self.name}(...): " + "; ".join(
                ([f"unknown fields {unknown}"] if unknown else []) + ([f"missing fields {missing}"] if missing else []))
                + f" (fields: {', '.join(self.fields)})")
        return dict(fields)


class KernelFunction:
    def __init__(self, module: SlangTorchModule, kernel: _Kernel):
        self.module, self.kernel = module, kernel

    def _launchable(self, mode: str, args, kwargs) -> LaunchableObject:
        if args:
            raise CallError(f"error: {self.kernel.name} takes keyword arguments only (parameters: "
                            f"{', '.join(p.name for p in self.kernel.params)})")
        names = {p.name for p in self.kernel.params}
        unknown = [k for k in kwargs if k not in names]
        missing = [p.name for p in self.kernel.params if p.name not in kwargs]
        if unknown or missing:
            raise CallError(f"error: {self.kernel.name}: " + "; ".join(
                ([f"unexpected arguments {unknown}"] if unknown else []) + ([f"missing arguments {missing}"] if missing else []))
                + f" (parameters: {', '.join(p.name for p in self.kernel.params)})")
        if mode != "primal":
            for p in self.kernel.params:
                if p.view is None and not p.no_diff and _DIFFERENTIABLE_VALUE.match(p.type_text):
                    raise CallError(f"error: {self.kernel.name}.{mode}: the differentiable parameter '{p.name}' "
                                    f"({p.type_text}) is not supported in {mode} launches: pass it in a DiffTensorView")
        return LaunchableObject(self, mode, kwargs)

    def __call__(self, *args, **kwargs) -> LaunchableObject:
        return self._launchable("primal", args, kwargs)

    def fwd(self, *args, **kwargs) -> LaunchableObject:
        return self._launchable("fwd", args, kwargs)

    def bwd(self, *args, **kwargs) -> LaunchableObject:
        return self._launchable("bwd", args, kwargs)


def _dims(size, what: str) -> tuple[int, int, int]:
    if not (isinstance(size, (tuple, list)) and len(size) == 3 and all(isinstance(x, int) and x >= 1 for x in size)):
        raise CallError(f"error: launchRaw: {what} must be a tuple of 3 positive ints, got {size!r}")
    return (int(size[0]), int(size[1]), int(size[2]))


class LaunchableObject:
    def __init__(self, fn: KernelFunction, mode: str, kwargs: dict):
        self.fn, self.mode, self.kwargs = fn, mode, kwargs

    def launchRaw(self, blockSize, gridSize):
        """Runs the kernel over gridSize blocks of blockSize threads (OpenCL work-groups of
        blockSize, gridSize of them); tensors it wrote hold the results afterwards."""
        block, grid = _dims(blockSize, "blockSize"), _dims(gridSize, "gridSize")
        module, entry = self.fn.module._entry(self.fn.kernel, self.mode, block)
        staged: list[tuple] = []  # (torch tensor, its device copy) to copy back
        args = {p.name: self._arg(p, self.kwargs[p.name], staged) for p in self.fn.kernel.params}
        getattr(module, entry).dispatch(thread_count=tuple(b * g for b, g in zip(block, grid)), **args)
        import torch

        for t, dev in staged:
            # through .data: a kernel writes the tensor's memory as CUDA's would, without counting
            # as an in-place op of autograd's (a tensor saved for backward stays usable)
            t.data.copy_(torch.from_numpy(dev.numpy().reshape(t.shape)).to(dtype=t.dtype))

    def launchTotal(self, blockSize, totalSize):
        raise CallError("error: launchTotal is not supported (slang-torch does not implement it either): use "
                        "launchRaw(blockSize=..., gridSize=...)")

    def autoLaunch(self, totalSize):
        raise CallError("error: autoLaunch is not supported (slang-torch does not implement it either): use "
                        "launchRaw(blockSize=..., gridSize=...)")

    def _arg(self, p: _Param, value, staged):
        import torch

        name = f"{self.fn.kernel.name}: argument '{p.name}'"
        if p.view == "TensorView":
            return _view(name, p.elem, value, staged)
        if p.view == "DiffTensorView":
            if isinstance(value, (tuple, list)):
                if len(value) != 2:
                    raise CallError(f"error: {name}: a DiffTensorView takes a tensor or a (primal, gradient) pair")
                primal, grad = value
                if self.mode == "primal":
                    raise CallError(f"error: {name}: a (primal, gradient) pair is for .fwd or .bwd; pass the tensor")
            else:
                primal, grad = value, None
            view = _view(name, p.elem, primal, staged)
            if grad is None:  # no derivative: tangents of zero, gradients into a scratch tensor
                d = _view(name, p.elem, torch.zeros_like(primal), [])
            else:
                d = _view(name + " (its gradient)", p.elem, grad, staged)
                if tuple(grad.shape) != tuple(primal.shape):
                    raise CallError(f"error: {name}: the gradient's shape {tuple(grad.shape)} is not the primal's "
                                    f"{tuple(primal.shape)}")
            return {"primal": view, "diff": {"diff": d}}
        return value


def _dtypes():
    import torch

    return {torch.float32: np.float32, torch.int32: np.int32, torch.float64: np.float64, torch.float16: np.float16,
            torch.int64: np.int64, torch.bool: np.bool_}


def _view(name: str, elem: str, t, staged) -> dict:
    """The fields of a TensorView over torch tensor t (copied to the device; copied back after)."""
    import torch

    from diffc.runtime.tensor import Tensor

    if not isinstance(t, torch.Tensor):
        raise CallError(f"error: {name}: a TensorView takes a torch tensor, got {type(t).__name__}")
    dt = _dtypes().get(t.dtype)
    if dt is None:
        raise CallError(f"error: {name}: tensors of {t.dtype} are not supported")
    lanes = _VECTOR_LANES.get(elem, 1)
    shape = list(t.shape) or [1]  # a 0-dimensional tensor is its one element
    if lanes > 1:
        if not shape or shape[-1] != lanes:
            raise CallError(f"error: {name}: a TensorView<{elem}> takes a tensor whose last dimension is {lanes}, "
                            f"got shape {tuple(shape)}")
        shape = shape[:-1]
    if len(shape) > MAX_DIMS:
        raise CallError(f"error: {name}: at most {MAX_DIMS} dimensions, got {len(shape)}")
    host = t.detach().to("cpu").contiguous().numpy().astype(dt, copy=False)
    dev = Tensor.from_numpy(np.ascontiguousarray(host).reshape(-1) if host.size else np.zeros(1, dt))
    staged.append((t, dev))
    strides, s = [], 1
    for n in reversed(shape):
        strides.insert(0, s)
        s *= n
    pad = [0] * (MAX_DIMS - len(shape))
    return {"data": dev, "ndims": len(shape), "shape": shape + pad, "strides": strides + pad}
