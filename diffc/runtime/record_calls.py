"""Calls over tensors of functions with vector, matrix, array, struct, half or out/inout
parameters, or a vector or struct result (layouts.py says how each maps onto arrays):

    m.len3(p=np.ones((4, 3), np.float32))              # float len3(float3 p): 4 results
    m.mk(a={"pos": pos, "w": w}, t=0.5)                # P mk(P a, float t): {"pos": .., "w": ..}
    m.split(x=x, z=z)                                  # void split(float x, out float y, inout float z)
                                                       #   -> {"y": Tensor, "z": z written in place}

Rules (SlangPy's): a dense parameter's array ends in the type's shape (`(..., 3)` for float3,
`(..., R, C)` for a matrix, `(..., N)` for float[N]); the leading dimensions of all arguments
broadcast as numpy's do, and the result has the broadcast batch shape followed by the result
type's shape. A struct takes a dict of its fields (or a numpy structured array), an array of
structs `S[N]` a dict of S's fields each with the element dimension N first. An `out`
parameter may be omitted (the call makes its tensor) or given a Tensor or array to write; an
`inout` one needs a Tensor or numpy array (of the full batch shape), which the call overwrites.
A function with out/inout parameters returns a dict of them (and "_result"); else its result.

Derivatives: `.fwds` reads each input Tensor's `.grad` as its tangent and returns outputs
whose `.grad` is theirs; `.bwds` takes the output derivatives from `_result`'s `.grad` (and
out/inout Tensors' `.grad`) and adds each input Tensor's gradient into its `.grad`; an inout
Tensor's `.grad` is replaced by the gradient of its input value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
import dataclasses
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func

from diffc.runtime.device import device
from diffc.runtime.errors import CallError, named_arguments
from diffc.runtime.layouts import Layout, Node
from diffc.runtime.kernels import broadcast_strides, lower_kernel_module
from diffc.runtime.record_kernels import OutSpec, PieceSpec, RecordSpec, build_record_kernel, record_layout
from diffc.runtime.sanitize import check_initialized
from diffc.runtime.tensor import Tensor

WORK_GROUP = 256
_NUMBER = (bool, int, float, np.number)


@dataclass
class _Piece:
    """One array (or number) of a call: a dense argument, or one field of a struct argument."""

    path: str  # as the caller wrote it: "a.pos"
    node: Node  # dense
    leaf: int  # its first IR leaf
    value: object  # Tensor, np.ndarray or a number
    batch: tuple[int, ...] = ()
    source: object = None  # the numpy array an inout piece is copied back into


def _trailing(node: Node) -> str:
    return "(..., " + ", ".join(str(d) for d in node.shape) + ")" if node.shape else "any shape"


def _split(fn, node: Node, value, path: str, leaf: int, out: list[_Piece], write: bool = False) -> None:
    """The pieces of argument `value` of type `node` (CallError naming `path` when it does not fit)."""
    where = f"{fn.name}()"
    if node.kind == "other":
        raise CallError(f"error: {where}: '{path}' has type {node.name}, which calls over tensors cannot pass", path)
    if node.kind == "struct":
        if isinstance(value, np.ndarray) and value.dtype.names:
            value = {n: value[n] for n in value.dtype.names}
        names = [n for n, _ in node.fields]
        if not isinstance(value, Mapping):
            raise CallError(f"error: {where}: '{path}' is a struct {node.name}: pass a dict of its fields "
                            f"({', '.join(names)}) or a numpy structured array, got {type(value).__name__}", path)
        extra = [k for k in value if k not in names]
        if extra:
            raise CallError(f"error: {where}: '{path}' is a struct {node.name}, which has no field '{extra[0]}' "
                            f"(fields: {', '.join(names)})", path)
        for (fname, fnode), start in zip(node.fields, node.field_starts):
            if fname not in value:
                raise CallError(f"error: {where}: '{path}' is missing field '{fname}' of struct {node.name}", path)
            _split(fn, fnode, value[fname], f"{path}.{fname}", leaf + start, out, write)
        return
    want = node.dtype
    if isinstance(value, _NUMBER) and not write:
        if node.shape:
            raise CallError(f"error: {where}: '{path}' is a {node.name}: pass an array of shape {_trailing(node)}, "
                            f"got a number", path)
        if want.kind in "iu" and isinstance(value, (float, np.floating)):
            raise CallError(f"error: {where}: argument '{path}' is a float, parameter is {node.name}", path)
        out.append(_Piece(path, node, leaf, want.type(value)))
        return
    source = None
    if isinstance(value, Tensor):
        if value.dtype != want:
            raise CallError(f"error: {where}: argument '{path}' is a {value.dtype.name} Tensor, parameter is "
                            f"{node.name} ({want.name})", path)
    elif write and not isinstance(value, np.ndarray):
        raise CallError(f"error: {where}: '{path}' is written by the call: pass a Tensor or a numpy array, "
                        f"got {type(value).__name__}", path)
    else:
        a = np.asarray(value)
        if a.dtype.kind not in "biuf":
            raise CallError(f"error: {where}: argument '{path}' has dtype {a.dtype}; calls take bool, integer "
                            f"or float data ({node.name} expected)", path)
        if want.kind in "iu" and a.dtype.kind == "f":
            raise CallError(f"error: {where}: argument '{path}' is a {a.dtype} array, parameter is {node.name}", path)
        source = value if write else None
        value = a.astype(want, copy=False)
    shape = tuple(value.shape)
    k = len(node.shape)
    if len(shape) < k or shape[len(shape) - k:] != node.shape:
        raise CallError(f"error: {where}: argument '{path}' has shape {shape}; parameter type {node.name} takes "
                        f"arrays of shape {_trailing(node)}", path)
    out.append(_Piece(path, node, leaf, value, shape[: len(shape) - k], source))


def _tree(node: Node, make):
    """A Tensor (or a dict of them, for a struct) of `node`'s type, each made by make(node)."""
    if node.kind == "struct":
        return {n: _tree(f, make) for n, f in node.fields}
    return make(node)


