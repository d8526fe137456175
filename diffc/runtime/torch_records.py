"""PyTorch tensors in calls of functions with vector, matrix, array, struct, half or out/inout
parameters (record_calls.py): torch_bridge.py does this for scalar functions.

Arguments may be torch tensors at any depth of a struct's dict; the call returns torch tensors
in the shape record_calls returns (a tensor, a dict for a struct, a dict of out/inout
parameters). When an input requires grad, the outputs come from `_RecordCall`, a
`torch.autograd.Function` whose backward runs the function's bwds kernel, so `loss.backward()`
fills the inputs' `.grad`. An `inout` torch tensor is not written in place (autograd forbids
changing an input it saved): its new value is in the returned dict. Out parameters are returned;
a torch tensor given for one is written with the value (and holds no autograd history).
Broadcast inputs whose gradient needs atomics the kernels lack (other than float32) are expanded to the call's
batch shape and their gradient summed back in torch.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

import numpy as np

from diffc.runtime import record_calls
from diffc.runtime.errors import CallError
from diffc.runtime.tensor import Tensor
from diffc.runtime.torch_bridge import (_host, _to_torch, add_to_grad, first_order_only, input_grads, refuse_float64,
                                        require_torch)


def _paths(tree, path: str, out: list) -> None:
    """(path, torch tensor) of each torch tensor in a struct argument's dict."""
    import torch

    if isinstance(tree, torch.Tensor):
        out.append((path, tree))
    elif isinstance(tree, Mapping):
        for k, v in tree.items():
            _paths(v, f"{path}.{k}", out)


def _replace(tree, path: str, new: dict):
    """The argument with each torch tensor at a path in `new` replaced by new[path]."""
    if path in new:
        return new[path]
    if isinstance(tree, Mapping):
        return {k: _replace(v, f"{path}.{k}", new) for k, v in tree.items()}
    return tree


def _flat(tree) -> list:
    if isinstance(tree, Mapping):
        return [x for v in tree.values() for x in _flat(v)]
    return [tree]


def _unflat(tree, it):
    if isinstance(tree, Mapping):
        return {k: _unflat(v, it) for k, v in tree.items()}
    return next(it)


def call(fn, mode: str, args: tuple, kwargs: dict, result):
    torch = require_torch(f"{fn.name}()")
    values = record_calls.bind(fn, fn.layout, args, kwargs)
    if mode == "fwds":
        return _fwds(fn, values, torch)
    if mode == "bwds":
        return _bwds(fn, values, result)
    if not (isinstance(result, str) and result in ("tensor", "torch", "numpy")):
        raise CallError(f"error: {fn.name}(): with torch tensors, '_result' is \"torch\" (the default) or \"numpy\", "
                        f"got {result!r}", "_result")
    leaves: list = []
    for name, v in values.items():
        _paths(v, name, leaves)
    _refuse_float64(fn, values, leaves, torch)
    like = leaves[0][1] if leaves else None
    outs_given = {p.name: values[p.name] for p in fn.layout.params if p.direction == "out" and values[p.name] is not None}
    host = {name: _replace(v, name, {p: _host(t) for p, t in leaves}) for name, v in values.items()
            if name not in outs_given}
    for p in fn.layout.params:  # not written through the numpy view of a torch tensor's memory
        if p.direction == "inout" and p.name in host:
            host[p.name] = _map(host[p.name], lambda a: np.array(a) if isinstance(a, np.ndarray) else a)
    grad = fn.differentiable and torch.is_grad_enabled() and any(t.requires_grad for _, t in leaves)
    if grad:
        box: dict = {}
        flat = _record_class().apply(fn, host, [p for p, _ in leaves], box, *[t for _, t in leaves])
        out = _unflat(box["shape"], iter(flat))
    else:
        out = _to_torch_tree(record_calls.run(fn, "call", (), host, "numpy"), like)
    if isinstance(out, Mapping):
        for name, target in outs_given.items():  # out parameters given a torch tensor: written
            with torch.no_grad():
                for t, v in zip(_flat(target), _flat(out[name])):
                    t.copy_(v)
            out[name] = target
        for p in fn.layout.params:  # an inout torch tensor that takes no gradient: written in place
            if p.direction == "inout" and not grad:
                given = _flat(values[p.name])
                for t, v in zip(given, _flat(out[p.name])):
                    if isinstance(t, torch.Tensor):
                        t.copy_(v)
    if result == "numpy":
        return _map(out, lambda t: t.detach().cpu().numpy())
    return out


