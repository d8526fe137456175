"""Function overloading: several functions (or methods) of one name, told apart by their parameter
types and count, as in Slang/HLSL.

Every overload is an ordinary function with a symbol of its own: the first keeps the source name
(`f`, `S_m`), later ones get `f__float3`-style names. `Checker.overloads` maps the first symbol to
all of them. A call picks the overload whose parameters take the arguments at the lowest
conversion cost (exact match first); a tie is a located error. `fwd_diff(f)(...)` and
`bwd_diff(f)(...)` pick by the derivative's signature, and a custom-derivative attribute that
names an overloaded function picks the overload whose signature fits the derivative."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.checker.symbols import derivative_signature, err
from diffc.frontend.errors import REDEFINED, TYPE_MISMATCH, UNSUPPORTED
from diffc.frontend.checker.inits import INIT

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking
    from diffc.frontend.checker.symbols import FuncInfo, PInfo

_RESOLVED = "overload_resolved"  # set on a Name whose id is already one overload's symbol
TYPED_ONCE = "typed_for_overloads"  # an argument typed to pick an overload: Checking.expr reuses it once
DERIV = {"fwd_diff": "fwd", "__fwd_diff": "fwd", "bwd_diff": "bwd", "__bwd_diff": "bwd"}


def same_signature(a: FuncInfo, b: FuncInfo) -> bool:
    return a.is_static == b.is_static and \
        [(p.ty, p.direction) for p in a.params] == [(p.ty, p.direction) for p in b.params]


def overload_symbol(c: Checking, base: str, f: FuncInfo) -> str:
    """A fresh symbol for a further overload of `base`, readable in the IR: `f__float_float3`."""
    sig = "_".join(_type_tag(p.ty) for p in f.params if p.name != "this") or "void"
    name, k = f"{base}__{sig}", 2
    while name in c.funcs or name in c.func_templates or name in c.structs:
        name, k = f"{base}__{sig}_{k}", k + 1
    return name


def _type_tag(t: T.Type) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in str(t)).strip("_")


def add_overload(c: Checking, base: str, f: FuncInfo) -> None:
    """Records `f` (already given its own symbol) as a further overload of `base`; a second
    definition with the same parameter types is an error."""
    group = c.overloads.setdefault(base, [base])
    for other in group:
        if same_signature(c.funcs[other], f):
            where = f.decl.name_span if f.decl else (0, 0)
            raise err(REDEFINED, f"a second definition of '{base}' with the same parameter types", where)
    group.append(f.name)


# ---- conversion costs ----------------------------------------------------------------------

_NOT_VIABLE = None


def conversion_cost(src: T.Type, dst: T.Type) -> float | None:
    """How far an implicit conversion from `src` to `dst` goes (0: exact); None if there is none.
    Widening within a kind beats changing kind; splatting a scalar and truncating a vector cost more."""
    if src == dst:
        return 0
    if not T.convertible(src, dst):
        return _NOT_VIABLE
    if isinstance(src, T.Scalar) and isinstance(dst, T.Scalar):
        return _scalar_cost(src, dst)
    if isinstance(src, T.Vector) and isinstance(dst, T.Vector):
        return _scalar_cost(src.elem, dst.elem)
    if isinstance(src, T.Scalar) and isinstance(dst, T.Vector | T.Matrix):
        return 10 + _scalar_cost(src, T.elem_of(dst) or src)
    if isinstance(src, T.Vector) and isinstance(dst, T.Scalar):
        return 20 + _scalar_cost(src.elem, dst)
    return 5


_FLOATS = {"half": 0, "float": 1, "double": 2}
# bool -> int -> uint are whole steps; the other widths sit between them (and after uint) at
# fractions, so that they rank by width without making those steps dearer than int -> float
_INTS = {"bool": 0, "int8_t": 0.2, "uint8_t": 0.4, "int16_t": 0.6, "uint16_t": 0.8, "int": 1, "uint": 2,
         "int64_t": 2.5, "uint64_t": 2.75}


def _scalar_cost(a: T.Scalar, b: T.Scalar) -> float:
    if a == b:
        return 0
    for family in (_FLOATS, _INTS):  # widening by one step beats two; narrowing comes after both
        if a.kind in family and b.kind in family:
            step = family[b.kind] - family[a.kind]
            return step if step > 0 else 1 - step
    return 4 if a.kind in _INTS else 6  # int to float before float to int


def _call_cost(c: Checking, params: list[PInfo], args: list[A.Expr], allow_defaults: bool) -> int | None:
    n = len(args)
    if n > len(params):
        return _NOT_VIABLE
    if n < len(params) and not (allow_defaults and all(p.default is not None for p in params[n:])):
        return _NOT_VIABLE
    total = 0
    for a, p in zip(args, params):
        if isinstance(a, A.InitList):
            total += 1  # typed by the parameter it meets
            continue
        got = a.ty
        if p.direction in ("out", "inout"):
            if got != p.ty:
                return _NOT_VIABLE
            continue
        cost = conversion_cost(got, p.ty)
        if cost is None:
            return _NOT_VIABLE
        total += cost
    return total


def _arg_types(c: Checking, args: list[A.Expr]) -> list[str]:
    shown = []
    for a in args:
        if isinstance(a, A.InitList):
            shown.append("{...}")
        else:
            shown.append(str(c.expr(a)))
            setattr(a, TYPED_ONCE, True)  # the call's own check reuses this type (no re-walk)
    return shown


def arg_costs(c: Checking, syms: list[str], args: list[A.Expr]) -> list[int]:
    """The conversion cost of each of the functions `syms` (methods: after `this`) that takes
    `args` at all."""
    _arg_types(c, args)
    costs = []
    for sym in syms:
        params = [p for p in c.funcs[sym].params if p.name != "this"]
        cost = _call_cost(c, params, args, allow_defaults=True)
        if cost is not None:
            costs.append(cost)
    return costs


BOUND_THIS = "bound_this"  # the object of a method call, where the method's overloads mix static ones in


def mixes_static(c: Checking, base: str) -> bool:
    """Whether the overloads of method `base` mix static and instance methods (`T[N] toArray()`
    beside `static T[N] toArray(This x)`): a call through an object may mean either."""
    return len({c.funcs[s].is_static for s in c.overloads.get(base, [base])}) > 1


def bound_this(obj: A.Expr) -> A.Expr:
    """`obj` as the object a method call binds first: a static overload picked drops it again."""
    setattr(obj, BOUND_THIS, True)
    return obj


STATIC_CALL = "static_call"  # a call through the type (`S::m(x)`) of a method with static and instance overloads


def static_call(e: A.Call) -> None:
    setattr(e, STATIC_CALL, True)


def pick(c: Checking, base: str, args: list[A.Expr], where: A.Node, modes: tuple[str, ...] = ()) -> str:
    """The overload of `base` a call with `args` means (through fwd_diff/bwd_diff when `modes`)."""
    shown = _arg_types(c, args)
    if args and getattr(args[0], BOUND_THIS, False):
        shown = shown[1:]  # (the object, which the error does not name among the arguments)
    scored: list[tuple[int, str]] = []
    for sym in c.overloads[base]:
        fi = c.funcs[sym]
        if modes and not fi.differentiable or getattr(where, STATIC_CALL, False) and not fi.is_static:
            continue
        params = derivative_signature(fi, modes)[0] if modes else fi.params
        given = args[1:] if fi.is_static and args and getattr(args[0], BOUND_THIS, False) else args
        cost = _call_cost(c, params, given, allow_defaults=not modes)
        if cost is not None:
            scored.append((cost, sym))
    shown_name = _source_name(c, base)
    if not scored:
        raise err(TYPE_MISMATCH, f"no overload of '{shown_name}' takes ({', '.join(shown)})", where)
    scored.sort()
    if len(scored) > 1 and scored[0][0] == scored[1][0]:
        tied = [s for cost, s in scored if cost == scored[0][0]]
        sigs = "; ".join(_signature(c.funcs[s]) for s in tied)
        raise err(TYPE_MISMATCH, f"ambiguous call of '{shown_name}' with ({', '.join(shown)}): "
                  f"candidates {sigs}", where)
    return scored[0][1]


def _source_name(c: Checking, base: str) -> str:
    """How the source names the function: `f`, a method `m`, a constructor `S`."""
    fi = c.funcs[base]
    if fi.decl is None:
        return base
    if fi.decl.name == INIT and fi.owner is not None:
        return fi.owner.sname
    return fi.decl.name


def _signature(fi: FuncInfo) -> str:
    return f"({', '.join(str(p.ty) for p in fi.params if p.name != 'this')})"


def resolve_call(c: Checking, e: A.Call) -> None:
    """Rewrites an overloaded callee of `e` to the chosen overload's symbol: a plain name, a bound
    method (`this` is already the first argument), or the function inside `fwd_diff(...)` /
    `bwd_diff(...)` chains."""
    callee, modes, holder = e.callee, [], None
    while isinstance(callee, A.Call) and isinstance(callee.callee, A.Name) and callee.callee.id in DERIV \
            and len(callee.args) == 1 and c.lookup(callee.callee.id) is None:
        modes.append(DERIV[callee.callee.id])
        holder, callee = callee, callee.args[0]
    if holder is not None and isinstance(callee, A.Member) and isinstance(callee.base, A.TypeExpr):
        st = c.resolve(callee.base.type)  # `fwd_diff(S::m)`: m's symbol, resolved below when overloaded
        if isinstance(st, T.Struct) and st.methods.get(callee.name) in c.overloads:
            holder.args[0] = callee = A.Name(st.methods[callee.name], span=callee.span)
    if not isinstance(callee, A.Name) or getattr(callee, _RESOLVED, False) or c.lookup(callee.id) is not None:
        return
    if callee.id not in c.overloads:
        return
    callee.id = pick(c, callee.id, e.args, e, tuple(reversed(modes)))
    setattr(callee, _RESOLVED, True)
    if c.funcs[callee.id].is_static and e.args and getattr(e.args[0], BOUND_THIS, False):
        e.args = e.args[1:]  # (a static overload of a method called through an object)


def check_unresolved(c: Checking, e: A.Name) -> None:
    """An overloaded function named other than as a callee (or inside fwd_diff/bwd_diff of one)."""
    if e.id in c.overloads and not getattr(e, _RESOLVED, False):
        raise err(UNSUPPORTED, f"'{_source_name(c, e.id)}' is overloaded: naming it other than in a call "
                  "is not supported", e)


def _same_value_type(a: T.Type, b: T.Type) -> bool:
    """a and b hold the same values: equal, or a struct and its synthesized Differential of the
    same fields (Slang makes such a Differential the struct itself), also inside pairs and arrays."""
    if a == b:
        return True
    if isinstance(a, T.Struct) and isinstance(b, T.Struct):
        return T.same_layout_differential(a, b)
    if isinstance(a, T.Pair) and isinstance(b, T.Pair):
        return _same_value_type(a.elem, b.elem)
    if isinstance(a, T.Array) and isinstance(b, T.Array):
        return a.n == b.n and _same_value_type(a.elem, b.elem)
    return False


def _own_parameters(deriv: FuncInfo):
    """The parameters a derivative spells out: a method's own `this` is none of them; a static
    method or a free function takes the primal's `this` (its pair) as its first parameter."""
    has_this = deriv.owner is not None and not deriv.is_static
    return lambda ps: [p for p in ps if p.name != "this" or not has_this]


