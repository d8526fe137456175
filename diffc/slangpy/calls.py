"""A SlangPy call, `module.f(args)` or `module.f.bwds(args)`, as one generated compute entry point.

Like SlangPy, diffc writes a Slang kernel per kind of call: it is appended to the module's source
and run through `dispatch` (runtime/dispatch.py), one thread per element of the call's shape.
Each argument is, by its Python value and its parameter's Slang type:

* *elementwise*: a Tensor or numpy array for a scalar, vector, matrix or array parameter; its
  trailing dimensions are the parameter type's, the leading ones broadcast with the other
  arguments' (numpy's rules) into the call shape. Each thread loads its element through a
  pointer and strides (0 along broadcast dimensions), and stores it back for out/inout.
* *struct*: a Tensor of structs (`Tensor.empty(device, dtype=module.S, shape=...)`) for a parameter
  of that struct: each field is a Tensor of its own (tensor.py's StructTensor), loaded into the
  thread's struct and, for out/inout, stored back; it broadcasts as elementwise arguments do.
* *whole*: a Tensor for a tensor parameter (`Tensor<T, D>`, `GradInOutTensor<T, D>`, ...: the
  Slang types of diffc/slangpy/slangpy.slang), a Texture for a texture parameter.
* *uniform*: a number, vector, list (an array) or dict (a struct), the same for every thread.
* *generated*: `grid(shape)` (its shape is the call's trailing dimensions) and `call_id()`: the
  thread's coordinates; a vector gets them reversed (x is the last dimension), an array in order.

`CallShapeInfo::get_call_id()` in the module's Slang is the thread's position in the call's shape:
the module compiles with the number of dimensions defined (`CallPlan.defines`), and a kernel that
reads the shape gets it bound (`CallPlan.call_shape_argument`).

The result (a non-void function) is written elementwise into `_result` or a new Tensor. `bwds`
calls `bwd_diff(f)`: an elementwise argument's gradient is added into its Tensor's `.grad`
(atomically where it is broadcast), an inout one's replaced, and the result's cotangents are read
from `_result.grad`; tensor parameters carry their own gradients (their custom derivatives).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from diffc.runtime.errors import CallError, named_arguments
from diffc.slangpy.signature import TENSOR_TYPES, Declarations, Function, Param, type_text
from diffc.slangpy.tensor import StructTensor, Tensor, Texture
from diffc.slangpy.values import ElementType, WangHashArg, _Vector, call_id, element_type, grid

ENTRY = "slangpy_call_kernel"
# slangpy.slang's CallShapeInfo: the macro of the number of call dimensions, the global buffer of their sizes
CALL_DIMS, CALL_SHAPE = "__SLANGPY_CALL_DIMS", "__slangpy_call_shape"
NUMTHREADS = 64
_SLANG_SCALAR = {np.dtype(np.float32): "float", np.dtype(np.float16): "half", np.dtype(np.float64): "double",
                 np.dtype(np.int32): "int", np.dtype(np.uint32): "uint"}


@dataclass
class _Arg:
    index: int
    param: Param
    kind: str  # elementwise | struct | whole | texture | uniform | grid | call_id | wang_hash | absent
    value: object
    batch: tuple[int, ...] = ()
    dense: tuple[ElementType, tuple[int, ...]] | None = None  # elementwise: element type, array dims
    differentiable: bool = False


@dataclass
class CallPlan:
    """What a call binds: the kernel's source (its key) and the dispatch's arguments."""

    source: str
    kwargs: dict
    threads: int
    result: Tensor | None
    shape: tuple[int, ...] = ()  # the call's shape (CallShapeInfo's, in the module's Slang)

    @property
    def defines(self) -> dict[str, str]:
        """The macros the module compiles with for this call: the number of its dimensions."""
        return {CALL_DIMS: str(max(len(self.shape), 1))}

    def call_shape_argument(self) -> dict:
        """The argument binding the call's shape, for a kernel that reads it (CallShapeInfo)."""
        from diffc.runtime.tensor import Tensor as Storage

        return {CALL_SHAPE: Storage.from_numpy(np.array(self.shape or (1,), dtype=np.int32))}