def _leaves_of(tree) -> list:
    if isinstance(tree, Mapping):
        return [x for v in tree.values() for x in _leaves_of(v)]
    return [tree]


def bind(fn, layout: Layout, args: tuple, kwargs: dict) -> dict:
    """Parameter name -> argument (out parameters may be missing: None)."""
    values = named_arguments(fn.name, [p.name for p in layout.params], args, kwargs)
    for p in layout.params:
        if p.name not in values:
            if p.direction != "out":
                raise CallError(f"error: {fn.name}() is missing argument '{p.name}'", p.name)
            values[p.name] = None
    return values


@dataclass
class _Plan:
    """A call's launch, replayed by the next call of its mode with the same Tensors (and the same
    grads attached or not) and the same numbers, so that call skips binding and checking."""

    key: tuple
    held: tuple  # the arguments, so the ids in `key` stay theirs
    kernel: object
    status: object
    layout: tuple  # record_layout(spec): the kernel's parameters
    spec: RecordSpec
    inputs: list
    batch: tuple
    outputs: list  # (name, tree, pieces) as run made them
    made: set  # ids of the output pieces the call made (a replay makes new ones)


def _fresh(q: _Piece, mode: str) -> _Piece:
    """An output piece like q with a new Tensor (and grads where the mode needs them)."""
    t = Tensor(q.value.shape, q.value.dtype)
    if mode != "call":
        t.with_grads(zero=mode == "bwds")
    return dataclasses.replace(q, value=t)


