"""Static facts about `for` loops that reverse mode needs: the trip count of a loop over an int
counter with constant start, bound and step, and the shape the lowering turns into `scf.for`."""

from __future__ import annotations

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.ast import walk
from diffc.frontend.generics import fold_int
from diffc.frontend.parser.parser import SCALAR_ALIASES

_COMPARE = {
    "<": lambda i, b: i < b, "<=": lambda i, b: i <= b, ">": lambda i, b: i > b,
    ">=": lambda i, b: i >= b, "!=": lambda i, b: i != b,
}


def trip_count(s: A.For) -> int | None:
    """The number of iterations of `for (int i = A; i CMP B; STEP)` with constants A and B, a
    constant step (i++, i--, i += c, i -= c, i = i + c, i = i - c) and no other assignment to i;
    None when the loop is not of that form or does not end."""
    init, cond = s.init, s.cond
    kind = counter_kind(init)
    if kind is None:
        return None
    v = init.name
    if not (isinstance(cond, A.Binary) and cond.op in _COMPARE and isinstance(cond.lhs, A.Name)
            and cond.lhs.id == v):
        return None
    start, bound, delta = int_constant(init.init), int_constant(cond.rhs), _step_of(s.step, v)
    if start is None or bound is None or not delta or _assigns_outside_step(s, v):
        return None
    if not _COMPARE[cond.op](start, bound):
        return 0
    if cond.op == "!=":
        n, rem = divmod(bound - start, delta)
        count = n if rem == 0 and n > 0 else None
    elif (cond.op in ("<", "<=")) == (delta > 0):
        last = bound if cond.op in ("<=", ">=") else bound - (1 if delta > 0 else -1)
        count = (last - start) // delta + 1
    else:
        return None  # moves away from the bound
    lo, hi = T.int_range(T.Scalar(kind))
    if count is not None and not (lo <= start <= hi and lo <= start + count * delta <= hi):
        return None  # the counter wraps around (an unsigned one below 0, a narrow one past its top)
    return count


# counters that scf.for (which compares signed) runs over; loops over other unsigned counters are
# while loops, so a bound past the signed range still ends them
SCF_COUNTERS = ("int", "uint", "int8_t", "int16_t", "int64_t")


def counter_kind(init) -> str | None:
    """The integer kind of a `for` loop's counter `int i = a` (any width), else None."""
    if not (isinstance(init, A.VarDecl) and init.init is not None and init.type is not None
            and not init.type.dims and not init.type.pointer):
        return None
    kind = SCALAR_ALIASES.get(init.type.name, init.type.name)
    return kind if kind in T.INT_KINDS else None


def int_constant(e: A.Expr | None) -> int | None:
    """The value of an int expression of literals, `static const` ints (global or a struct's),
    integer casts of those, and + - * / % << >>; else None."""
    if isinstance(e, A.Num) and not e.is_float:
        return int(e.value)
    if isinstance(e, A.Unary) and e.op == "-":
        x = int_constant(e.operand)
        return None if x is None else -x
    if isinstance(e, A.Binary):  # a left chain `1 + 2 + ... + n` in a loop, not by recursion
        chain = []
        while isinstance(e, A.Binary):
            chain.append(e)
            e = e.lhs
        value = int_constant(e)
        for node in reversed(chain):
            value = fold_int(node.op, value, int_constant(node.rhs))
        return value
    # a `static const int N = 3;` (the checker bound the name), or a struct's `S.N`
    sym = getattr(e, "sym", None) if isinstance(e, A.Name) else getattr(e, "static", None)
    if sym is not None and getattr(sym, "value", None) is not None and T.is_int_scalar(sym.ty):
        return int_constant(sym.value)
    # `uint8_t(250)`, `(int16_t)3`: a constant converted to an integer type keeps its low bits
    type_name, arg = None, None
    if isinstance(e, A.Cast):
        type_name, arg = e.type.name, e.operand
    elif isinstance(e, A.Call) and isinstance(e.callee, A.TypeExpr) and len(e.args) == 1:
        type_name, arg = getattr(e.callee.type, "name", None), e.args[0]
    x = int_constant(arg) if type_name in T.INT_KINDS else None
    if x is None:
        return None
    bits, signed = T.INT_KINDS[type_name]
    x %= 1 << bits
    return x - (1 << bits) if signed and x >= 1 << (bits - 1) else x