def _plain(value):
    """A uniform value as dispatch takes it: vectors as lists, dicts of fields (SlangPy's `_type`
    key dropped), objects with `get_this()` as what it returns, a Tensor (for a pointer) as its
    memory."""
    if hasattr(value, "get_this") and callable(value.get_this):
        value = value.get_this()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if k != "_type"}
    if isinstance(value, _Vector):
        return list(value)
    if isinstance(value, Tensor):  # a pointer field: the tensor's memory from element 0
        return value.storage
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _bind(fn: Function, args: tuple, kwargs: dict) -> list[tuple[Param, object]]:
    values = named_arguments(fn.name, [p.name for p in fn.params], args, kwargs)
    missing = [p for p in fn.params if p.name not in values]
    if missing and not all(p.has_default for p in missing):
        name = next(p.name for p in missing if not p.has_default)
        raise CallError(f"error: {fn.name}() is missing argument '{name}'", name)
    bound = [(p, values[p.name]) for p in fn.params if p.name in values]
    if [p for p, _ in bound] != fn.params[: len(bound)]:  # Slang fills defaults only at the end
        raise CallError(f"error: {fn.name}(): only its last parameters may be left to their defaults "
                        f"('{missing[0].name}' is followed by given ones)", missing[0].name)
    return bound


def _classify(fn: Function, decls: Declarations, k: int, p: Param, value) -> _Arg:
    where = f"{fn.name}()"
    if hasattr(value, "get_this") and callable(value.get_this):
        value = value.get_this()
    diff = decls.is_differentiable(p)
    if isinstance(value, grid):
        return _Arg(k, p, "grid", value, differentiable=diff)
    if isinstance(value, call_id) or value is call_id:
        return _Arg(k, p, "call_id", value, differentiable=diff)
    if isinstance(value, WangHashArg):
        return _Arg(k, p, "wang_hash", value)
    if p.type.name in ("RWStructuredBuffer", "StructuredBuffer") and not p.type.dims and \
            isinstance(value, (Tensor, StructTensor)):  # the whole buffer: its memory
        return _Arg(k, p, "uniform", value.storage)
    if isinstance(value, StructTensor):  # a struct per thread, field by field
        if p.type.dims or p.type.pointer or p.type.name != value.struct.split("<", 1)[0].strip():
            raise CallError(f"error: {where}: argument '{p.name}' is a tensor of {value.struct}, parameter '{p.name}' "
                            f"is {p.declare('').strip()}", p.name)
        return _Arg(k, p, "struct", value, value.shape, differentiable=diff)
    if p.tensor_kind:
        if isinstance(value, np.ndarray):
            value = Tensor.from_numpy(None, value, _tensor_element(where, p))
        if not isinstance(value, Tensor):
            raise CallError(f"error: {where}: parameter '{p.name}' is a {p.text}: pass a slangpy Tensor, got "
                            f"{type(value).__name__}", p.name)
        _check_tensor(where, p, value)
        return _Arg(k, p, "whole", value)
    if p.is_texture:
        if isinstance(value, np.ndarray):
            a = value if value.ndim == 3 else value[..., None]
            value = Texture(a.shape[1], a.shape[0], a.shape[2], a)
        if not isinstance(value, Texture):
            raise CallError(f"error: {where}: parameter '{p.name}' is a {p.text}: pass a texture "
                            f"(device.create_texture), got {type(value).__name__}", p.name)
        return _Arg(k, p, "texture", value)
    if isinstance(value, Texture):  # element by element: its texels, (height, width) of floatN
        value = value.as_tensor()
    if p.type.pointer and not p.type.dims and isinstance(value, Tensor):  # (SlangPy: its device address)
        return _Arg(k, p, "uniform", value.storage)
    if isinstance(value, (Tensor, np.ndarray)):
        dense = p.dense()
        if dense is None:
            raise CallError(f"error: {where}: parameter '{p.name}' has type {p.declare('')}, which a tensor cannot "
                            "fill element by element (scalars, vectors, matrices and arrays of them can)", p.name)
        et, dims = dense
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in "biuf":
                raise CallError(f"error: {where}: argument '{p.name}' has dtype {value.dtype}", p.name)
            if et.scalar.kind in "iu" and value.dtype.kind == "f":
                raise CallError(f"error: {where}: argument '{p.name}' is a float array, parameter is {p.text}", p.name)
            value = Tensor.from_numpy(None, value.astype(et.scalar, copy=False))
        if value.dtype.scalar != et.scalar:
            raise CallError(f"error: {where}: argument '{p.name}' is a tensor of {value.dtype.name}, parameter "
                            f"'{p.name}' is {p.declare('').strip()} ({_SLANG_SCALAR.get(et.scalar)} elements)", p.name)
        full = (*value.shape, *value.dtype.shape)
        trailing = (*dims, *et.shape)
        if len(full) < len(trailing) or tuple(full[len(full) - len(trailing):]) != trailing:
            raise CallError(f"error: {where}: argument '{p.name}' has shape {value.shape} of {value.dtype.name}; "
                            f"parameter type {p.declare('').strip()} takes trailing dimensions {trailing}", p.name)
        return _Arg(k, p, "elementwise", value, tuple(full[: len(full) - len(trailing)]), dense, diff)
    if value is None and p.direction == "out":
        raise CallError(f"error: {where}: out parameter '{p.name}' needs a Tensor to write", p.name)
    if p.direction != "in":
        raise CallError(f"error: {where}: parameter '{p.name}' is {p.direction}: pass a Tensor or numpy array to "
                        f"write, got {type(value).__name__}", p.name)
    if p.type.name == "SamplerState" and not p.type.dims:  # (no value: textures.py's one filter)
        return _Arg(k, p, "sampler", value)
    resolved = getattr(p, "resolved", None)
    plain = _uniform_typed(resolved, value) if resolved is not None else _uniform(decls, p.type, value)
    return _Arg(k, p, "uniform", plain, differentiable=diff)