def _plan_key(mode: str, args: tuple, kwargs: dict, result) -> tuple | None:
    """What a replay must match, or None when an argument is not a Tensor, number, None, dict of
    those, or a `_result` string (a numpy array is uploaded afresh by every call)."""
    parts: list = [mode]

    def add(v) -> bool:
        if isinstance(v, Tensor):
            parts.append((id(v), v.grad is None))
        elif isinstance(v, Mapping):
            parts.append(tuple(v))
            return all(add(x) for x in v.values())
        elif isinstance(v, float):
            parts.append(v.hex())  # (-0.0 and 0.0 apart)
        elif isinstance(v, (bool, int, np.number)):
            parts.append((type(v), v))
        elif v is None or isinstance(v, str):
            parts.append(v)
        else:
            return False
        return True

    ok = all(add(v) for v in args) and all(add(k) and add(v) for k, v in kwargs.items()) and add(result)
    return tuple(parts) if ok else None


def run(fn, mode: str, args: tuple, kwargs: dict, result):
    """`fn(...)` (mode "call"), `fn.fwds(...)` or `fn.bwds(...)` with diffc Tensors, numpy arrays
    and numbers (see the module docstring)."""
    key = _plan_key(mode, args, kwargs, result)
    plan = fn._record_plans.get(mode)
    if plan is not None and key is not None and plan.key == key:
        outputs = [(name, None, [_fresh(q, mode) if id(q) in plan.made else q for q in ps])
                   for name, _, ps in plan.outputs]
        outputs = [(name, _rebuild(ps), ps) for name, _, ps in outputs]
        if math.prod(plan.batch):
            _launch(fn, plan.kernel, plan.status, plan.layout, plan.spec, plan.inputs, [q for _, _, ps in outputs for q in ps],
                    plan.batch, math.prod(plan.batch))
        return _result_of(fn.layout, mode, result, outputs)
    fn._record_plans.pop(mode, None)
    layout: Layout = fn.layout
    values = bind(fn, layout, args, kwargs)
    _check_result(fn, mode, layout, result)
    inputs: list[_Piece] = []
    for p in layout.params:
        if p.direction != "out":
            _split(fn, p.node, values[p.name], p.name, p.arg, inputs, write=p.direction == "inout")
    given = {"_result": result if isinstance(result, (Tensor, Mapping)) else None}
    given.update({p.name: values[p.name] for p in layout.params if p.direction == "out"})
    targets: dict[str, list[_Piece]] = {}  # outputs given something to write into
    for name, node, res in layout.outputs:
        if given.get(name) is not None:
            targets[name] = []
            _split(fn, node, given[name], name, res, targets[name], write=True)
    written = [*(q for ps in targets.values() for q in ps), *(q for q in inputs if _is_inout(layout, q))]
    batch = _batch_shape(fn, [*inputs, *written], written)

    for piece in inputs:
        if isinstance(piece.value, np.ndarray):
            piece.value = Tensor.from_numpy(np.ascontiguousarray(piece.value))
        if mode != "call" and _is_inout(layout, piece) and piece.value.grad is None:
            piece.value.with_grads(zero=True)  # its tangent / output derivative: zero
    for ps in targets.values():
        for piece in ps:
            if isinstance(piece.value, np.ndarray):  # written here, copied into the array at the end
                piece.value = Tensor(piece.value.shape, piece.node.dtype)
    outputs = _outputs(fn, mode, layout, inputs, targets, batch)

    spec = _spec(fn, mode, layout, inputs, outputs, batch)
    out_pieces = [q for _, _, ps in outputs for q in ps]
    kernel, status, params = _kernel(fn, spec, [q.path.replace(".", "_") for q in [*inputs, *out_pieces]])
    size = math.prod(batch)
    if mode != "call":
        read = [(q.path, q.value.grad) for q in inputs if isinstance(q.value, Tensor)]
        read += [(name, q.value.grad) for name, ps in targets.items() if mode == "bwds" and name == "_result"
                 for q in ps if isinstance(q.value, Tensor)]
        if fn.module.check:  # the sanitizer: no read of a gradient nobody wrote
            check_initialized(fn.name, mode, read)
        for _, g in read:  # the launch writes them (or, for _result's, reads what is there)
            if g is not None:
                g.uninitialized = False
    if size:
        _launch(fn, kernel, status, params, spec, inputs, out_pieces, batch, size)

    for q in [*inputs, *(q for ps in targets.values() for q in ps)]:
        if q.source is not None:  # an inout or out numpy array gets its new value
            np.copyto(q.source, q.value.to_numpy().reshape(q.source.shape), casting="unsafe")
    # the next call like this one replays the launch: when nothing was made or copied here
    # (outputs the call made are made afresh by each replay)
    given = [*inputs, *(t for ts in targets.values() for t in ts)]
    made = {id(q) for _, _, ps in outputs for q in ps if not any(q is r for r in given)}
    if key is not None and _plan_key(mode, args, kwargs, result) == key:
        fn._record_plans[mode] = _Plan(key, (args, kwargs, result), kernel, status, params, spec, inputs, tuple(batch),
                                       outputs, made)
    return _result_of(layout, mode, result, outputs)