def _derivative_fits(deriv: FuncInfo, of: FuncInfo, mode: tuple[str, ...], exact: bool = True) -> bool:
    """Whether deriv's parameters (and, forward, its result) are the derivative signature of
    `of` in `mode`: equal types, else (not `exact`) types of the same values with the same
    directions (a backward derivative's pairs are `inout`: its gradients come back through them)."""
    params, ret = derivative_signature(of, mode)
    keep = _own_parameters(deriv)
    want, got = keep(params), keep(deriv.params)
    if exact:
        return [p.ty for p in want] == [p.ty for p in got] and (mode == ("bwd",) or ret == deriv.ret)
    return len(want) == len(got) and all(_same_value_type(a.ty, b.ty) and a.direction == b.direction
                                         for a, b in zip(want, got)) and \
        (mode == ("bwd",) or _same_value_type(ret, deriv.ret))


def pick_derivative(c: Checking, name: str, f: FuncInfo, key: str, where: A.Node) -> str:
    """For `[ForwardDerivative(g)]` on f (key names the attribute): the overload of g whose
    parameters are f's derivative signature; for `[...DerivativeOf(f)]` on g, f's overload whose
    derivative signature is g's parameters."""
    if name not in c.overloads:
        return name
    mode = ("fwd",) if key.startswith("Forward") else ("bwd",)
    pairs = lambda sym: (c.funcs[sym], f) if not key.endswith("Of") else (f, c.funcs[sym])  # noqa: E731
    fits = [sym for sym in c.overloads[name] if _derivative_fits(*pairs(sym), mode)]
    if len(fits) != 1:
        what = "no overload" if not fits else "more than one overload"
        raise err(TYPE_MISMATCH, f"[{key}({_source_name(c, name)})]: {what} of '{_source_name(c, name)}' "
                  f"has the signature the derivative needs", where)
    return fits[0]


def check_derivative_signature(c: Checking, deriv: FuncInfo, of: FuncInfo, key: str, where: A.Node) -> None:
    """A custom derivative (`[ForwardDerivative(deriv)]` on `of`, or the `...Of` forms) takes
    (and, forward, returns) what fwd_diff / bwd_diff of `of` does: else a located error in the
    program's types, not a signature the IR verifier rejects after lowering."""
    mode = ("fwd",) if key.startswith("Forward") else ("bwd",)
    if deriv.decl is None or _derivative_fits(deriv, of, mode, exact=False):
        return
    params, ret = derivative_signature(of, mode)
    keep = _own_parameters(deriv)

    def shown(ps, r):
        each = ", ".join(("" if p.direction == "in" else p.direction + " ") + str(p.ty) for p in keep(ps))
        return f"({each})" + (f" -> {r}" if mode == ("fwd",) else "")

    raise err(TYPE_MISMATCH, f"[{key}]: {mode[0]}_diff({_source_name(c, of.name)}) is {shown(params, ret)}, "
              f"but '{_source_name(c, deriv.name)}' is {shown(deriv.params, deriv.ret)}", where)
