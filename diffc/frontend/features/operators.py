"""Operator overloading: `S operator+(S a, S b)`, `T operator*<T>(T a, T b) where T : IFoo`
(also after `__generic<...>`), unary `S operator-(S a)`, comparisons, and compound forms
`void operator+=(inout S a, S b)`, declared as free functions.

Parsing turns each into an ordinary function whose symbol says the operator and its arity:
`__op_add` (binary `+`), `__op_neg` (unary `-`), `__op_add_assign` (`+=`); every generic one gets
its own template symbol (`__op_add__g1`, `__op_add__g2`), so several generic overloads of one
operator coexist. The checker then rewrites `a + b` into a call of the overload that takes the
operands (in place, as properties.py does for accessors), which is then checked, lowered and
differentiated exactly like a call written by hand.

An operator is looked up only when some overload of it exists and an operand is not a built-in
arithmetic value (scalar, vector, matrix, pointer), or a non-generic overload takes the built-in
operands exactly: programs that overload nothing check and lower as before."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.feature import Feature
from diffc.frontend.errors import ARG_COUNT, TYPE_MISMATCH, UNDEFINED, UNSUPPORTED, FrontendError
from diffc.frontend.generics import infer, substitute
from diffc.frontend.source.lexer import Token
from diffc.frontend.checker.overloads import TYPED_ONCE, conversion_cost
from diffc.frontend.checker.symbols import err

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking
    from diffc.frontend.parser.parser import Parser

KEYWORD = "operator"
PREFIX = "__op_"
BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod", "&": "bitand", "|": "bitor",
          "^": "bitxor", "<<": "shl", ">>": "shr", "==": "eq", "!=": "ne",
          "<": "lt", ">": "gt", "<=": "le", ">=": "ge"}
UNARY = {"-": "neg", "+": "pos", "!": "not", "~": "bitnot"}
# (`&&` and `||` are not overloadable, as in Slang: a call could not short-circuit)
COMPOUND = {op + "=": name + "_assign" for op, name in BINARY.items() if op not in ("==", "!=", "<", ">", "<=", ">=")}
_SOURCE = {PREFIX + n: op for op, n in BINARY.items()} | {PREFIX + n: op for op, n in UNARY.items()} \
    | {PREFIX + n: op for op, n in COMPOUND.items()}
_GENERIC_TAG = "__g"  # `__op_add__g2`: the second generic overload of binary `+`
_RESOLVED = "overload_resolved"  # (overloads.py: the callee names the chosen symbol already)


# ---- parsing -------------------------------------------------------------------------------

def at_operator(p: Parser, k: int = 0) -> bool:
    """At `operator <symbol>` (not `operator()`, the call operator of func_extensions.py)."""
    return p.peek(k).text == KEYWORD and p.peek(k + 1).kind == "punct" and p.peek(k + 1).text != "("


def parse_operator(p: Parser, attrs, mods: set[str], ret: A.TypeRef, start: int, prefix=None) -> A.Func:
    """At `operator <symbol>`, after the result type: the operator as a function whose name
    says the symbol and the parameter count (`_symbol`)."""
    kw = p.tok
    p.i += 1
    op = p.tok
    p.i += 1
    if op.text not in BINARY and op.text not in UNARY and op.text not in COMPOUND:
        raise FrontendError(UNSUPPORTED, f"overloading operator '{op.text}' is not supported", kw.start, op.end)
    f = p.function(attrs, mods, ret, Token("ident", PREFIX + "pending", kw.start, op.end), start, prefix=prefix)
    f.name = _symbol(op, len(f.params))
    return f


def _symbol(op: Token, arity: int) -> str:
    if arity == 1 and op.text in UNARY:
        return PREFIX + UNARY[op.text]
    if arity == 2 and op.text in COMPOUND:
        return PREFIX + COMPOUND[op.text]
    if arity == 2 and op.text in BINARY:
        return PREFIX + BINARY[op.text]
    want = "1 or 2 parameters" if op.text in UNARY and op.text in BINARY else \
        "1 parameter" if op.text in UNARY else "2 parameters"
    raise FrontendError(ARG_COUNT, f"operator '{op.text}' takes {want}, got {arity}", op.start, op.end)


def is_operator(name: str) -> bool:
    return name.startswith(PREFIX)


def source_name(symbol: str) -> str:
    """`operator+` for `__op_add`, `__op_add__g1` or an instance of it; other names as they are."""
    if not symbol.startswith(PREFIX):
        return symbol
    for sym, op in _SOURCE.items():
        if symbol == sym or symbol.startswith(sym + "__"):
            return f"operator{op}"
    return symbol


# ---- declaration ---------------------------------------------------------------------------

def declare(c: Checking, d: A.Func) -> None:
    """Records operator function `d` before the checker declares it; a generic one gets a
    template symbol of its own (the checker keeps one generic function per name)."""
    base = d.name
    c.operator_overloads.add(base)
    if d.generic_params:
        k = 1
        while f"{base}{_GENERIC_TAG}{k}" in c.func_templates:
            k += 1
        d.name = f"{base}{_GENERIC_TAG}{k}"


# ---- resolution ----------------------------------------------------------------------------

def _builtin(t: T.Type) -> bool:
    return isinstance(t, T.Scalar | T.Vector | T.Matrix | T.Pointer)


def binary(c: Checking, e: A.Binary, a: T.Type, b: T.Type) -> T.Type | None:
    """`a op b` as a call of an overload, or None when built-in arithmetic applies."""
    sym = PREFIX + BINARY.get(e.op, "")
    if sym not in c.operator_overloads:
        return None
    if _builtin(a) and _builtin(b) and not _exact_plain(c, sym, [a, b]):
        return None
    found = _candidates(c, sym, [a, b])
    if not found and not _overloadable(a, b):
        return None
    return _as_call(c, e, sym, e.op, [e.lhs, e.rhs], [a, b], found)


def unary(c: Checking, e: A.Unary, t: T.Type) -> T.Type | None:
    sym = PREFIX + UNARY.get(e.op, "")
    if sym not in c.operator_overloads:
        return None
    if _builtin(t) and not _exact_plain(c, sym, [t]):
        return None
    found = _candidates(c, sym, [t])
    if not found and not _overloadable(t):
        return None
    return _as_call(c, e, sym, e.op, [e.operand], [t], found)


def compound(c: Checking, e: A.Assign, t: T.Type) -> T.Type | None:
    """`a op= b` (its target already typed as `t`): a call of an `operator op=` overload that
    takes a as `inout`, else `a = a op b` when `operator op` is overloaded for them; None: the
    built-in form."""
    op = e.op[:-1]
    assign_sym, sym = PREFIX + COMPOUND.get(e.op, ""), PREFIX + BINARY.get(op, "")
    if assign_sym not in c.operator_overloads and sym not in c.operator_overloads:
        return None
    v = c.expr(e.value)
    setattr(e.value, TYPED_ONCE, True)  # the built-in form's check reuses it
    exact = _exact_plain(c, assign_sym, [t, v]) or _exact_plain(c, sym, [t, v])
    if _builtin(t) and _builtin(v) and not exact:
        return None
    found = _candidates(c, assign_sym, [t, v], first_inout=True) if assign_sym in c.operator_overloads else []
    if found:
        setattr(e.target, TYPED_ONCE, True)
        return _as_call(c, e, assign_sym, e.op, [e.target, e.value], [t, v], found)
    if sym not in c.operator_overloads:
        return None
    # `a = a op b`: the target is read and written, so it must be free of side effects
    if any(isinstance(n, A.Call | A.IncDec | A.Assign) for n in A.walk(e.target)):
        raise err(UNSUPPORTED, f"'{e.op}' through an overloaded operator on a target that calls a function or "
                  "assigns is not supported (it would run twice): use a local variable", e.target)
    read = _fresh_copy(e.target)
    e.value = A.Binary(op, read, e.value, span=e.span)
    e.op = "="
    return c._expr(e)


def _candidates(c: Checking, sym: str, types: list[T.Type], first_inout: bool = False) -> list[tuple]:
    """The overloads of operator `sym` that take operands of `types`, cheapest first: tuples
    (cost, is_generic, symbol, generic env)."""
    found = []
    for s in c.overloads.get(sym, [sym]) if sym in c.funcs else []:
        cost = _plain_cost(c, s, types)
        if cost is not None:
            found.append((cost, False, s, None))
    for tname in _templates(c, sym):
        fit = _generic_fit(c, tname, types)
        if fit is not None:
            found.append((fit[0], True, tname, fit[1]))
    if first_inout:
        found = [f for f in found if _first_param_inout(c, f)]
    return sorted(found, key=lambda f: (f[0], f[1]))


def _first_param_inout(c: Checking, f: tuple) -> bool:
    if f[1]:
        params = c.func_templates[f[2]].params
        return bool(params) and _direction(params[0]) == "inout"
    return bool(c.funcs[f[2]].params) and c.funcs[f[2]].params[0].direction == "inout"


def _direction(p: A.Param) -> str:
    return "inout" if "inout" in p.mods else "out" if "out" in p.mods else "in"


def _templates(c: Checking, sym: str) -> list[str]:
    out, k = [], 1
    while f"{sym}{_GENERIC_TAG}{k}" in c.func_templates:
        out.append(f"{sym}{_GENERIC_TAG}{k}")
        k += 1
    return out


def _plain_cost(c: Checking, sym: str, types: list[T.Type]) -> float | None:
    params = c.funcs[sym].params
    return _cost([p.direction for p in params], [p.ty for p in params], types)


def _cost(directions: list[str], param_types: list[T.Type], types: list[T.Type]) -> float | None:
    """The conversion cost of passing operands of `types` (an out/inout one must match exactly)."""
    if len(param_types) != len(types):
        return None
    total = 0.0
    for direction, pt, t in zip(directions, param_types, types):
        cost = (0 if t == pt else None) if direction in ("out", "inout") else conversion_cost(t, pt)
        if cost is None:
            return None
        total += cost
    return total


def _generic_fit(c: Checking, tname: str, types: list[T.Type]) -> tuple[float, dict] | None:
    """(cost, generic arguments) when generic operator `tname` takes operands of `types`: its
    parameters inferred from them, its constraints met; else None."""
    d = c.func_templates[tname]
    if len(d.params) != len(types):
        return None
    env: dict = {}
    for pd, t in zip(d.params, types):
        infer(pd.type, t, d.generic_params, env)
    try:
        c.generic_defaults(d, env)
    except FrontendError:
        return None
    if any(p not in env for p in d.generic_params):
        return None
    for p in d.generic_params:
        v = env[p]
        if (p in d.type_params) == isinstance(v, int):
            return None
        if p in d.type_params:
            try:
                c.ifaces.check_constraints(v, p, d.type_params[p], d)
            except FrontendError as ex:
                if ex.code == UNDEFINED:  # an unknown interface is the declaration's error
                    raise
                return None
    try:
        want = [c.resolve(substitute(pd.type, env)) for pd in d.params]
    except FrontendError:
        return None
    cost = _cost([_direction(pd) for pd in d.params], want, types)
    return None if cost is None else (cost, env)


def _exact_plain(c: Checking, sym: str, types: list[T.Type]) -> bool:
    """Whether a non-generic overload of `sym` takes exactly `types` (it then beats the built-in
    operator, as a non-generic function beats Slang's generic built-in one)."""
    if sym not in c.funcs:
        return False
    return any(_plain_cost(c, s, types) == 0 for s in c.overloads.get(sym, [sym]))


def _overloadable(*types: T.Type) -> bool:
    """Whether operands of `types` are only structs and built-in values, which no other rule
    combines: with no overload for them, the error is about the overloads. (Other operand kinds
    fall through to the built-in checks, which may know them.)"""
    return all(isinstance(t, T.Struct) or _builtin(t) for t in types)


def _as_call(c: Checking, e: A.Expr, sym: str, op: str, args: list[A.Expr], types: list[T.Type],
             found: list[tuple]) -> T.Type:
    """A call of the best overload in `found` (cheapest first), which takes `args`, in `e`'s
    place; checks it."""
    from diffc.frontend.checker.calls import check_call

    shown = ", ".join(str(t) for t in types)
    if not found:
        raise err(TYPE_MISMATCH, f"no overload of operator '{op}' takes ({shown})", e)
    best = [f for f in found if f[:2] == found[0][:2]]
    if len(best) > 1:
        sigs = "; ".join(_signature(c, f) for f in best)
        raise err(TYPE_MISMATCH, f"ambiguous operator '{op}' on ({shown}): candidates {sigs}", e)
    _, generic, target, env = found[0]
    if generic:
        target = c.instantiate_func(target, A.Name(target, span=e.span), [], env=env)
    callee = A.Name(target, span=e.span)
    setattr(callee, _RESOLVED, True)
    for a in args:
        setattr(a, TYPED_ONCE, True)  # typed already: the call's check reuses the types
    call = A.Call(callee, args, span=e.span)
    c.replace(e, call)
    call.ty = check_call(c, call)
    return call.ty


def _signature(c: Checking, f: tuple) -> str:
    _, generic, sym, _env = f
    if generic:
        d = c.func_templates[sym]
        return f"{source_name(sym)}<{', '.join(d.generic_params)}>"
    return f"{source_name(sym)}({', '.join(str(p.ty) for p in c.funcs[sym].params)})"


def _fresh_copy(e: A.Expr) -> A.Expr:
    """An unchecked copy of (side-effect free) target expression `e`, to read it once more."""
    fields = {}
    for f in dataclasses.fields(e):
        if f.name in ("ty", "sym"):
            continue
        v = getattr(e, f.name)
        if isinstance(v, A.Expr):
            v = _fresh_copy(v)
        elif isinstance(v, list):
            v = [_fresh_copy(x) if isinstance(x, A.Expr) else x for x in v]
        fields[f.name] = v
    return type(e)(**fields)


def _declare(c: Checking, d: A.Func) -> None:
    if is_operator(d.name):
        declare(c, d)


FEATURE = Feature(
    "operator overloading", declarator_at=at_operator, parse_declarator=parse_operator, declare_func=_declare,
    # (only programs that overload an operator pay for the search)
    check_unary=lambda c, e, t: unary(c, e, t) if c.operator_overloads else None,
    check_binary=lambda c, e, a, b: binary(c, e, a, b) if c.operator_overloads else None,
    check_compound=lambda c, e, t: compound(c, e, t) if c.operator_overloads else None,
)
