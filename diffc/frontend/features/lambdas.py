"""Lambda expressions: `let f = (int r, int c) => m[r * N + c];` and `let g = (float x) => { ...
return y; };`, called in the function that declares them (`f(i, j)`).

A lambda is lifted to a function of its own: its parameters are the variables it captures, then
its own; its body is the expression's `return` or the block. Captures are by value, as Slang's
are: where the lambda is declared, each captured variable is copied into a hidden local, and a
call `f(a, b)` calls the lifted function with those copies and a, b. The declaration itself
becomes the copies' declarations. The lifted function is differentiable where the function that
declares the lambda is, so derivatives go through a lambda's call like through any call.

Refused, located (E0008): a lambda anywhere but as a local's initializer, a lambda inside a
method that reads the struct's fields (`this` is not captured)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.checker.symbols import Local, err
from diffc.frontend.errors import ARG_COUNT, UNSUPPORTED
from diffc.frontend.feature import Feature

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking


@dataclass
class Lambda(A.Expr):
    params: list[A.Param]
    body: A.Expr | A.Block


@dataclass(frozen=True)
class LambdaType(T.Type):
    """The type of a local holding a lambda: the lifted function and the hidden copies of what
    it captures, passed first."""

    func: str
    captures: tuple[str, ...]
    arity: int

    def name(self) -> str:
        return f"lambda {self.func}"


# ---- parsing ------------------------------------------------------------------------------------


def _closing_paren(p, i: int) -> int | None:
    depth = 0
    for j in range(i, len(p.toks)):
        t = p.toks[j]
        if t.kind == "punct" and t.text == "(":
            depth += 1
        elif t.kind == "punct" and t.text == ")":
            depth -= 1
            if depth == 0:
                return j
        elif t.kind == "eof":
            return None
    return None


def _parse_lambda(p) -> Lambda | None:
    """`(params) => expression` or `(params) => { statements }` at the current `(`."""
    first, second = p.peek(1), p.peek(2)
    if not (first.text == ")" or first.kind == "ident" and second.kind == "ident" or
            first.kind == "ident" and first.text in ("in", "out", "inout", "no_diff")):
        return None  # (a parenthesized expression: no parameter list starts so)
    j = _closing_paren(p, p.i)
    if j is None or j + 2 >= len(p.toks):
        return None
    eq, gt = p.toks[j + 1], p.toks[j + 2]
    if not (eq.text == "=" and gt.text == ">" and eq.end == gt.start):
        return None
    start = p.tok.start
    params = p.param_list()
    p.i += 2  # `=>`
    body = p.block() if p.at("{") else p.assignment()
    return Lambda(params, body, span=p.span_from(start))


# ---- checking -----------------------------------------------------------------------------------


def _declared_inside(body) -> set[str]:
    return {n.name for n in A.walk(body) if isinstance(n, A.VarDecl)}


def _captures(c: Checking, e: Lambda) -> list[tuple[str, T.Type]]:
    """The enclosing function's variables the body reads, in order of first use."""
    own = {p.name for p in e.params} | _declared_inside(e.body)
    out: dict[str, T.Type] = {}
    for n in A.walk(e.body):
        if isinstance(n, A.Name) and n.id not in own and n.id not in out:
            loc = c.lookup(n.id)
            if loc is not None and not loc.is_global and loc.value is None:
                out[n.id] = loc.ty
    return list(out.items())


def _result_type(c: Checking, e: Lambda, params: list[tuple[str, T.Type]]) -> T.Type:
    """The type the body gives back: of the expression, or of the block's first `return` (typed
    on copies, with the block's earlier locals declared in order)."""
    c.scopes.append({name: Local(name, ty, True) for name, ty in params})
    try:
        if not isinstance(e.body, A.Block):
            return c.expr(copy.deepcopy(e.body))
        for n in A.walk(e.body):
            if isinstance(n, A.VarDecl):
                ty = c.resolve(n.type) if n.type is not None else c.expr(copy.deepcopy(n.init))
                c.scopes[-1][n.name] = Local(n.name, ty, True)
            elif isinstance(n, A.Return):
                return c.expr(copy.deepcopy(n.value)) if n.value is not None else T.VOID
        return T.VOID
    finally:
        c.scopes.pop()


def _check_lambda(c: Checking, e: Lambda) -> T.Type:
    holder = c.checking[-2] if len(c.checking) >= 2 else None
    if not (isinstance(holder, A.VarDecl) and holder.init is e and holder.type is None) or c.func is None:
        raise err(UNSUPPORTED, "a lambda other than a local's initializer (`let f = (int i) => ...;`) is not "
                  "supported", e)
    owner = c.func.owner
    if owner is not None:
        for n in A.walk(e.body):
            if isinstance(n, A.Name) and c.lookup(n.id) is None and owner.field(n.id) is not None:
                raise err(UNSUPPORTED, f"a lambda that reads field '{n.id}' of the struct (capturing `this`) is "
                          "not supported: copy it into a local first", n)
    captures = _captures(c, e)
    params = [(p.name, c.resolve(p.type)) for p in e.params]
    ret = _result_type(c, e, captures + params)
    name = f"{c.func.name}__lambda_{holder.name}_{e.span[0]}"

    # the copies, declared where the lambda is (captures by value)
    copies = []
    for cname, ty in captures:
        hidden = f"__{name}_{cname}"
        d = A.VarDecl("let", None, hidden, A.Name(cname, span=e.span), is_const=True, span=e.span)
        c.expect_type(d.init, ty)
        d.decl_ty = ty
        d.local = c.declare(hidden, ty, False)  # type: ignore[attr-defined]
        copies.append(d)
    c.replace(holder, A.DeclGroup(copies, span=holder.span))

    body = e.body if isinstance(e.body, A.Block) else A.Block([A.Return(e.body, span=e.body.span)], span=e.body.span)
    fparams = [A.Param(set(), A.TypeRef(str(ty), fixed=ty, span=e.span), cname, span=e.span) for cname, ty in captures]
    fparams += e.params
    attrs = [A.Attr("Differentiable", span=e.span)] if c.func.differentiable else []
    lifted = A.Func(attrs, set(), A.TypeRef(str(ret), fixed=ret, span=e.span), name, fparams, body,
                    name_span=e.span)
    saved = c.outside_functions()
    try:
        c.add_func(c.func_info(lifted))
    finally:
        c.restore(saved)
    return LambdaType(name, tuple(f"__{name}_{cname}" for cname, _ in captures), len(e.params))


def _check_call(c: Checking, e: A.Call, local: Local) -> T.Type | None:
    lam = local.ty
    if not isinstance(lam, LambdaType):
        return None
    if len(e.args) != lam.arity:
        raise err(ARG_COUNT, f"the lambda '{e.callee.id}' takes {lam.arity} arguments, got {len(e.args)}", e)
    hidden = [A.Name(h, span=e.callee.span) for h in lam.captures]
    call = A.Call(A.Name(lam.func, span=e.callee.span), [*hidden, *e.args], no_diff=e.no_diff, span=e.span)
    return c.expr(c.replace(e, call))


FEATURE = Feature(
    "lambdas",
    parse_primary=_parse_lambda,
    check_expr={Lambda: _check_lambda},
    check_local_call=_check_call,
)
