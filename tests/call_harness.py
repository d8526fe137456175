"""Checks a module function's `.fwds` and `.bwds` over tensors against float64 central differences
of its plain call, and against each other (<u, J v> = <J^T u, v>), whatever its parameter types:

    check_call_derivatives(m.f, {"p": np.random.rand(4, 3), "s": {"pos": ..., "w": ...}})

Every float array among the arguments (at any depth of a struct's dict) is an input of the
Jacobian; numbers, integer arrays and the names in `fixed` are held. The outputs are what the
call returns: the result, or the dict of out/inout parameters and "_result".
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

import diffc

FD_STEP = 1e-6


def flat(tree) -> list:
    if isinstance(tree, Mapping):
        return [x for v in tree.values() for x in flat(v)]
    return [tree]


def unflat(tree, it):
    if isinstance(tree, Mapping):
        return {k: unflat(v, it) for k, v in tree.items()}
    return next(it)


def _is_input(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def _copy(tree):
    return unflat(tree, iter([a.copy() if isinstance(a, np.ndarray) else a for a in flat(tree)]))


def jacobian(fn, args: dict, fixed=()) -> tuple[np.ndarray, np.ndarray]:
    """(outputs flattened, d outputs / d inputs) by central differences of fn(..., _result="numpy")."""
    names = [k for k in args if k not in fixed]
    leaves = [a for k in names for a in flat(args[k]) if _is_input(a)]
    sizes = [a.size for a in leaves]

    def evaluate(theta: np.ndarray) -> np.ndarray:
        it = iter(np.split(theta, np.cumsum(sizes)[:-1]))
        new = {}
        for k, v in args.items():
            if k in fixed:
                new[k] = _copy(v)
                continue
            new[k] = unflat(v, iter([next(it).reshape(a.shape).astype(a.dtype) if _is_input(a) else a for a in flat(v)]))
        out = fn(**new, _result="numpy")
        return np.concatenate([np.asarray(o, np.float64).ravel() for o in flat(out)])

    theta0 = np.concatenate([a.ravel().astype(np.float64) for a in leaves]) if leaves else np.zeros(0)
    y0 = evaluate(theta0)
    jac = np.zeros((y0.size, theta0.size))
    for j in range(theta0.size):
        e = np.zeros_like(theta0)
        e[j] = FD_STEP
        jac[:, j] = (evaluate(theta0 + e) - evaluate(theta0 - e)) / (2 * FD_STEP)
    return y0, jac


def _tensor(a: np.ndarray, grad: np.ndarray | None) -> diffc.Tensor:
    t = diffc.Tensor.from_numpy(np.ascontiguousarray(a))
    if grad is not None:
        t.with_grads(diffc.Tensor.from_numpy(np.ascontiguousarray(grad.reshape(a.shape).astype(a.dtype))), zero=False)
    return t


def check_call_derivatives(fn, args: dict, fixed=(), seed: int = 0, rtol: float = 1e-6, atol: float = 1e-8) -> None:
    rng = np.random.default_rng(seed)
    y0, jac = jacobian(fn, args, fixed)
    v = rng.standard_normal(jac.shape[1])
    u = rng.standard_normal(jac.shape[0])
    layout = fn.layout
    inout = {p.name for p in layout.params if p.direction == "inout"}
    out_params = [p.name for p in layout.params if p.direction == "out"]

    def tensor_args(tangents: np.ndarray | None):
        """The arguments as Tensors; float inputs carry `tangents` (in input order) as .grad."""
        it = iter(np.split(tangents, np.cumsum([a.size for k in args if k not in fixed
                                                 for a in flat(args[k]) if _is_input(a)])[:-1])) if tangents is not None else None
        inputs: list[diffc.Tensor] = []
        new = {}
        for k, val in args.items():
            if k in fixed:
                new[k] = _copy(val)
                continue
            parts = []
            for a in flat(val):
                if _is_input(a):
                    t = _tensor(a, next(it) if it is not None else np.zeros(a.size))
                    inputs.append(t)
                    parts.append(t)
                else:
                    parts.append(a)
            new[k] = unflat(val, iter(parts))
        return new, inputs

    # forward mode: J v
    fargs, _ = tensor_args(v)
    out = fn.fwds(**fargs)
    jv = np.concatenate([t.grad.to_numpy().astype(np.float64).ravel() for t in flat(out)])
    np.testing.assert_allclose(jv, jac @ v, rtol=rtol, atol=atol, err_msg="fwds vs finite differences")

    # reverse mode: J^T u. The outputs, in the call's order, take u as their .grad.
    plain = fn(**{k: _copy(val) for k, val in args.items()}, _result="numpy")
    names = ["_result"] if not isinstance(plain, Mapping) or not (inout or out_params) else list(plain)
    trees = {"_result": plain} if names == ["_result"] else dict(plain)
    sizes = [a.size for name in names for a in flat(trees[name])]
    us = iter(np.split(u, np.cumsum(sizes)[:-1]))
    bargs, inputs = tensor_args(None)
    result = None
    for name in names:
        tree = trees[name]
        if name in inout:  # its input Tensors' .grad holds the output derivative
            for t in [x for x in flat(bargs[name]) if isinstance(x, diffc.Tensor)]:
                t.grad.copy_from_numpy(next(us).reshape(t.shape).astype(t.dtype))
            continue
        made = unflat(tree, iter([_tensor(a, next(us)) for a in flat(tree)]))
        if name == "_result":
            result = made
        else:
            bargs[name] = made
    fn.bwds(**bargs, _result=result)
    jtu = np.concatenate([t.grad.to_numpy().astype(np.float64).ravel() for t in inputs]) if inputs else np.zeros(0)
    np.testing.assert_allclose(jtu, jac.T @ u, rtol=rtol, atol=atol, err_msg="bwds vs finite differences")
    np.testing.assert_allclose(u @ jv, jtu @ v, rtol=1e-9, atol=1e-9, err_msg="<u, Jv> != <J^T u, v>")
