"""`__func_extension fwd_diff(f)(params) -> R { body }` and `__func_extension bwd_diff(f)(...)`:
a custom derivative given after (and apart from) the function it belongs to, also for a method
(`fwd_diff(S::m)`, whose `this` is the derivative's first parameter). It is parsed into an
ordinary function carrying `[ForwardDerivativeOf(f)]` / `[BackwardDerivativeOf(f)]`, so an
overloaded f is told apart by the derivative's signature (overloads.py). The generic form
(`__func_extension<T>`) is a located E0008.

`__func_extension __apply(f)(params) -> Tuple<R, Ctx> { body }` gives f's backward derivative as
a forward pass that returns f's result and a context, and the context's `operator()(out dx...,
dOut)` as the backward pass. It becomes two functions: the forward pass as written, and a custom
backward derivative of f ([BackwardDerivativeOf(f)]) that runs it on the primal values, calls
the context with one `out` Differential per differentiable parameter and dOut, and writes those
into the pairs. Tuple and makeTuple come from this feature's prelude (TUPLES), which a program
that names them gets."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend.errors import SYNTAX, UNSUPPORTED, FrontendError
from diffc.frontend.feature import Feature, Prelude
from diffc.frontend.parser.parser import CALL_METHOD
from diffc.frontend.features.subscripts import KEYWORD as SUBSCRIPT, accessor_name

if TYPE_CHECKING:
    from diffc.frontend.parser.parser import Parser

KEYWORD = "__func_extension"
_MODES = {"fwd_diff": "ForwardDerivativeOf", "__fwd_diff": "ForwardDerivativeOf",
          "bwd_diff": "BackwardDerivativeOf", "__bwd_diff": "BackwardDerivativeOf"}


def parse_func_extension(p: Parser, attrs: list[A.Attr], start: int) -> A.Func:
    p.expect(KEYWORD)
    mark = len(p.scoped_type_names)
    prefix = p.generic_params() if p.at("<") else None  # `__func_extension<T : IFloat> bwd_diff(f<T>)`
    try:
        return _parse_func_extension(p, attrs, start, prefix)
    finally:
        p.end_generic(mark)


def _parse_func_extension(p: Parser, attrs: list[A.Attr], start: int, prefix) -> A.Node:
    mode = p.ident("fwd_diff or bwd_diff")
    if mode.text == "__apply":
        return parse_apply(p, attrs, start, mode, prefix)
    if mode.text not in _MODES:
        raise FrontendError(UNSUPPORTED, f"__func_extension {mode.text} is not supported (only fwd_diff, bwd_diff "
                            "and __apply)", mode.start, mode.end)
    p.expect("(")
    target = p.postfix()  # `f`, `S::m` or `S.m`
    if isinstance(target, A.Member) and target.name == SUBSCRIPT and p.at("::"):
        accessor_name(p, target)  # `S::__subscript::get`
    p.expect(")")
    if not (isinstance(target, A.Name) or isinstance(target, A.Member) and isinstance(target.base, A.TypeExpr)):
        raise FrontendError(SYNTAX, "expected a function or a method name, as in fwd_diff(f) or fwd_diff(S::m)",
                            *target.span)
    name = target.id if isinstance(target, A.Name) else f"{target.base.type.name}_{target.name}"
    if prefix is not None and isinstance(target, A.Name):
        # generic: a derivative of the generic f, instantiated with each instance of f
        target = A.Name(target.id, span=target.span)
    # the function reads like `R name(params) { body }` once the target is known
    ret_start = p.tok.start
    func = p.function(attrs + [A.Attr(_MODES[mode.text], [target], span=target.span)], set(),
                      A.TypeRef("void", span=(ret_start, ret_start)), _name_token(p, name, mode), start,
                      arrow_result=True, prefix=prefix)
    return func


def _name_token(p: Parser, name: str, mode):
    from diffc.frontend.source.lexer import Token

    return Token("ident", f"{name}__{mode.text.strip('_')}_ext{mode.start}", mode.start, mode.end)


_NOT_DIFFERENTIABLE = re.compile(r"^(int|uint|bool|u?int(8|16|32|64)_t)\d?$")


def parse_apply(p: Parser, attrs: list[A.Attr], start: int, mode, prefix=None) -> A.Program:
    """`prefix`: the generic parameters of `__func_extension<T : IFloat> __apply(f<T>)`; both
    passes are then generic, the backward one instantiated with each instance of f."""
    p.expect("(")
    target = p.postfix()  # `f`, `f<float>` or `S::m`
    p.expect(")")
    method = isinstance(target, A.Member) and isinstance(target.base, A.TypeExpr)
    if not (isinstance(target, A.Name) or method):
        raise FrontendError(SYNTAX, "expected a function or a method name, as in __apply(f) or __apply(S::m)",
                            *target.span)
    ret_start = p.tok.start
    fname = f"{target.base.type.name}_{target.name}" if method else target.id
    fwd = p.function(attrs, set(), A.TypeRef("void", span=(ret_start, ret_start)),
                     _name_token(p, fname, mode), start, arrow_result=True, prefix=prefix)
    if prefix is not None and isinstance(target, A.Name):
        target = A.Name(target.id, span=target.span)  # the generic f, not one instance
    if method:  # the body's implicit `this` becomes the forward pass's first parameter
        fwd.params.insert(0, A.Param(set(), target.base.type, "this", span=target.span))
    if not (fwd.ret.name == "Tuple" and len(fwd.ret.args) == 2 and all(isinstance(a, A.TypeRef) for a in fwd.ret.args)):
        raise FrontendError(SYNTAX, "__func_extension __apply must return Tuple<Result, Context>", *fwd.ret.span)
    if fwd.generic_params and prefix is None:
        raise FrontendError(UNSUPPORTED, "a generic __apply function is not supported (make the __func_extension "
                            "generic: __func_extension<T> __apply(f<T>)(...))", *fwd.name_span)
    return A.Program([fwd, _backward_of_apply(fwd, target)], span=(start, p.tok.start))


def _backward_of_apply(fwd: A.Func, target: A.Name | A.Member) -> A.Func:
    """The custom backward derivative of f (or of method S::m, whose `this` is fwd's first
    parameter `this` and the derivative's `inout DifferentialPair<S> self`)."""
    at = target.span
    result = fwd.ret.args[0]

    def name(n: str) -> A.Name:
        return A.Name(n, span=at)

    def differential(t: A.TypeRef) -> A.TypeRef:
        return A.TypeRef(t.name + ".Differential", t.args, t.dims, span=at)

    params, primals, body, grads, pairs = [], [], [], [], []
    for q in fwd.params:
        diffable = "no_diff" not in q.mods and not q.type.dims and not _NOT_DIFFERENTIABLE.match(q.type.name)
        if q.name == "this":
            q = A.Param(set(), q.type, "self", span=q.span)  # `this` is no parameter name in the derivative
        if diffable:
            params.append(A.Param({"inout"}, A.TypeRef("DifferentialPair", [q.type], span=at), q.name, span=at))
            primals.append(A.Member(name(q.name), "p", span=at))
            d = f"__d_{q.name}"
            body.append(A.VarDecl("typed", differential(q.type), d, None, span=at))
            grads.append(name(d))
            pairs.append(q.name)
        else:
            params.append(A.Param(set(q.mods) - {"no_diff"}, q.type, q.name, span=at))
            primals.append(name(q.name))
    params.append(A.Param(set(), differential(result), "__dOut", span=at))
    body.insert(0, A.VarDecl("let", None, "__t", A.Call(name(fwd.name), primals, span=at), span=at))
    body.insert(1, A.VarDecl("var", None, "__ctx", A.Member(name("__t"), "_1", span=at), span=at))
    call = A.Call(A.Member(name("__ctx"), CALL_METHOD, name_span=at, span=at), grads + [name("__dOut")], span=at)
    body.append(A.ExprStmt(call, span=at))
    for q, g in zip(pairs, grads):
        pair = A.Call(name("diffPair"), [A.Member(name(q), "p", span=at), g], span=at)
        body.append(A.ExprStmt(A.Assign("=", name(q), pair, span=at), span=at))
    return A.Func([A.Attr("BackwardDerivativeOf", [target], span=at)], set(), A.TypeRef("void", span=at),
                  fwd.name + "_bwd", params, A.Block(body, span=at), name_span=at,
                  generic_params=list(fwd.generic_params), type_params=dict(fwd.type_params))


# pairs of values, as `__apply` returns its result and its context
TUPLES = Prelude("<diffc prelude>", """struct Tuple<T0, T1> { T0 _0; T1 _1; };
Tuple<T0, T1> makeTuple<T0, T1>(T0 a, T1 b) { Tuple<T0, T1> t; t._0 = a; t._1 = b; return t; }
""", frozenset({"Tuple", "makeTuple"}))

FEATURE = Feature("function extensions", prelude=TUPLES, declarations={KEYWORD: parse_func_extension})