def _result_of(layout: Layout, mode: str, result, outputs: list):
    if mode == "bwds":
        return None
    want_numpy = isinstance(result, str) and result == "numpy"
    out = {name: _returned(tree, want_numpy, mode) for name, tree, _ in outputs}
    if all(p.direction == "in" for p in layout.params):
        return out.get("_result")
    return out


def _check_result(fn, mode: str, layout: Layout, result) -> None:
    if layout.result.kind == "other":
        raise CallError(f"error: {fn.name}(): @{fn.name} returns {layout.result.name}, which calls over tensors "
                        "cannot return", fn.name)
    if mode == "bwds":
        if layout.result.kind != "void" and not isinstance(result, (Tensor, Mapping)):
            raise CallError(f"error: {fn.name}.bwds: '_result' must be the result (a Tensor, or a dict of Tensors "
                            f"for a struct, with .grad holding the output derivatives), got {type(result).__name__}",
                            "_result")
    elif not (isinstance(result, (Tensor, Mapping)) or (isinstance(result, str) and result in ("tensor", "numpy"))):
        raise CallError(f"error: {fn.name}(): '_result' must be \"tensor\", \"numpy\", a Tensor or a dict of "
                        f"Tensors, got {result!r}", "_result")


def _batch_shape(fn, pieces: list[_Piece], written: list[_Piece]) -> tuple[int, ...]:
    """The batch shape the arrays broadcast to; what the call writes must have it already."""
    arrays = [q for q in pieces if not isinstance(q.value, _NUMBER)]
    batch: tuple[int, ...] = ()
    if arrays and all(q.batch == arrays[0].batch for q in arrays):
        return arrays[0].batch  # the common case: no broadcasting to work out
    for piece in arrays:
        try:
            batch = np.broadcast_shapes(batch, piece.batch)
        except ValueError:
            raise CallError(f"error: {fn.name}(): argument '{piece.path}' has batch shape {piece.batch} (before the "
                            f"{piece.node.name} dimensions), which does not broadcast with {batch}", piece.path) from None
    for piece in written:
        if piece.batch != batch:
            raise CallError(f"error: {fn.name}(): '{piece.path}' is written by the call, so its batch shape must be "
                            f"the call's {batch}, got {piece.batch}", piece.path)
    return tuple(batch)


