"""Differentiation and pointers: IDifferentiablePtrType parameters and raw-pointer writes.

A differentiable function f with IDifferentiablePtrType parameters is lowered twice: `@f`, its
primal (no diff facts, what plain calls outside derivatives use), and `@f__ptrpair`, its *twin*,
where each such parameter is its DifferentialPtrPair's leaves (the primal's, then the
Differential's), all `no_diff`. fwd_diff(f) / bwd_diff(f) are taken of the twin, so their
signatures hold the Differential as plain inputs, the same leaves a custom derivative's
`DifferentialPtrPair<T>` parameter lowers to; derivatives reach memory through its pointers."""

from __future__ import annotations

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.ast import walk
from diffc.frontend.symbols import err, ptr_param
from diffc.frontend.errors import NOT_DIFFERENTIABLE


def has_ptr_twin(f) -> bool:
    """Whether FuncInfo f is differentiable and has IDifferentiablePtrType parameters."""
    return f.differentiable and any(ptr_param(p) for p in f.params)


def ptr_twin_name(name: str) -> str:
    return f"{name}__ptrpair"


def check_raw_pointer_writes(f, body: A.Block) -> None:
    """Raw pointers are not differentiable (Slang's rule): in a function whose body is
    differentiated, writing a derivative-carrying value through a pointer would drop its
    derivative, so it is E0006. Which values carry one: a flow-insensitive activity analysis from
    the differentiable parameters through locals, calls and arithmetic (reads through pointers,
    detach and no_diff calls carry none)."""
    nodes = list(walk(body))
    active = {id(loc) for p, loc in zip(f.params, f.locals)
              if p.direction != "out" and not p.no_diff and T.is_differentiable(p.ty)}

    def carries(e) -> bool:
        if not isinstance(e, A.Expr) or not T.is_differentiable(e.ty):
            return False
        if isinstance(e, A.Name):
            return id(e.sym) in active
        if isinstance(e, A.Call):
            return not (e.no_diff or e.kind == "detach") and any(carries(a) for a in e.args)
        if isinstance(e, A.Unary) and e.op == "*":
            return False
        if isinstance(e, A.Member | A.Index):
            return not isinstance(e.base.ty, T.Pointer | T.Buffer) and carries(e.base)
        if isinstance(e, A.Ternary):
            return carries(e.a) or carries(e.b)
        if isinstance(e, A.InitList):
            return any(carries(x) for x in e.items)
        return any(carries(v) for k, v in vars(e).items() if k != "ty" and isinstance(v, A.Expr))

    def writes(n) -> list[tuple[A.Expr, bool]]:
        """(target, whether the value written carries a derivative) of each write n makes."""
        if isinstance(n, A.VarDecl) and n.init is not None:
            return [(A.Name(n.name, sym=n.local, span=n.span), carries(n.init))]  # type: ignore[attr-defined]
        if isinstance(n, A.Assign):
            return [(n.target, carries(n.value) or (n.op != "=" and carries(n.target)))]
        if isinstance(n, A.Call) and n.kind == "call":
            _, _, params = n.target
            hot = any(carries(a) for a, p in zip(n.args, params) if p.direction != "out")
            return [(a, hot) for a, p in zip(n.args, params) if p.direction != "in"]
        return []

    changed = True
    while changed:  # locals that get a derivative-carrying value carry one
        changed = False
        for n in nodes:
            for target, hot in writes(n):
                root = _root(target)
                if hot and _through_pointer(target) is None and root is not None and id(root) not in active:
                    active.add(id(root))
                    changed = True
    for n in nodes:
        for target, hot in writes(n):
            ptr = _through_pointer(target)
            if hot and ptr is not None:
                what = f"'{ptr.id}'" if isinstance(ptr, A.Name) else f"a {ptr.ty}"
                raise err(NOT_DIFFERENTIABLE,
                          f"raw pointers are not differentiable: writing a derivative-carrying value through {what} "
                          f"in differentiable '{f.name}' would drop its derivative; detach() the value, or hold the "
                          "pointer in an IDifferentiablePtrType struct and write the gradient in a custom "
                          "backward derivative", target)


def _root(e):
    while isinstance(e, A.Member | A.Index) or (isinstance(e, A.Unary) and e.op == "*"):
        e = e.operand if isinstance(e, A.Unary) else e.base
    return e.sym if isinstance(e, A.Name) else None


def _through_pointer(e):
    """The pointer expression a write to lvalue e goes through, or None."""
    while isinstance(e, A.Member | A.Index) or (isinstance(e, A.Unary) and e.op == "*"):
        inner = e.operand if isinstance(e, A.Unary) else e.base
        if isinstance(inner.ty, T.Pointer):
            return inner
        e = inner
    return None