def _refuse_float64(fn, values: dict, leaves: list, torch) -> None:
    """torch_bridge.refuse_float64 for each float64 torch leaf, by the dtype of its piece."""
    wide = [(p, t) for p, t in leaves if t.dtype == torch.float64]
    if not wide:
        return
    ins = {name: _replace(v, name, {p: _host(t) for p, t in leaves}) for name, v in values.items()}
    kinds = {q.path: q.node.dtype for q in record_calls.pieces(fn, ins)}  # (the in and inout pieces)
    for p, t in wide:
        if p in kinds:
            refuse_float64(fn.name, p, t, kinds[p])


def _map(tree, f):
    if isinstance(tree, Mapping):
        return {k: _map(v, f) for k, v in tree.items()}
    return f(tree)


def _to_torch_tree(tree, like):
    return _map(tree, lambda a: _to_torch(a, like))


def _record_class():
    global _RECORD_CLASS
    if _RECORD_CLASS is None:
        _RECORD_CLASS = _make_record_class()
    return _RECORD_CLASS


_RECORD_CLASS = None


def _make_record_class():
    import torch

    class _RecordCall(torch.autograd.Function):
        """The outputs of a record call by its call kernel; the inputs' gradients by its bwds kernel."""

        @staticmethod
        def forward(ctx, fn, host, paths, box, *tensors):
            fresh = {k: _map(v, lambda a: np.array(a) if isinstance(a, np.ndarray) else a) for k, v in host.items()}
            out = record_calls.run(fn, "call", (), fresh, "numpy")  # (inout arrays are written: copies)
            box["shape"] = out
            ctx.fn, ctx.host, ctx.paths = fn, host, paths
            ctx.save_for_backward(*tensors)
            ctx.shape = out
            return tuple(_to_torch(a, tensors[0]) for a in _flat(out))

        @staticmethod
        def backward(ctx, *grads):
            fn, paths = ctx.fn, ctx.paths
            tensors = ctx.saved_tensors
            wants = ctx.needs_input_grad[4:]
            with torch.no_grad():
                outs = _unflat(ctx.shape, iter(grads))
                got = backward_grads(fn, ctx.host, ctx.shape, outs, [p for p, w in zip(paths, wants) if w])
                result = (None, None, None, None, *input_grads(paths, tensors, wants, got))
            if torch.is_grad_enabled():  # create_graph=True: a second backward must fail loudly
                return first_order_only(fn.name, result, (*tensors, *grads))
            return result

    return _RecordCall


def backward_grads(fn, host: dict, shape, douts, want: list[str]) -> dict[str, np.ndarray]:
    """Runs `fn.bwds` at the host arguments with output derivatives `douts` (torch tensors or
    None, in the tree of the call's outputs `shape`) and returns the gradient of each argument
    path in `want`."""
    layout = fn.layout
    pieces = record_calls.pieces(fn, host)
    batch = record_calls.batch_of(fn, pieces)
    tensors: dict[str, Tensor] = {}
    inout = {p.name for p in layout.params if p.direction == "inout"}
    for q in pieces:
        if q.path in want or q.path.split(".")[0] in inout:  # inout pieces carry their output derivative
            a = np.asarray(q.value)
            if q.batch != batch and a.dtype != np.float32:  # no atomics for its gradient: expand
                a = np.broadcast_to(a, (*batch, *q.node.shape))
            tensors[q.path] = Tensor.from_numpy(np.ascontiguousarray(a)).with_grads(zero=True)
    args = {name: _replace(v, name, tensors) for name, v in host.items()}
    named = shape if isinstance(shape, Mapping) and any(p.direction != "in" for p in layout.params) else {"_result": shape}
    named_douts = douts if named is shape else {"_result": douts}
    result = None
    for name, tree in named.items():
        d = named_douts[name]
        made = _unflat(tree, iter([
            Tensor.from_numpy(np.ascontiguousarray(a)).with_grads(
                Tensor.from_numpy(np.ascontiguousarray(_host(g) if g is not None else np.zeros_like(a), dtype=a.dtype)),
                zero=False)
            for a, g in zip(_flat(tree), _flat(d) if isinstance(d, Mapping) else [d])]))
        p = next((q for q in layout.params if q.name == name), None)
        if name == "_result":
            result = made
        elif p.direction == "out":
            args[name] = made
        else:  # inout: its input Tensors carry the output derivative in .grad
            old = args[name]
            for t, m in zip(_flat(old), _flat(made)):
                if isinstance(t, Tensor) and t.grad is not None:
                    t.grad.copy_(m.grad)
                elif isinstance(t, Tensor):
                    t.with_grads(m.grad, zero=False)
    record_calls.run(fn, "bwds", (), args, result)
    return {p: t.grad.to_numpy() for p, t in tensors.items()}