def _uniform(decls: Declarations, t, value):
    """A uniform value as dispatch binds it, by the Slang type it fills: a Tensor for a tensor
    type (a field of a struct, say) is that tensor's view, a dict (or an InstanceList) for a
    struct its fields, each by its own type; the rest as _plain makes them."""
    if hasattr(value, "get_this") and callable(value.get_this):
        value = value.get_this()
    kind = TENSOR_TYPES.get(t.name) if not t.dims and not t.pointer else None
    if kind is not None and isinstance(value, Tensor):
        return _tensor_value(kind, value, None, t.name)
    s = decls.structs.get(t.name) if not t.dims and not t.pointer else None
    if s is not None and isinstance(value, Mapping):
        types = {f.name: f.type for f in s.fields if "static" not in f.mods}
        return {k: _uniform(decls, types[k], v) if k in types else _plain(v) for k, v in value.items() if k != "_type"}
    return _plain(value)


def _uniform_typed(t, value):
    """A uniform value as dispatch binds it, by the front-end type it fills (a specialized
    call's parameter, specialize.py): a struct's fields each by their own type, a Tensor for a
    tensor struct its view, a Tensor or a tensor of structs for a buffer its memory."""
    from diffc.frontend import types as T
    from diffc.slangpy.tensor import RecordStorage

    if hasattr(value, "get_this") and callable(value.get_this):
        value = value.get_this()
    if isinstance(t, T.Struct):
        kind = TENSOR_TYPES.get(t.template[0]) if t.template is not None else None
        if kind is not None and isinstance(value, Tensor):
            return _tensor_value(kind, value, None, t.template[0])
        if isinstance(value, Mapping):
            types = {n: ft for n, ft, _ in t.fields}
            return {k: _uniform_typed(types[k], v) if k in types else _plain(v)
                    for k, v in value.items() if k != "_type"}
    if isinstance(t, T.Array) and isinstance(value, (list, tuple)):
        return [_uniform_typed(t.elem, v) for v in value]
    if isinstance(t, T.Buffer):
        if isinstance(value, StructTensor):
            return value.storage
        if isinstance(value, (Tensor, RecordStorage)):
            return value.storage if isinstance(value, Tensor) else value
    return _plain(value)


def _tensor_element(where: str, p: Param) -> ElementType:
    t = p.type.args[0] if p.type.args else None
    et = element_type(type_text(t)) if t is not None and not isinstance(t, (int, str)) else None
    if et is None:
        raise CallError(f"error: {where}: parameter '{p.name}' is a {p.text}: tensors of {t if t is not None else '?'} "
                        "elements are not supported (scalars, vectors and matrices are)", p.name)
    return et


def _check_tensor(where: str, p: Param, t: Tensor) -> None:
    et = _tensor_element(where, p)
    if (et.scalar, et.shape) != (t.dtype.scalar, t.dtype.shape):
        raise CallError(f"error: {where}: parameter '{p.name}' is a {p.text}, got a tensor of {t.dtype.name}", p.name)
    dims = p.type.args[1] if len(p.type.args) > 1 else None
    if isinstance(dims, int) and dims != len(t.shape):
        raise CallError(f"error: {where}: parameter '{p.name}' is a {p.text}, got a tensor of {len(t.shape)} "
                        f"dimensions (shape {t.shape})", p.name)