def _outputs(fn, mode: str, layout: Layout, inputs: list[_Piece], targets: dict, batch: tuple):
    """[(name, what the call returns for it, its pieces)] for the result and out/inout parameters;
    Tensors made where nothing was given, grads where the mode needs them."""
    outputs = []
    for name, node, res in layout.outputs:
        if any(p.name == name and p.direction == "inout" for p in layout.params):
            ps = [q for q in inputs if q.path.split(".")[0] == name]  # written in place
        elif name in targets:
            ps = targets[name]
        else:
            ps = []
            _split(fn, node, _tree(node, lambda n: Tensor((*batch, *n.shape), n.dtype)), name, res, ps)
        outputs.append((name, _rebuild(ps), ps))
    if mode == "bwds" and layout.result.kind != "void":
        for q in outputs[0][2]:
            if q.value.grad is None:
                raise CallError(f"error: {fn.name}.bwds: '{q.path}' has no .grad: call with_grads() and fill it with "
                                "the output derivatives", q.path)
    for _, _, ps in outputs:
        for q in ps:
            if mode != "call" and q.value.grad is None:  # fwds: tangents land here; bwds: an out without one, zero
                q.value.with_grads(zero=mode == "bwds")
    return outputs


def _spec(fn, mode: str, layout: Layout, inputs: list[_Piece], outputs: list, batch: tuple) -> RecordSpec:
    in_specs = []
    for q in inputs:
        leaves = tuple((q.leaf + d, off, w) for d, off, w in q.node.ir_leaves)
        if isinstance(q.value, _NUMBER):
            in_specs.append(PieceSpec("s", 1, leaves))
            continue
        kind = "f" if q.batch == batch else "b"
        diffable = any(fn.diffable[i] for i, _, _ in leaves)
        grad = mode != "call" and diffable and q.value.grad is not None
        if mode == "bwds" and grad and kind == "b" and q.node.dtype != np.float32:
            raise CallError(f"error: {fn.name}.bwds: argument '{q.path}' is broadcast, and accumulating its "
                            f"{q.node.dtype.name} gradient needs atomics that kernels have only for float32: pass it "
                            "at the call's full batch shape", q.path)
        in_specs.append(PieceSpec(kind, q.node.record, leaves, grad, _is_inout(layout, q)))
    out_specs = []
    for name, _, ps in outputs:
        for q in ps:
            alias = next((k for k, r in enumerate(inputs) if r is q), -1)
            first = q.leaf
            if alias >= 0:  # an inout piece counts its leaves among the parameters: here, the results
                p = next(p for p in layout.params if p.name == name)
                first = p.res + (q.leaf - p.arg)
            leaves = tuple((first + d, off, w) for d, off, w in q.node.ir_leaves)
            out_specs.append(OutSpec(q.node.record, leaves, alias))
    return RecordSpec(fn.name, mode, tuple(in_specs), tuple(out_specs), len(batch))


def _is_inout(layout: Layout, q: _Piece) -> bool:
    return bool(layout.inout) and q.path.split(".")[0] in layout.inout


def _rebuild(pieces: list[_Piece]):
    """The Tensor tree an output returns: the pieces' Tensors in the shape of the argument."""
    tensors = iter(q.value for q in pieces)
    paths = [q.path for q in pieces]
    if len(pieces) == 1 and "." not in paths[0]:
        return next(tensors)
    tree: dict = {}
    for q in pieces:
        node = tree
        parts = q.path.split(".")[1:]
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = q.value
    return tree


def _returned(tree, want_numpy: bool, mode: str):
    if isinstance(tree, Mapping):
        return {k: _returned(v, want_numpy, mode) for k, v in tree.items()}
    if not want_numpy:
        return tree
    return tree.to_numpy() if mode == "call" else (tree.to_numpy(), tree.grad.to_numpy())