def _fwds(fn, values: dict, torch):
    """Each torch input's `.grad` is its tangent; returns torch outputs with `.grad` set."""
    leaves: list = []
    for name, v in values.items():
        _paths(v, name, leaves)
    _refuse_float64(fn, values, leaves, torch)
    like = leaves[0][1] if leaves else None
    made = {}
    for p, t in leaves:
        d = Tensor.from_numpy(np.ascontiguousarray(_host(t)))
        if t.grad is not None:
            d.with_grads(Tensor.from_numpy(np.ascontiguousarray(_host(t.grad), dtype=d.dtype)), zero=False)
        made[p] = d
    out = record_calls.run(fn, "fwds", (), {n: _replace(v, n, made) for n, v in values.items() if v is not None},
                           "tensor")

    def back(t: Tensor):
        y = _to_torch(t.to_numpy(), like)
        y.grad = _to_torch(t.grad.to_numpy(), like)
        return y

    return _map(out, back)


def _bwds(fn, values: dict, result):
    """`_result` (torch tensors, a dict for a struct) holds the output derivatives in `.grad`;
    each torch input that requires grad gets its gradient added to `.grad`."""
    leaves: list = []
    for name, v in values.items():
        _paths(v, name, leaves)
    _refuse_float64(fn, values, leaves, require_torch(f"{fn.name}.bwds"))
    host = {n: _replace(v, n, {p: _host(t) for p, t in leaves}) for n, v in values.items() if v is not None}
    if result is None:
        raise CallError(f"error: {fn.name}.bwds: '_result' must be the result, with .grad holding the output "
                        "derivatives", "_result")
    shape = _map(result, lambda t: _host(t))
    douts = _map(result, lambda t: t.grad)
    if any(g is None for g in _flat(douts)):
        raise CallError(f"error: {fn.name}.bwds: '_result' has no .grad: set it to the output derivatives", "_result")
    if any(p.direction != "in" for p in fn.layout.params):
        raise CallError(f"error: {fn.name}.bwds: with torch tensors, functions with out/inout parameters take "
                        "their gradients through autograd (loss.backward())", fn.name)
    want = [p for p, t in leaves if t.requires_grad]
    got = backward_grads(fn, host, shape, douts, want)
    for p, t in leaves:
        g = got.get(p)
        if g is not None:
            add_to_grad(t, g)
    return None


def _torch_leaves(tree):
    torch = sys.modules.get("torch")
    if torch is None:
        return
    if isinstance(tree, torch.Tensor):
        yield tree
    elif isinstance(tree, Mapping):
        for v in tree.values():
            yield from _torch_leaves(v)
    elif isinstance(tree, (list, tuple)):
        for v in tree:
            yield from _torch_leaves(v)


def holds_torch(args, kwargs, result) -> bool:
    """Whether a call's arguments (at any depth of a dict) or `_result` hold a torch tensor, or
    `_result` is "torch" (cheap when torch was never imported: then none can)."""
    return (isinstance(result, str) and result == "torch") or next(_torch_leaves([args, kwargs, result]), None) is not None