def _call_shape(fn: Function, bound: list[_Arg], result) -> tuple[int, ...]:
    where = f"{fn.name}()"
    shape: tuple[int, ...] = ()
    for a in bound:
        if a.kind not in ("elementwise", "struct"):
            continue
        try:
            shape = np.broadcast_shapes(shape, a.batch)
        except ValueError:
            raise CallError(f"error: {where}: argument '{a.param.name}' has batch shape {a.batch}, which does not "
                            f"broadcast with {tuple(shape)}", a.param.name) from None
    for a in bound:
        if a.kind != "grid":
            continue
        g = a.value.shape
        if len(shape) < len(g):
            shape = (1,) * (len(g) - len(shape)) + tuple(shape)
        lead = len(shape) - len(g)
        merged = list(shape)
        for d, n in enumerate(g):
            have = shape[lead + d]
            if n < 0:
                continue
            if have not in (1, n):
                raise CallError(f"error: {where}: grid shape {g} does not match the call shape {tuple(shape)} of the "
                                "other arguments", a.param.name)
            merged[lead + d] = n
        shape = tuple(merged)
    if isinstance(result, Tensor):
        if tuple(shape) != result.shape:
            try:
                if np.broadcast_shapes(shape, result.shape) != result.shape:
                    raise ValueError
            except ValueError:
                raise CallError(f"error: {where}: '_result' has shape {result.shape}, the call's arguments give "
                                f"{tuple(shape)}", "_result") from None
            shape = result.shape
    for a in bound:
        if a.kind in ("elementwise", "struct") and a.param.direction != "in" and a.batch != tuple(shape):
            raise CallError(f"error: {where}: '{a.param.name}' is written by the call, so its shape must be the "
                            f"call's {tuple(shape)}, got {a.batch}", a.param.name)
    return tuple(int(n) for n in shape)


def _components(dims: tuple[int, ...], et: ElementType) -> list[str]:
    """The accessor of each scalar of a dense value, in memory order (`[i][j]`)."""
    return ["".join(f"[{k}]" for k in idx) for idx in itertools.product(*[range(n) for n in (*dims, *et.shape)])]


def _strides(batch: tuple[int, ...], record: int, shape: tuple[int, ...]) -> list[int]:
    """Scalar strides of each call dimension for an array of batch shape `batch` (right-aligned;
    0 where it broadcasts) whose elements are `record` scalars."""
    out = [0] * len(shape)
    k = record
    for d in range(1, len(batch) + 1):
        n = batch[-d]
        if n != 1:
            out[len(shape) - d] = k
        k *= n
    return out


def _generated(a: _Arg, rank: int, local: str) -> list[str]:
    """The lines that give a grid / call_id parameter the thread's coordinates."""
    p = a.param
    stride = a.value.stride if isinstance(a.value, grid) else None
    et = element_type(p.text)
    if et is None or et.scalar.kind not in "iu" or len(et.shape) > 1 or (p.type.dims and et.shape):
        raise CallError(f"error: {p.name}: grid and call_id fill int or uint scalars, vectors and arrays, not "
                        f"{p.declare('').strip()}", p.name)

    def coord(d: int) -> str:
        if d < 0:
            return "0"
        s = stride[d - (rank - len(stride))] if stride and d - (rank - len(stride)) >= 0 else 1
        return f"_spy_c{d}" + (f" * {s}" if s != 1 else "")

    lines = [f"{p.declare(local)};"]
    if p.type.dims:  # an array: in the dimensions' order
        n = p.type.dims[0]
        lines += [f"{local}[{k}] = {coord(rank - n + k)};" for k in range(n)]
    elif et.shape:  # a vector: x is the last dimension
        lines += [f"{local}[{k}] = {coord(rank - 1 - k)};" for k in range(et.shape[0])]
    else:
        lines += [f"{local} = {et.name}({coord(rank - 1)});"]
    return lines