def _kernel(fn, spec: RecordSpec, names: list[str]):
    """The built kernel for `spec` (once per Function), its loop-overrun status buffers and its
    parameters (record_layout(spec), the layout it was built from)."""
    found = fn._record_kernels.get(spec)
    if found is not None:
        return found
    import pyopencl as cl
    from xdsl.utils.exceptions import PassFailedException

    from diffc import compiler
    from diffc.backend.opencl import build_options, emit_opencl
    from diffc.runtime import module_cache
    from diffc.runtime.device import kernel_settings
    from diffc.runtime.errors import located_failure, with_source_line
    from diffc.runtime.program import build_program
    from diffc.runtime.status import StatusBuffers

    settings = kernel_settings(False)  # (nan-check is not run on calls with records)
    options = compiler.emit_options(settings)
    cached = module_cache.kernel_key(fn.module.cache_key, spec, settings)
    source = module_cache.load_kernel_source(cached)
    status = None
    layout = record_layout(spec)
    if source is None:
        module = fn.module.ir.clone()
        f = next(op for op in module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data == fn.name)
        build_record_kernel(module, f, spec, layout, names)
        primal = compiler.primal_functions(module)
        try:
            lower_kernel_module(module, spec)
            slots = compiler.lower_call_kernel(module, settings, primal)
        except PassFailedException as e:
            raise located_failure(e, fn.module, f"{spec.mode} of @{fn.name}: ") from None
        status = StatusBuffers(slots) if slots else None
        source = with_source_line(emit_opencl, fn.module.sources)(module, options)
        if status is None:
            module_cache.store_kernel_source(cached, source)
    fn.sources[spec] = source
    program = build_program(source, tuple(build_options(options)))
    found = fn._record_kernels[spec] = (cl.Kernel(program, spec.kernel_name), status, layout)
    return found


def _launch(fn, kernel, status, layout: tuple, spec: RecordSpec, inputs: list[_Piece], outputs: list[_Piece], batch,
            size: int):
    """Sets the kernel's arguments in the order of `layout` (record_layout(spec), which the kernel
    was built from) and enqueues it over `size` elements."""
    import pyopencl as cl

    args: list = []
    strides: dict[int, list[int]] = {}
    for key in layout:  # the kernel's parameters, as the builder laid them out
        kind = key[0]
        if kind == "buf":
            args.append(inputs[key[1]].value.buffer)
        elif kind == "grad":
            args.append(inputs[key[1]].value.grad.buffer)
        elif kind == "val":
            q = inputs[key[1]]
            args.append(np.float32(q.value) if q.node.dtype == np.float16 else q.node.dtype.type(q.value))
        elif kind == "out":
            args.append(outputs[key[1]].value.buffer)
        elif kind == "out_grad":
            args.append(outputs[key[1]].value.grad.buffer)
        elif kind == "n":
            args.append(np.int64(size))
        elif kind == "shape":
            args.append(np.int64(batch[key[1]]))
        else:  # ("stride", k, d)
            k = key[1]
            if k not in strides:
                strides[k] = broadcast_strides(inputs[k].batch, batch)
            args.append(np.int64(strides[k][key[2]]))
    if status is not None:
        args.extend(status.buffers)
        status.reset()
    dev = device()
    wg = min(WORK_GROUP, dev.max_work_group_size)
    last = fn._record_args.get(spec)
    if last is None or len(last) != len(args):
        kernel.set_args(*args)
    else:  # kernels keep their arguments: set those that changed (numpy scalars by their bytes)
        for k, (new, old) in enumerate(zip(args, last)):
            if new is not old and not (type(new) is type(old) and isinstance(new, np.generic)
                                       and new.tobytes() == old.tobytes()):
                kernel.set_arg(k, new)
    fn._record_args[spec] = args
    fn.last_event = cl.enqueue_nd_range_kernel(dev.queue, kernel, (-(-size // wg) * wg,), (wg,))
    if status is not None:
        status.check(f"{spec.mode} of @{fn.name}", fn.module.sources)



def pieces(fn, values: dict) -> list[_Piece]:
    """The input pieces of a call's arguments (parameter name -> value)."""
    out: list[_Piece] = []
    for p in fn.layout.params:
        if p.direction != "out":
            _split(fn, p.node, values[p.name], p.name, p.arg, out)
    return out


def batch_of(fn, ps: list[_Piece]) -> tuple[int, ...]:
    batch: tuple[int, ...] = ()
    for q in ps:
        if not isinstance(q.value, _NUMBER):
            batch = np.broadcast_shapes(batch, q.batch)
    return tuple(batch)
