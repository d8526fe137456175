"""Type checking of intrinsic calls (`sin(x)`, `clamp(v, 0, 1)`, `sincos(x, s, c)`), of
`float.getPi()`, and of intrinsics used as functions: `fwd_diff(sin)`, `bwd_diff(cross)`.

An intrinsic given to fwd_diff/bwd_diff has no one signature (it is generic over float types and
vector sizes), so it stays a `T.BuiltinRef` until the derivative is called; the argument types
then fix the instance: a `[Differentiable]` function `__builtin_cross__float3(a0, a1)` whose body
calls the intrinsic, checked and lowered like user code, so its derivatives come from the same
rules as the intrinsic's inside any other function."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.checker.builtins import BUILTINS, FLOAT_CONSTANTS
from diffc.frontend.checker.symbols import FuncInfo, PInfo, err
from diffc.frontend.errors import ARG_COUNT, TYPE_MISMATCH, UNKNOWN_MEMBER, UNSUPPORTED

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

_BITS_TO = {"asfloat": T.FLOAT, "asint": T.INT, "asuint": T.UINT}
_VECTOR_ONLY = {"dot", "cross", "reflect", "refract"}


def _count(e: A.Call, what: str, n: int) -> None:
    if len(e.args) != n:
        raise err(ARG_COUNT, f"{what} expects {n} argument{'s' if n != 1 else ''}, got {len(e.args)}", e)


def check_builtin(c: Checking, e: A.Call, name: str) -> T.Type:
    b = BUILTINS[name]
    _count(e, name, b.arity)
    outs = [i for i, k in enumerate(b.params) if k == "o"]
    ts = []
    for i, a in enumerate(e.args):
        ts.append(c.lvalue(a) if i in outs else c.expr(a))
    common, params, result = builtin_signature(name, ts, e.args, e)
    for i in outs:
        if ts[i] != params[i]:
            raise err(TYPE_MISMATCH, f"{name} needs a variable of type {params[i]} here, got {ts[i]}", e.args[i])
    e.kind = "builtin"
    e.target = (name, common)
    return result


def builtin_signature(name: str, ts: list[T.Type], args: list[A.Node], at: A.Node
                      ) -> tuple[T.Type, list[T.Type], T.Type]:
    """(T, the parameter types, the result type) of intrinsic `name` applied to arguments of
    types `ts` (errors at `args` / `at`)."""
    b = BUILTINS[name]
    matrix = next((t for t in ts if isinstance(t, T.Matrix)), None)
    for a, t in zip(args, ts):
        if not (T.is_numeric(t) or isinstance(t, T.Matrix)):
            raise err(TYPE_MISMATCH, f"{name} needs numbers, got {t}", a)
    if matrix is not None:
        common = _matrix_common(name, ts, args, matrix)
    else:
        kinds = b.params or "T" * b.arity
        common = ts[0]
        for a, t, k in zip(args[1:], ts[1:], kinds[1:]):
            if k == "S":
                continue
            nxt = T.common_type(common, t)
            if nxt is None:
                raise err(TYPE_MISMATCH, f"{name}: cannot combine {common} and {t}", a)
            common = nxt
    el = T.elem_of(common) if not isinstance(common, T.Matrix) else common.elem
    assert el is not None
    if b.result == "bits":
        if el.kind not in ("float", "int", "uint"):
            raise err(TYPE_MISMATCH, f"{name} needs 32-bit float, int or uint values, got {common}", at)
        return common, [common], T.with_elem(common, _BITS_TO[name])
    if b.result not in ("same", "bool", "bool_same", "int_same") and not T.is_float_scalar(el):
        common = _with_elem(common, T.FLOAT)
        el = T.FLOAT
    if b.result == "bool_same" and not T.is_float_scalar(el) or b.result == "int_same" and T.is_unsigned(el):
        want = "float" if b.result == "bool_same" else "float or int"
        raise err(TYPE_MISMATCH, f"{name} needs {want} values, got {common}", at)
    if name in _VECTOR_ONLY and not isinstance(common, T.Vector):
        raise err(TYPE_MISMATCH, f"{name} needs vectors, got {common}", at)
    if name == "cross" and common.n != 3:  # type: ignore[union-attr]
        raise err(TYPE_MISMATCH, f"cross needs 3-vectors, got {common}", at)
    params = [el if k == "S" else common for k in (b.params or "T" * b.arity)]
    result = {
        "same": common, "float_same": common, "scalar": el, "void": T.VOID, "bool": T.BOOL,
        "int_same": T.with_elem(common, T.INT), "bool_same": T.with_elem(common, T.BOOL),
    }[b.result]
    return common, params, result


def _with_elem(t: T.Type, e: T.Scalar) -> T.Type:
    if isinstance(t, T.Matrix):
        return T.Matrix(e, t.rows, t.cols)
    return T.with_elem(t, e)


def _matrix_common(name: str, ts: list[T.Type], args: list[A.Node], m: T.Matrix) -> T.Matrix:
    """Elementwise intrinsics apply to a matrix row by row; every argument is then a matrix of
    its shape or a scalar."""
    b = BUILTINS[name]
    if not b.elementwise or b.result not in ("same", "float_same", "void"):
        raise err(TYPE_MISMATCH, f"{name} is not defined on matrices, got {m}", args[ts.index(m)])
    elem = m.elem
    for a, t in zip(args, ts):
        if isinstance(t, T.Matrix) and (t.rows, t.cols) != (m.rows, m.cols) or isinstance(t, T.Vector):
            raise err(TYPE_MISMATCH, f"{name}: cannot combine {m} and {t}", a)
        e = t.elem if isinstance(t, T.Matrix) else t
        if T.RANK[e.kind] > T.RANK[elem.kind]:  # type: ignore[union-attr]
            elem = e  # type: ignore[assignment]
    return T.Matrix(elem, m.rows, m.cols)


def check_type_method(c: Checking, e: A.Call, callee: A.Member) -> T.Type | None:
    """`float.getPi()` and the like: a constant of a float type (None: not such a call)."""
    if callee.name not in FLOAT_CONSTANTS:
        return None
    t = c.resolve(callee.base.type)  # type: ignore[attr-defined]
    if not T.is_float_scalar(t):
        raise err(UNKNOWN_MEMBER, f"type {t} has no method '{callee.name}'", callee.name_span)
    _count(e, f"{t}.{callee.name}", 0)
    e.kind = "float_constant"
    e.target = FLOAT_CONSTANTS[callee.name]
    return t


# ---- intrinsics as functions: fwd_diff(sin), bwd_diff(cross) -----------------------------------


def instantiate_builtin(c: Checking, ref: T.BuiltinRef, e: A.Call) -> T.FuncRef:
    """The instance of intrinsic `ref.builtin` that call `e` of `ref` (a derivative of it) needs,
    as a reference to a function with the same derivative modes."""
    b = BUILTINS[ref.builtin]
    kinds = b.params or "T" * b.arity
    n_in = sum(1 for k in kinds if k != "o")
    if len(e.args) < n_in:
        raise err(ARG_COUNT, f"{ref.name()} needs at least {n_in} arguments, got {len(e.args)}", e)
    ts = []
    for a in e.args[:n_in]:
        if isinstance(a, A.InitList):
            raise err(UNSUPPORTED, f"the type of this argument of {ref.name()} cannot be inferred from an "
                      "initializer list: give it a type", a)
        t = c.expr(a)
        for _ in ref.mode:  # fwd_diff(fwd_diff(sin)) takes DifferentialPair<DifferentialPair<float>>
            if isinstance(t, T.Pair):
                t = t.elem
        ts.append(t)
    # sincos-like intrinsics: an out parameter has the type of the first input
    it = iter(zip(ts, e.args))
    full = [(ts[0], e) if k == "o" else next(it) for k in kinds]
    _, params, result = builtin_signature(ref.builtin, [t for t, _ in full], [a for _, a in full], e)
    fname = "__builtin_" + ref.builtin + "__" + "_".join(re.sub(r"\W", "", t.name()) for t in params)
    if fname not in c.funcs:
        _declare_instance(c, fname, ref.builtin, params, result, kinds, e)
    return T.FuncRef(fname, ref.mode)


def _declare_instance(c: Checking, fname: str, name: str, params: list[T.Type], result: T.Type, kinds: str,
                      at: A.Node) -> None:
    span = at.span
    names = [f"a{i}" for i in range(len(params))]
    pinfos = [PInfo(n, t, "out" if k == "o" else "in") for n, t, k in zip(names, params, kinds)]
    call = A.Call(A.Name(name, span=span), [A.Name(n, span=span) for n in names], span=span)
    body = A.Block([A.ExprStmt(call, span=span) if result == T.VOID else A.Return(call, span=span)], span=span)
    decl = A.Func([A.Attr("Differentiable", span=span)], set(), A.TypeRef("void", span=span), fname,
                  [A.Param({"out"} if k == "o" else set(), A.TypeRef("void", span=span), n, span=span)
                   for n, k in zip(names, kinds)], body, name_span=span, span=span)
    f = FuncInfo(fname, pinfos, result, decl=decl, attrs={"Differentiable": decl.attrs[0]})
    saved = c.outside_functions()
    c.add_func(f)
    c.restore(saved)