def _step_of(step: A.Expr | None, v: str) -> int | None:
    """The constant added to v by a for loop's step expression."""
    def is_v(t):
        return isinstance(t, A.Name) and t.id == v

    if isinstance(step, A.IncDec) and is_v(step.target):
        return 1 if step.op == "++" else -1
    if isinstance(step, A.Assign) and is_v(step.target):
        if step.op in ("+=", "-="):
            c = int_constant(step.value)
            return None if c is None else (c if step.op == "+=" else -c)
        val = step.value
        if step.op == "=" and isinstance(val, A.Binary) and val.op in ("+", "-") and is_v(val.lhs):
            c = int_constant(val.rhs)
            return None if c is None else (c if val.op == "+" else -c)
    return None


def _assigns_outside_step(s: A.For, v: str) -> bool:
    return assigns_to(s.body, v) or assigns_to(s.cond, v)


def for_shape(s: A.For):
    """(var, lb expr, ub expr, step, inclusive) for `for (int i = a; i < b; i++ / i += c)`."""
    init, cond, step = s.init, s.cond, s.step
    if counter_kind(init) not in SCF_COUNTERS:
        return None
    v = init.name
    if not (isinstance(cond, A.Binary) and cond.op in ("<", "<=") and isinstance(cond.lhs, A.Name)
            and cond.lhs.id == v):
        return None
    if isinstance(step, A.IncDec) and step.op == "++" and isinstance(step.target, A.Name) and step.target.id == v:
        k = 1
    elif (isinstance(step, A.Assign) and step.op == "+=" and isinstance(step.target, A.Name)
          and step.target.id == v and isinstance(step.value, A.Num) and not step.value.is_float
          and int(step.value.value) > 0):
        k = int(step.value.value)
    else:
        return None
    if assigns_to(s.body, v):
        return None
    return v, init.init, cond.rhs, k, cond.op == "<="


def assigns_to(node, name: str) -> bool:
    """Whether `name` is assigned anywhere inside node."""
    for n in walk(node):
        if isinstance(n, A.Assign | A.IncDec):
            t = n.target
            while isinstance(t, A.Member | A.Index):
                t = t.base
            if isinstance(t, A.Name) and t.id == name:
                return True
    return False


def own_jumps(node):
    """break/continue statements that belong to this loop (not to nested loops)."""
    if isinstance(node, A.Break | A.Continue):
        yield node
        return
    if isinstance(node, A.For | A.While):
        return
    if isinstance(node, list):
        for x in node:
            yield from own_jumps(x)
        return
    if isinstance(node, A.Switch):
        for c in node.cases:
            yield from (j for j in own_jumps(c.body) if isinstance(j, A.Continue))
        return
    if isinstance(node, A.Stmt):
        for v in vars(node).values():
            if isinstance(v, A.Stmt | list):
                yield from own_jumps(v)


def runs_at_most_once(body: A.Stmt) -> bool:
    """A loop body that ends in an unconditional `break` or `return` and has no `continue` of its
    own leaves the loop in its first iteration (a `for (;;) { ...; break; }` block)."""
    last = body
    while isinstance(last, A.Block) and last.stmts:
        last = last.stmts[-1]
    return isinstance(last, A.Break | A.Return) and not any(isinstance(j, A.Continue) for j in own_jumps(body))


def static_bound(s: A.For | A.While) -> int | None:
    """The most iterations a loop can run, known from its text: a constant-bounds `for`, or a
    body that always leaves in the first iteration."""
    n = trip_count(s) if isinstance(s, A.For) else None
    if n is None and runs_at_most_once(s.body):
        return 1
    return n


def never_ends(s: A.For | A.While) -> bool:
    """A loop whose condition is a nonzero constant (or missing: `for (;;)`) and whose body has no
    `break` of its own and no `return`: nothing can leave it."""
    cond = s.cond
    if cond is not None:
        value = int(cond.value) if isinstance(cond, A.BoolLit) else int_constant(cond)
        if not value:
            return False
    if any(isinstance(j, A.Break) for j in own_jumps(s.body)):
        return False
    return not any(isinstance(n, A.Return) for n in walk(s.body))
