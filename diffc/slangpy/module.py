"""SlangPy's Device, Module and function calls over diffc's runtime (see calls.py for a call)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from diffc.diagnostics import DiffcError
from diffc.frontend import types as T
from diffc.runtime.errors import CallError, RuntimeDiffcError
from diffc.slangpy.calls import CALL_SHAPE, ENTRY, plan_call
from diffc.slangpy.commands import CommandEncoder, Submissions
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
        self._submissions = Submissions()

    def create_texture(self, data=None, width=None, height=None, format=Format.rgba32_float, usage=0, **_options):
        """A 2D float texture; `data` rows are its height (shape (height, width, components))."""
        components = int(format)
        if data is not None and (width is None or height is None):
            height, width = data.shape[0], data.shape[1]
        return Texture(width, height, components, data)

    # -- what a training loop asks of a device ----------------------------------------------

    features: tuple = ()  # (no cooperative vectors: Feature.cooperative_vector is not among them)

    def create_command_encoder(self) -> CommandEncoder:
        return CommandEncoder(self)

    def submit_command_buffer(self, buffer) -> int:
        return self._submissions.submit(buffer)

    def wait_for_submit(self, submission: int) -> None:
        self._submissions.wait(submission)

    def wait(self) -> None:
        pass

    def create_sampler(self, **_options) -> Sampler:
        return Sampler()

    def __repr__(self) -> str:
        return f"<slangpy.Device (diffc, {self.type})>"


class Sampler:
    """A SamplerState argument: diffc's textures have one filter (frontend/features/textures.py),
    so its options are accepted and not read."""


class TextureLoader:
    """Reads image files into textures (PNG only: images.py)."""

    def __init__(self, device: Device | None = None):
        self.device = device

    def load_texture(self, path, options: dict | None = None) -> Texture:
        from diffc.slangpy.images import read_png

        a = read_png(path)
        if a.shape[2] == 3:  # (as an rgba texture)
            a = np.concatenate([a, np.ones_like(a[..., :1])], axis=2)
        return Texture(a.shape[1], a.shape[0], a.shape[2], a.astype(np.float32))


class Feature:
    cooperative_vector = "cooperative_vector"


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
        self._layout = None

    @property
    def name(self) -> str:
        return Path(self.path).stem

    @property
    def layout(self):
        """Reflection of the module's checked program (reflection.py), made on first use."""
        if self._layout is None:
            from diffc.slangpy.program import Program
            from diffc.slangpy.reflection import SlangProgramLayout

            self._layout = SlangProgramLayout(Program(self.text, self.path, self.include_dirs), self)
        return self._layout

    @property
    def program(self):
        return self.layout.program

    def find_struct(self, name: str) -> StructType | None:
        """The struct type `name` names (`AdamOptimizer<float>::Batch`), or None."""
        t = self.layout.find_type_by_name(name)
        if t is None or not isinstance(t.type_reflection.type, T.Struct):
            return None
        return StructType(t.full_name, self.declarations, self)

    def find_function_in_struct(self, struct, name: str) -> FunctionHandle | None:
        """Method `name` (`step`, `batch_step<3>`) of a struct type, called with `this` first."""
        from diffc.slangpy.specialize import function_of, specialize

        st = struct.struct if isinstance(struct, StructType) else struct
        found = self.layout.find_function_by_name_in_type(st, name)
        if found is None:
            return None
        owner = st.type_reflection.type
        base = name.split("<", 1)[0].strip()
        if found.overloads:
            callee = name.strip() if "<" in name else base
            fns = [function_of(self.program, f.info, base, callee, method=True) for f in found.overloads]
            return FunctionHandle(self, fns)
        template = self.program.method_template(owner, base)
        return FunctionHandle(self, [], lambda a, k: specialize(self.program, template, a, k, owner), base)

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
            from diffc.slangpy.reflection import element_slang_type

            return element_slang_type(name)
        if name in self.declarations.structs:
            return StructType(name, self.declarations, self)
        template = self._function_template(name)
        if template is not None:  # a generic function: specialized for each call's arguments
            from diffc.slangpy.specialize import specialize

            return FunctionHandle(self, [], lambda a, k: specialize(self.program, template, a, k), name)
        raise AttributeError(f"slangpy module '{self.path}' has no function or type '{name}'")

    def _function_template(self, name: str):
        from diffc.frontend import ast as A

        if not any(isinstance(d, A.Func) and d.name == name and d.generic_params
                   for d in getattr(self.declarations, "program_decls", ())):
            return None
        return self.program.function_template(name)

    def __getitem__(self, name: str) -> StructType:
        """`module["NetworkParameters<2,3>"]`: a struct type by its name (generic arguments are
        the struct's; its fields are the template's)."""
        base = name.split("<", 1)[0].strip()
        if base not in self.declarations.structs:
            raise KeyError(f"slangpy module '{self.path}' has no struct '{base}'")
        return StructType(name, self.declarations, self)

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


