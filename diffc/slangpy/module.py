"""SlangPy's Device, Module and function calls over diffc's runtime (see calls.py for a call)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from diffc.diagnostics import DiffcError
from diffc.runtime.errors import CallError, RuntimeDiffcError
from diffc.slangpy.calls import CALL_SHAPE, ENTRY, plan_call
from diffc.slangpy.signature import Declarations, Function, read_declarations, struct_leaves
from diffc.slangpy.tensor import Format, Tensor, Texture
from diffc.slangpy import values
from diffc.slangpy.values import _Vector, element_type

# where `import slangpy;` is found (a folder to give as an include path, as SlangPy's SHADER_PATH)
SHADER_PATH = str(Path(__file__).parent)


class DeviceType:
    automatic = "automatic"
    vulkan = "vulkan"
    d3d12 = "d3d12"
    metal = "metal"
    cuda = "cuda"
    cpu = "cpu"


class Device:
    """diffc runs every device on its one OpenCL device (runtime/device.py): the type and most
    options are accepted and not read; `include_paths` (or `compiler_options["include_paths"]`)
    are where Module.load_from_file looks for a file not found as given."""

    def __init__(self, type=DeviceType.automatic, enable_debug_layers=False, compiler_options=None,
                 include_paths=(), **_options):
        self.type = type
        paths = list(include_paths or ())
        paths += list((compiler_options or {}).get("include_paths", ()))
        self.include_paths = [str(p) for p in paths]

    def create_texture(self, data=None, width=None, height=None, format=Format.rgba32_float, usage=0, **_options):
        """A 2D float texture; `data` rows are its height (shape (height, width, components))."""
        components = int(format)
        if data is not None and (width is None or height is None):
            height, width = data.shape[0], data.shape[1]
        return Texture(width, height, components, data)

    def __repr__(self) -> str:
        return f"<slangpy.Device (diffc, {self.type})>"


def create_device(type=DeviceType.automatic, enable_debug_layers=False, include_paths=(), **options) -> Device:
    return Device(type, enable_debug_layers, include_paths=include_paths, **options)


def create_torch_device(type=DeviceType.automatic, include_paths=(), **options) -> Device:
    return Device(type, include_paths=include_paths, **options)


class Module:
    """A Slang module: `module.f(...)`, `module.f.bwds(...)`, and its types (`module.float4`)."""

    def __init__(self, device: Device | None, path: str, text: str):
        self.device = device
        self.path = path
        self.text = text
        # the device's include paths are where the module's imports are looked for too (as in SlangPy)
        self.include_dirs = list(device.include_paths) if device is not None else []
        self.declarations: Declarations = read_declarations(text, path, self.include_dirs)
        self._kernels: dict[str, object] = {}  # generated source -> its compiled diffc Module

    @classmethod
    def load_from_file(cls, device: Device | None, path, link=None, options=None) -> Module:
        p = Path(path)
        if not p.is_file():
            for d in (device.include_paths if device is not None else []):
                if (Path(d) / p).is_file():
                    p = Path(d) / p
                    break
            else:
                from diffc.runtime.errors import ModuleFileNotFoundError

                raise ModuleFileNotFoundError(f"error: slangpy: no module file '{path}' (looked in the current "
                                              "folder and the device's include paths)", path)
        return cls(device, str(p.resolve()), p.read_text(encoding="utf-8"))

    @classmethod
    def load_from_source(cls, device: Device | None, name: str, source: str, link=None, options=None) -> Module:
        path = name if name.endswith(".slang") else name + ".slang"
        return cls(device, os.path.abspath(path), source)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        overloads = self.declarations.functions.get(name)
        if overloads:
            return FunctionHandle(self, overloads)
        et = element_type(name)
        if et is not None:
            return et
        if name in self.declarations.structs:
            return StructType(name, self.declarations)
        raise AttributeError(f"slangpy module '{self.path}' has no function or type '{name}'")

    def __getitem__(self, name: str) -> StructType:
        """`module["NetworkParameters<2,3>"]`: a struct type by its name (generic arguments are
        the struct's; its fields are the template's)."""
        base = name.split("<", 1)[0].strip()
        if base not in self.declarations.structs:
            raise KeyError(f"slangpy module '{self.path}' has no struct '{base}'")
        return StructType(name, self.declarations)

    def kernel_module(self, source: str, defines: dict[str, str] | None = None):
        """The diffc Module of this module's text with a generated call kernel appended, compiled
        with `defines` (each file's macros, the imported slangpy module's too)."""
        key = (source, tuple(sorted((defines or {}).items())))
        found = self._kernels.get(key)
        if found is None:
            from diffc.runtime.module import _cached_module

            text = self.text + "\n" + source
            options = {}
            if self.include_dirs:
                options["include_dirs"] = self.include_dirs
            if defines:
                options["defines"] = dict(defines)
            found = self._kernels[key] = _cached_module(self.path, {self.path: text}, None, options or None)
        return found


def _in_generated_kernel(e: DiffcError, module: Module, name: str, mode: str, source: str) -> DiffcError:
    """An error in the program is the program's (located in its file); one in the kernel the call
    generated says so and shows the kernel (the arguments asked for something it cannot do)."""
    lines = module.text.count("\n") + 1
    m = re.search(re.escape(module.path) + r":(\d+):\d+:", str(e))
    if m is None or int(m.group(1)) <= lines:
        return e
    return CallError(f"error: {name}{'.bwds' if mode == 'bwds' else ''}(): the kernel this call generates for "
                     f"its arguments does not compile (diffc/slangpy/calls.py says how arguments map):\n{e}\n"
                     f"the kernel:\n{source}", name)


def _reads_call_shape(m) -> bool:
    """Whether the call's kernel reads the call's shape (through CallShapeInfo)."""
    from diffc.runtime.dispatch import entry_program

    return any(p.name == CALL_SHAPE for p in entry_program(m).kernels[ENTRY].params)


class StructType:
    """`module.S`: calling it gives the dict of fields a struct argument takes."""

    def __init__(self, name: str, declarations: Declarations | None = None):
        self.name = name
        self.declarations = declarations

    @property
    def fields(self) -> list[str]:
        d = self.declarations.structs.get(self.name.split("<", 1)[0].strip()) if self.declarations else None
        return [f.name for f in d.fields if "static" not in f.mods] if d is not None else []

    def struct_leaves(self):
        """Its fields as a tensor of it stores them (signature.struct_leaves)."""
        leaves = struct_leaves(self.declarations, self.name) if self.declarations is not None else None
        if not leaves:
            raise CallError(f"error: slangpy: a tensor of struct {self.name} holds scalar, vector, matrix and struct "
                            "fields only (not arrays, pointers or tensors)", self.name)
        return leaves

    def __call__(self, **fields) -> dict:
        return {**fields, "_type": self.name}

    def __repr__(self) -> str:
        return f"<slangpy struct {self.name}>"


class FunctionHandle:
    def __init__(self, module: Module, overloads: list[Function]):
        self.module = module
        self.overloads = overloads
        self.name = overloads[0].name

    def _pick(self, args: tuple, kwargs: dict) -> Function:
        n = len(args) + len(kwargs)
        fits = [f for f in self.overloads
                if len([q for q in f.params if not q.has_default]) <= n <= len(f.params)]
        if not fits:
            counts = sorted({len(f.params) for f in self.overloads})  # (with their defaulted ones)
            raise CallError(f"error: {self.name}() takes {' or '.join(map(str, counts))} arguments, got {n}", self.name)
        return fits[0]

    def _run(self, mode: str, args: tuple, kwargs: dict, result):
        fn = self._pick(args, kwargs)
        plan = plan_call(fn, self.module.declarations, mode, args, kwargs, result)
        try:
            m = self.module.kernel_module(plan.source, plan.defines)
        except DiffcError as e:
            raise _in_generated_kernel(e, self.module, fn.name, mode, plan.source) from None
        if plan.threads:
            kwargs = plan.kwargs
            if _reads_call_shape(m):
                kwargs = {**kwargs, **plan.call_shape_argument()}
            try:
                getattr(m, ENTRY).dispatch(plan.threads, **kwargs)
            except CallError as e:  # (binding a uniform value: named as the call's, not the kernel's)
                raise CallError(str(e).replace(f"{ENTRY}.dispatch", f"{fn.name}()"), e.argument) from None
        return plan.result

    def __call__(self, *args, _result=None, **kwargs):
        from diffc.slangpy import torch_calls

        if torch_calls.holds_torch(args, kwargs, _result):  # a torch.autograd.Function (torch_calls.py)
            return torch_calls.call(self, args, kwargs, _result)
        target = _result if isinstance(_result, np.ndarray) else None
        out = self._run("call", args, kwargs, self._result_tensor(args, kwargs, target) if target is not None else _result)
        if out is None:
            return None
        if target is not None:  # written into the caller's array
            np.copyto(target, out.to_numpy().reshape(target.shape), casting="unsafe")
            return target
        if isinstance(_result, str) and _result == "numpy":
            return out.to_numpy()
        if _result is None and not out.shape:  # a call of no dimensions returns a value
            v = out.to_numpy()
            if not out.dtype.shape:
                return v.item()
            vec = getattr(values, out.dtype.name, None)  # float2 -> spy.float2
            return vec(*v.tolist()) if isinstance(vec, type) and issubclass(vec, _Vector) else v
        return out

    def _result_tensor(self, args: tuple, kwargs: dict, target: np.ndarray):
        """A Tensor for a numpy `_result`: its leading dimensions, the function's result elements."""
        et = element_type(self._pick(args, kwargs).result.name)
        k = len(et.shape) if et is not None else 0
        if et is None or tuple(target.shape[target.ndim - k:]) != et.shape:
            raise CallError(f"error: {self.name}(): '_result' of shape {target.shape} does not hold the function's "
                            f"{self._pick(args, kwargs).result.name} results", "_result")
        return Tensor.empty(None, tuple(target.shape[: target.ndim - k]), et)

    def bwds(self, *args, _result=None, **kwargs) -> None:
        """Backward: gradients of the tensor arguments (their .grad) from `_result.grad`."""
        self._run("bwds", args, kwargs, _result)

    def __repr__(self) -> str:
        return f"<slangpy function {self.name}>"


class InstanceList:
    """SlangPy's InstanceList: a Python object standing for a struct value. Attributes named as the
    struct's fields are its fields' values (tensors, numbers, nested InstanceLists); passed to a
    function, it is that struct, the same for every thread (`get_this()`). Subclasses set their
    fields as attributes, as SlangPy's drivers do. Methods called through it are not provided."""

    def __init__(self, struct: StructType, data: dict | None = None):
        object.__setattr__(self, "_struct", struct)
        object.__setattr__(self, "_data", dict(data or {}))

    def get_this(self) -> dict:
        return self._data

    def __setattr__(self, name: str, value) -> None:
        if name in self._struct.fields:
            self._data[name] = value
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"<slangpy InstanceList {self._struct.name}>"
