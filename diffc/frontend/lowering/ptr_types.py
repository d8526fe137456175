"""Differentiation and pointers: IDifferentiablePtrType parameters (raw-pointer writes are
frontend/lowering/derivative_checks.py's).

A differentiable function f with IDifferentiablePtrType parameters is lowered twice: `@f`, its
primal (no diff facts, what plain calls outside derivatives use), and `@f__ptrpair`, its *twin*,
where each such parameter is its DifferentialPtrPair's leaves (the primal's, then the
Differential's), all `no_diff`. fwd_diff(f) / bwd_diff(f) are taken of the twin, so their
signatures hold the Differential as plain inputs, the same leaves a custom derivative's
`DifferentialPtrPair<T>` parameter lowers to; derivatives reach memory through its pointers."""

from __future__ import annotations

from diffc.frontend.checker.symbols import ptr_param


def has_ptr_twin(f) -> bool:
    """Whether FuncInfo f is differentiable and has IDifferentiablePtrType parameters."""
    return f.differentiable and any(ptr_param(p) for p in f.params)


def ptr_twin_name(name: str) -> str:
    return f"{name}__ptrpair"