def _packed(value, records: list):
    """value with each tensor of structs bound to a buffer (tensor.RecordStorage) packed into one;
    `records` collects (record, packed storage) to write back after the call."""
    from diffc.slangpy.tensor import RecordStorage

    if isinstance(value, RecordStorage):
        packed = value.pack()
        records.append((value, packed))
        return packed
    if isinstance(value, dict):
        return {k: _packed(v, records) for k, v in value.items()}
    if isinstance(value, list):
        return [_packed(v, records) for v in value]
    return value


def _reflected_leaves(s, prefix: str = "") -> list:
    """The scalar, vector and matrix fields of front-end struct s, nested ones flattened."""
    out = []
    for n, ft, _ in s.fields:
        if isinstance(ft, T.Struct):
            out += _reflected_leaves(ft, f"{prefix}.{n}")
            continue
        from diffc.slangpy.program import spell

        et = element_type(spell(ft))
        if et is None:
            raise CallError(f"error: slangpy: a tensor of struct {s.sname} holds scalar, vector, matrix and struct "
                            f"fields only (field '{n}' is {ft})", n)
        out.append((f"{prefix}.{n}", et))
    return out


class StructType:
    """`module.S`: calling it gives the dict of fields a struct argument takes."""

    def __init__(self, name: str, declarations: Declarations | None = None, module: Module | None = None):
        self.name = name
        self.declarations = declarations
        self.module = module

    @property
    def struct(self):
        """Its SlangType (reflection.py)."""
        return self.module.layout.find_type_by_name(self.name) if self.module is not None else None

    @property
    def fields(self) -> list[str]:
        if self.module is not None and ("<" in self.name or "::" in self.name):
            return list(self.struct.fields)
        d = self.declarations.structs.get(self.name.split("<", 1)[0].strip()) if self.declarations else None
        return [f.name for f in d.fields if "static" not in f.mods] if d is not None else []

    def struct_leaves(self):
        """Its fields as a tensor of it stores them (signature.struct_leaves)."""
        if self.module is not None and ("<" in self.name or "::" in self.name):
            leaves = _reflected_leaves(self.struct.type_reflection.type)
        else:
            leaves = struct_leaves(self.declarations, self.name) if self.declarations is not None else None
        if not leaves:
            raise CallError(f"error: slangpy: a tensor of struct {self.name} holds scalar, vector, matrix and struct "
                            "fields only (not arrays, pointers or tensors)", self.name)
        return leaves

    def __call__(self, *args, **fields):
        """With keyword arguments only: the dict of fields a struct argument takes. With
        arguments: the struct's constructor, called per element (a tensor of the struct)."""
        if not args:
            return {**fields, "_type": self.name}
        return self._construct(args, fields)

    def _construct(self, args: tuple, kwargs: dict):
        from diffc.slangpy.specialize import constructor

        s = self.struct.type_reflection.type
        program = self.module.program
        inits = [f for f in program.methods(s, "__init") if len([p for p in f.params if p.name != "this"])
                 == len(args) + len(kwargs)]
        if not inits:
            raise CallError(f"error: {self.name}(): no constructor takes {len(args) + len(kwargs)} arguments",
                            self.name)
        fn = constructor(program, s, inits[0])
        shape: tuple = ()
        for p, v in zip(fn.params, args):
            if isinstance(v, (np.ndarray, Tensor)):
                full = tuple(v.shape) if isinstance(v, np.ndarray) else (*v.shape, *v.dtype.shape)
                et = element_type(p.text)
                k = len(et.shape) if et is not None else 0
                shape = np.broadcast_shapes(shape, full[: len(full) - k])
        from diffc.slangpy.tensor import StructTensor

        out = StructTensor.make(self.struct.full_name, tuple(int(n) for n in shape), _reflected_leaves(s), zero=False)
        FunctionHandle(self.module, [fn])._run("call", (*args, out), kwargs, None)
        return out

    @property
    def full_name(self) -> str:
        return self.struct.full_name

    def __repr__(self) -> str:
        return f"<slangpy struct {self.name}>"


class FunctionHandle:
    """`module.f`: its overloads, or `specialize(args, kwargs)` giving the Function of one call
    (a generic function or method: specialize.py)."""

    def __init__(self, module: Module, overloads: list[Function], specialize=None, name: str | None = None):
        self.module = module
        self.overloads = overloads
        self.specialize = specialize
        self.name = name or overloads[0].name

    def append_to(self, encoder, *args, **kwargs) -> None:
        """The call, recorded into a command encoder (commands.py) to run when it is submitted."""
        encoder.append(lambda: self(*args, **kwargs))

    def _pick(self, args: tuple, kwargs: dict) -> Function:
        if self.specialize is not None:
            return self.specialize(args, kwargs)
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
            records: list = []
            kwargs = _packed(kwargs, records)
            try:
                getattr(m, ENTRY).dispatch(plan.threads, **kwargs)
            except CallError as e:  # (binding a uniform value: named as the call's, not the kernel's)
                raise CallError(str(e).replace(f"{ENTRY}.dispatch", f"{fn.name}()"), e.argument) from None
            for record, storage in records:  # (buffers of structs: back into their tensors)
                record.unpack(storage)
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


Struct = StructType  # (SlangPy's name of a struct type of a module)


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