def _wang_hash_lines(a: _Arg, local: str, params: list[str], kw: dict) -> list[str]:
    """A wang_hash() argument: the thread's index hashed (SlangPy's wang_hash_thread_*), the seed a
    uniform so that every seed runs the same kernel."""
    p, h = a.param, a.value
    et = element_type(p.text)
    n = 1 if et is None else max(et.scalars, 1)
    if et is None or et.scalar.kind not in "iu" or len(et.shape) > 1 or p.type.dims or (h.dims > 0 and h.dims != n):
        raise CallError(f"error: {p.name}: wang_hash fills a uint or a uint vector"
                        f"{f' of {h.dims}' if h.dims > 0 else ''}, not {p.declare('').strip()}", p.name)
    seed = f"_spy_seed{a.index}"
    params.append(f"uniform uint {seed}")
    kw[seed] = h.kernel_seed
    hv = f"_spy_h{a.index}"
    lines = [f"uint {hv} = uint(_spy_i) * {n}u;",
             f"for (int _spy_w = 0; _spy_w < {h.warmup}; _spy_w++) {hv} = wang_hash({hv});",
             f"{hv} = {hv} ^ {seed};", f"{p.declare(local)};"]
    for k in range(n):
        lines.append(f"{hv} = wang_hash({hv});")
        lines.append(f"{local}{f'[{k}]' if et.shape else ''} = {et.name if not et.shape else et.name[:-1]}({hv});")
    return lines


def _tensor_fields(t: Tensor, atomic: bool = False) -> dict:
    if atomic and t.dtype.scalar != np.float32:
        raise CallError(f"error: atomic adds into a tensor of {t.dtype.name} are not supported (float elements only)")
    return {"_data": t.storage, "shape": list(t.shape), "_strides": list(t.strides), "_offset": 0}


def _whole(fn: Function, a: _Arg, mode: str) -> dict:
    where = f"{fn.name}.bwds: tensor '{a.param.name}' ({a.param.text})" if mode == "bwds" else None
    return _tensor_value(a.param.tensor_kind, a.value, where, a.param.name)


def _tensor_value(kind: str, t: Tensor, bwds_where: str | None, name: str) -> dict:
    """The Slang tensor struct's fields for Tensor t (`bwds_where`: in a backward call, which
    needs the gradients of a differentiable tensor)."""
    if kind == "plain":
        return _tensor_fields(t)
    if kind == "atomic":
        return _tensor_fields(t, atomic=True)
    if t.grad_in is None and t.grad_out is None:
        if bwds_where is not None:
            raise CallError(f"error: {bwds_where} has no gradients: call with_grads() on it", name)
        grad_in = grad_out = t  # (never read or written outside a backward pass)
    else:  # (one of them set alone, `t.grad_out = Tensor.zeros_like(t)`: it is both)
        grad_in, grad_out = t.grad_in or t.grad_out, t.grad_out or t.grad_in
    out = {"primal": _tensor_fields(t)}
    if kind in ("grad_in", "grad_inout"):
        out["d_in"] = _tensor_fields(grad_in)
    if kind in ("grad_out", "grad_inout"):
        out["d_out"] = _tensor_fields(grad_out, atomic=True)
    return out


def _pair(body: list[str], i: int, local: str) -> str:
    """A differentiable argument whose gradient goes nowhere: a pair of it, bwd_diff's lvalue."""
    body.append(f"var _spy_d{i} = diffPair({local});")
    return f"_spy_d{i}"


def plan_call(fn: Function, decls: Declarations, mode: str, args: tuple, kwargs: dict, result) -> CallPlan:
    """The kernel and arguments of `fn(...)` (mode "call") or `fn.bwds(...)`."""
    where = f"{fn.name}()" if mode == "call" else f"{fn.name}.bwds"
    if mode == "bwds" and not fn.differentiable:
        raise CallError(f"error: {where}: {fn.name} is not [Differentiable]", fn.name)
    if mode == "bwds" and (fn.method or fn.prelude):
        raise CallError(f"error: {where}: backward calls of methods and constructors are not supported", fn.name)
    bound = [_classify(fn, decls, k, p, v) for k, (p, v) in enumerate(_bind(fn, args, kwargs))]
    res_t = fn.result
    void = res_t.name == "void" and not res_t.dims
    res_et = None
    if not void:
        res_et = element_type(res_t.name) if not res_t.dims and not res_t.args else None
        if res_et is None:
            raise CallError(f"error: {where}: {fn.name} returns {res_t.name}{''.join(f'[{n}]' for n in res_t.dims)}; "
                            "calls return scalars, vectors and matrices (write other results through a tensor "
                            "parameter)", "_result")
    if isinstance(result, Texture):
        result = result.as_tensor()
    given = result if isinstance(result, Tensor) else None
    if mode == "bwds" and not void and (given is None or given.grad_in is None):
        raise CallError(f"error: {where}: '_result' must be the result Tensor with gradients (.with_grads(), its "
                        ".grad holding the result's cotangents)", "_result")
    if given is not None and res_et is not None and (given.dtype.scalar, given.dtype.shape) != (res_et.scalar, res_et.shape):
        raise CallError(f"error: {where}: '_result' is a tensor of {given.dtype.name}, {fn.name} returns {res_et.name}",
                        "_result")
    shape = _call_shape(fn, bound, given)
    rank = len(shape)
    n = math.prod(shape)

    params = ["uint3 _spy_tid : SV_DispatchThreadID", "uniform int _spy_n"]
    params += [f"uniform int _spy_shape{d}" for d in range(rank)]
    kw: dict = {"_spy_n": n, **{f"_spy_shape{d}": shape[d] for d in range(rank)}}
    body = ["int _spy_i = int(_spy_tid.x);", "if (_spy_i >= _spy_n) return;", "int _spy_rest = _spy_i;"]
    for d in reversed(range(rank)):
        body.append(f"int _spy_c{d} = _spy_rest % _spy_shape{d}; _spy_rest = _spy_rest / _spy_shape{d};")
    call_args: list[str] = []
    after: list[str] = []

    for a in bound:
        i, p = a.index, a.param
        # the parameter's own name (dispatch's messages then name it), unless it is the function's
        local = p.name if p.name != fn.name and not p.name.startswith("_spy_") else f"_spy_v{i}"
        if a.kind == "elementwise":
            et, dims = a.dense
            t: Tensor = a.value
            scalar = _SLANG_SCALAR[et.scalar]
            comps = _components(dims, et)
            record = len(comps)
            strides = _strides(a.batch, record, shape)
            params.append(f"uniform {scalar}* _spy_p{i}")
            kw[f"_spy_p{i}"] = t.storage
            for d in range(rank):
                params.append(f"uniform int _spy_s{i}d{d}")
                kw[f"_spy_s{i}d{d}"] = strides[d]
            body.append(f"int _spy_o{i} = 0" + "".join(f" + _spy_c{d} * _spy_s{i}d{d}" for d in range(rank)) + ";")
            body.append(f"{p.declare(local)};")
            if p.direction != "out":
                body += [f"{local}{c} = _spy_p{i}[_spy_o{i} + {k}];" for k, c in enumerate(comps)]
            else:
                body += [f"{local}{c} = {scalar}(0);" for c in comps]
            if mode == "call":
                call_args.append(local)
                if p.direction != "in":
                    after += [f"_spy_p{i}[_spy_o{i} + {k}] = {local}{c};" for k, c in enumerate(comps)]
                continue
            grad = t.grad_out if a.differentiable else None
            if grad is None:
                if a.differentiable:
                    call_args.append(_pair(body, i, local) if p.direction != "out" else local)
                elif p.direction != "out":
                    call_args.append(local)
                continue
            broadcast = any(s == 0 and shape[d] > 1 for d, s in enumerate(strides))
            if broadcast and et.scalar != np.float32:
                raise CallError(f"error: {where}: argument '{p.name}' is broadcast, and accumulating its "
                                f"{et.name} gradient needs atomics that kernels have only for float: pass it at the "
                                f"call's full shape {shape}", p.name)
            params.append(f"uniform {'Atomic<float>' if broadcast else scalar}* _spy_g{i}")
            kw[f"_spy_g{i}"] = grad.storage
            if p.direction == "out":  # the cotangent of what it writes
                gl = f"_spy_gl{i}"
                body.append(f"{p.declare(gl)};")
                body += [f"{gl}{c} = _spy_g{i}[_spy_o{i} + {k}];" for k, c in enumerate(comps)]
                call_args.append(gl)
                continue
            pair = f"_spy_d{i}"
            if p.direction == "inout":
                gl = f"_spy_gl{i}"
                body.append(f"{p.declare(gl)};")
                body += [f"{gl}{c} = _spy_g{i}[_spy_o{i} + {k}];" for k, c in enumerate(comps)]
                body.append(f"var {pair} = diffPair({local}, {gl});")
                after += [f"_spy_g{i}[_spy_o{i} + {k}] = {pair}.d{c};" for k, c in enumerate(comps)]
            else:
                body.append(f"var {pair} = diffPair({local});")
                if broadcast:
                    after += [f"(_spy_g{i} + (_spy_o{i} + {k})).add({pair}.d{c});" for k, c in enumerate(comps)]
                else:
                    after += [f"_spy_g{i}[_spy_o{i} + {k}] += {pair}.d{c};" for k, c in enumerate(comps)]
            call_args.append(pair)
        elif a.kind == "struct":
            if mode == "bwds" and a.differentiable:
                raise CallError(f"error: {where}: the gradient of a tensor of structs ('{p.name}') is not supported "
                                "(pass no_diff, or its fields as tensors)", p.name)
            body.append(f"{p.declare(local)};")
            for k, (path, t) in enumerate(a.value.leaves.items()):
                comps = _components((), t.dtype)
                strides = _strides(a.batch, len(comps), shape)
                ptr = f"_spy_p{i}f{k}"
                params.append(f"uniform {_SLANG_SCALAR[t.dtype.scalar]}* {ptr}")
                kw[ptr] = t.storage
                for d in range(rank):
                    params.append(f"uniform int {ptr}d{d}")
                    kw[f"{ptr}d{d}"] = strides[d]
                at = "0" + "".join(f" + _spy_c{d} * {ptr}d{d}" for d in range(rank))
                if p.direction != "out":
                    body += [f"{local}{path}{c} = {ptr}[{at} + {j}];" for j, c in enumerate(comps)]
                if p.direction != "in" and mode == "call":
                    after += [f"{ptr}[{at} + {j}] = {local}{path}{c};" for j, c in enumerate(comps)]
            call_args.append(local)
        elif a.kind == "whole":
            params.append(f"uniform {p.text} {local}")
            kw[local] = _whole(fn, a, mode)
            call_args.append(local)
        elif a.kind == "texture":
            params.append(f"uniform {p.text} {local}")
            kw[local] = a.value.storage
            call_args.append(local)
        elif a.kind == "sampler":
            params.append(f"uniform {p.text} {local}")
            call_args.append(local)
        elif a.kind == "wang_hash":
            body += _wang_hash_lines(a, local, params, kw)
            call_args.append(local)
        elif a.kind in ("grid", "call_id"):
            body += _generated(a, rank, local)
            call_args.append(_pair(body, i, local) if mode == "bwds" and a.differentiable else local)
        else:  # uniform
            params.append(f"uniform {p.declare(local)}")
            kw[local] = a.value
            call_args.append(_pair(body, i, local) if mode == "bwds" and a.differentiable else local)

    out_tensor = None
    if not void:
        comps = _components((), res_et)
        scalar = _SLANG_SCALAR[res_et.scalar]
        out_tensor = given if given is not None else Tensor.empty(None, shape, res_et)
        params.append(f"uniform {scalar}* _spy_r")
        body.append("int _spy_ro = 0" + "".join(f" + _spy_c{d} * {s}" for d, s in
                                                 enumerate(_strides(shape, len(comps), shape))) + ";")
        if mode == "call":
            kw["_spy_r"] = out_tensor.storage
            body.append(f"{res_t.name} _spy_res = {fn.call(call_args)};")
            body += [f"_spy_r[_spy_ro + {k}] = _spy_res{c};" for k, c in enumerate(comps)]
        else:
            kw["_spy_r"] = out_tensor.grad_in.storage
            body.append(f"{res_t.name} _spy_dres;")
            body += [f"_spy_dres{c} = _spy_r[_spy_ro + {k}];" for k, c in enumerate(comps)]
            body.append(f"bwd_diff({fn.callee or fn.name})({', '.join([*call_args, '_spy_dres'])});")
    elif mode == "call":
        body.append(f"{fn.call(call_args)};")
    else:
        body.append(f"bwd_diff({fn.callee or fn.name})({', '.join(call_args)});")
    body += after
    src = fn.prelude + "\n// the SlangPy call kernel (diffc/slangpy/calls.py)\n"
    src += f"[shader(\"compute\")]\n[numthreads({NUMTHREADS}, 1, 1)]\nvoid {ENTRY}(" + ",\n    ".join(params) + ")\n{\n"
    src += "".join(f"    {line}\n" for line in body) + "}\n"
    return CallPlan(src, kw, n, out_tensor, shape)
