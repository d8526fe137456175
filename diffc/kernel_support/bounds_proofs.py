"""bounds-check's launch-time proofs (passes/bounds_check.py): which accesses of a kernel, its
own or inside the functions it calls, can run unguarded when the launch's arguments keep their
largest index below the buffer's length.

An index is read as a linear form: nonnegative multiples of terms plus a constant range
[lo, hi] (`Form`). Terms are scalar parameters of the function it is in, a global id, a group id
(below the number of groups), or the counter of a grid-stride loop (lower bound and step built
from work-item ids and constants, upper bound c x a scalar parameter: accumulate-gradients'
loop over the entry point's virtual work-items). Counters of loops with constant bounds, local
ids (below the kernel's reqd_work_group_size) and constants add to [lo, hi], and a part `x` of
an index under an enclosing `if (x < C)` has C - 1 as its largest value; so sums and constant
multiples of all these, through integer casts, are understood, and nothing else.

Callees are summarized, not inlined: a function's accesses to its pointer parameters (and its
callees', transitively) are forms over its own parameters; a call substitutes the forms of its
arguments. At the kernel, a form whose only parameter is the buffer's own offset (its pointer's `diff.abi` offset)
and that has at most one thread term is a proof: offset + scale x (thread < n) + hi < length,
with n the global size (or c x the loop's parameter), or min(n, count) where the access (or the
call reaching it) only runs under `if (thread < count)`.

For each kernel with a proven access the pass adds `@<kernel>__inbounds`. Both call one body,
`@<kernel>__body` (always inlined), with an i1 flag: off from the kernel, on from the variant;
the body's proven accesses run unguarded where the flag is on. The functions it reaches with
pointer parameters that make a proven access, or call one that does, take the flag too (every
call passes its caller's, or false). A callee's access is unguarded under the flag only when
every path from every variant to it was proven; otherwise it stays checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    i1,
)
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.rewriter import Rewriter

from diffc.dialects import kernel
from diffc.dialects.abi import role_of
from diffc.dialects.kernel import ALWAYS_INLINE
from diffc.kernel_support.kernel_params import NAME, append_params, host_buffer, param_name

INBOUNDS_SUFFIX = "__inbounds"
BODY_SUFFIX = "__body"  # a proven kernel's body, which it and its variant call
BODY_OF = "diffc.body_of"  # on such a body: the kernel's name (what reports name)
FLAG_NAME = "diffc_inbounds"  # the body's and the reached functions' flag: the proven accesses unguarded
OWN_LOCAL = "diffc.own_local"  # on a body's parameter: work-group memory the compiler made (not groupshared)
_CASTS = (arith.IndexCastOp, arith.ExtUIOp, arith.ExtSIOp)
_IDS = (kernel.GlobalIdOp, kernel.LocalIdOp, kernel.GroupIdOp, kernel.NumGroupsOp, kernel.LocalSizeOp,
        kernel.GlobalSizeOp)


@dataclass
class Form:
    """sum(coefficient x term) + extra, lo <= extra <= hi; every coefficient and lo are >= 0.
    A term: a scalar parameter (its BlockArgument), ("gid", d), or ("iv", the grid-stride loop)."""

    terms: dict = field(default_factory=dict)
    lo: int = 0
    hi: int = 0

    def scaled(self, c: int) -> Form:
        if c == 0:
            return Form()
        return Form({k: v * c for k, v in self.terms.items()}, self.lo * c, self.hi * c)

    def plus(self, other: Form) -> Form:
        terms = dict(self.terms)
        for k, v in other.terms.items():
            terms[k] = terms.get(k, 0) + v
        return Form(terms, self.lo + other.lo, self.hi + other.hi)


def _constant(v: SSAValue) -> int | None:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _uncast(v: SSAValue) -> SSAValue:
    while isinstance(v.owner, _CASTS):
        v = v.owner.input
    return v


def _nonneg_ids(v: SSAValue) -> bool:
    """Whether `v` is built from work-item ids and sizes and nonnegative constants by + and x."""
    v = _uncast(v)
    owner = v.owner
    if isinstance(owner, _IDS):
        return True
    c = _constant(v)
    if c is not None:
        return c >= 0
    if isinstance(owner, (arith.AddiOp, arith.MuliOp)):
        return _nonneg_ids(owner.lhs) and _nonneg_ids(owner.rhs)
    return False


class Forms:
    """The forms of one function's values (memoized where no cap applies)."""

    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        self.memo: dict[SSAValue, Form | None] = {}
        self.group = kernel.work_group_size(fn)  # reqd_work_group_size, or None

    def of(self, v: SSAValue, caps: dict | None = None) -> Form | None:
        """`caps`: value -> the largest it can be where it is used (from enclosing ifs)."""
        v = _uncast(v)
        if caps:
            f = self._of(v, caps)
            cap = caps.get(v)
            if f is not None and cap is not None and not f.terms and f.lo <= cap < f.hi:
                f = Form({}, f.lo, cap)
            return f
        if v not in self.memo:
            self.memo[v] = None  # (a cycle through loop-carried values: not a form)
            self.memo[v] = self._of(v, None)
        return self.memo[v]

    def at(self, op: Operation, v: SSAValue) -> Form | None:
        """The form of `v` used by `op`, with what the ifs around `op` say about its parts."""
        return self.of(v, caps_at(op))

    def _of(self, v: SSAValue, caps: dict | None) -> Form | None:
        owner = v.owner
        if isinstance(owner, Block):
            parent = owner.parent_op()
            if parent is self.fn:
                return Form({v: 1}) if isinstance(v.type, (IntegerType, IndexType)) else None
            if isinstance(parent, scf.ForOp) and v is parent.body.block.args[0]:
                return self._counter(parent)
            return None
        if isinstance(owner, kernel.GlobalIdOp):
            return Form({("gid", owner.dim.value.data): 1})
        if isinstance(owner, kernel.LocalIdOp) and self.group is not None:
            return Form({}, 0, self.group[owner.dim.value.data] - 1)
        if isinstance(owner, kernel.GroupIdOp) and self.group is not None:
            return Form({("grp", owner.dim.value.data, self.group[owner.dim.value.data]): 1})
        c = _constant(v)
        if c is not None:
            return Form({}, c, c) if c >= 0 else None
        if isinstance(owner, arith.MuliOp):
            for x, k in ((owner.lhs, owner.rhs), (owner.rhs, owner.lhs)):
                c = _constant(_uncast(k))
                if c is not None and c >= 0:
                    inner = self.of(x, caps)
                    return None if inner is None else inner.scaled(c)
            return None
        if isinstance(owner, arith.AddiOp):
            a, b = self.of(owner.lhs, caps), self.of(owner.rhs, caps)
            return None if a is None or b is None else a.plus(b)
        return None

    def _counter(self, loop: scf.ForOp) -> Form | None:
        lb, ub, step = _constant(loop.lb), _constant(loop.ub), _constant(loop.step)
        if None not in (lb, ub, step):
            if lb < 0 or step <= 0 or ub <= lb:
                return None
            return Form({}, lb, ub - 1)
        # a grid-stride loop: counter in [lb, ub) with lb >= 0 and a step >= 0
        if not (_nonneg_ids(loop.lb) and _nonneg_ids(loop.step)):
            return None
        u = self.of(loop.ub)
        if u is None:
            return None
        if not u.terms:
            return Form({}, 0, u.hi - 1) if u.hi >= 1 else None
        if limit(loop, self.fn) is not None:
            return Form({("iv", loop): 1})
        return None


def caps_at(op: Operation) -> dict:
    """value -> C - 1 for each `if (value <u C)` / `<s` (C a constant) whose then-branch holds `op`."""
    caps: dict = {}
    child, parent = op, op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        if isinstance(parent, scf.IfOp) and child.parent_region() is parent.true_region:
            cmp = parent.cond.owner
            if isinstance(cmp, arith.CmpiOp) and arith.CMPI_COMPARISON_OPERATIONS[cmp.predicate.value.data] in ("ult", "slt"):
                c = _constant(_uncast(cmp.rhs))
                if c is not None and c >= 1:
                    v = _uncast(cmp.lhs)
                    caps[v] = min(c - 1, caps.get(v, c - 1))
        child, parent = parent, parent.parent_op()
    return caps


def limit(loop: scf.ForOp, fn: func.FuncOp) -> tuple[BlockArgument, int] | None:
    """(parameter, c) when the loop's upper bound is c x a scalar parameter of `fn`."""
    u = Forms(fn).of(loop.ub)
    if u is None or u.lo or u.hi or len(u.terms) != 1:
        return None
    ((param, c),) = u.terms.items()
    return (param, c) if isinstance(param, BlockArgument) and param.owner.parent_op() is fn else None


def thread_key(v: SSAValue, forms: Forms):
    """("gid", d) or ("iv", loop) when `v` is that thread term itself (through casts), else None."""
    f = forms.of(v)
    if f is None or f.lo or f.hi or len(f.terms) != 1:
        return None
    ((key, c),) = f.terms.items()
    return key if c == 1 and isinstance(key, tuple) else None


def _accesses():
    from xdsl.dialects import memref

    return (memref.LoadOp, memref.StoreOp, kernel.AtomicAddOp, kernel.AtomicRMWOp)


# An entry: (path of ops from the function down to the access, buffer parameter index or None, form or None)
Entry = tuple


class Summaries:
    def __init__(self, module: ModuleOp):
        self.funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}
        self.done: dict[str, list[Entry]] = {}

    def of(self, fn: func.FuncOp) -> list[Entry]:
        """Every access to a host buffer that `fn` makes or its callees make through its pointer
        parameters, with the index's form over `fn`'s parameters (None where it has none)."""
        name = fn.sym_name.data
        if name in self.done:
            return self.done[name]
        self.done[name] = []  # (recursion: what a cycle reaches is not summarized)
        params = {a: i for i, a in enumerate(fn.body.block.args)}
        forms = Forms(fn)
        out: list[Entry] = []
        access = _accesses()
        for op in fn.walk():
            if isinstance(op, access) and op.memref in params and host_buffer(op.memref.type):
                (idx,) = op.indices
                out.append(((op,), params[op.memref], forms.at(op, idx)))
            elif isinstance(op, func.CallOp):
                callee = self.funcs.get(op.callee.root_reference.data)
                if callee is None or not callee.body.blocks:
                    continue
                for path, j, f in self.of(callee):
                    buf = op.arguments[j] if j is not None else None
                    if buf not in params:
                        out.append(((op, *path), None, None))
                    else:
                        out.append(((op, *path), params[buf], _substitute(f, op, forms)))
        self.done[name] = out
        return out


def _substitute(f: Form | None, call: func.CallOp, forms: Forms) -> Form | None:
    """A callee's form over its parameters as a form over the caller's, at `call`."""
    if f is None:
        return None
    out = Form({}, f.lo, f.hi)
    for key, c in f.terms.items():
        if isinstance(key, BlockArgument):
            arg = forms.at(call, call.arguments[key.index])
            if arg is None:
                return None
            out = out.plus(arg.scaled(c))
        elif key[0] in ("gid", "grp"):
            out = out.plus(Form({key: c}))
        else:
            return None  # a grid-stride loop of the callee's: its bound is not the kernel's
    return out


# -- the kernel's proofs ---------------------------------------------------------------------

_BELOW = {"ult": False, "slt": False, "uge": True, "sge": True}  # thread <pred> count: below unless negated
_ABOVE = {"ugt": False, "sgt": False, "ule": True, "sle": True}  # count <pred> thread


def _is_true(v: SSAValue) -> bool:
    from xdsl.dialects.builtin import i1

    return _constant(v) not in (None, 0) and v.type == i1


def _yielded(region) -> bool | None:
    """The constant an scf.if region yields (a single i1), else None."""
    if len(region.blocks) != 1 or not isinstance(region.block.last_op, scf.YieldOp):
        return None
    (v,) = region.block.last_op.operands or (None,)
    c = None if v is None else _constant(v)
    return None if c is None else c != 0


def _condition(v: SSAValue) -> tuple[arith.CmpiOp, bool] | None:
    """(compare, negated) when i1 `v` is a compare, its negation (xori with true), or an scf.if
    that yields true / false by a compare (how `if (tid >= count) return;` arrives here)."""
    negated = False
    while True:
        owner = v.owner
        if isinstance(owner, arith.CmpiOp):
            return owner, negated
        if isinstance(owner, arith.XOrIOp) and _is_true(owner.rhs):
            v, negated = owner.lhs, not negated
        elif isinstance(owner, scf.IfOp) and len(owner.results) == 1:
            ends = [_yielded(r) for r in owner.regions]
            if ends == [True, False]:
                v = owner.cond
            elif ends == [False, True]:
                v, negated = owner.cond, not negated
            else:
                return None
        else:
            return None


def _scalar_param(v: SSAValue, names: dict) -> str | None:
    v = _uncast(v)
    return names.get(v) if isinstance(v.type, (IntegerType, IndexType)) else None


def guard_count(op: Operation, key, names: dict, forms: Forms) -> str | None:
    """The kernel parameter `count` when `op` only runs where thread term `key` < count (an
    enclosing scf.if on that compare: `if (tid < count)`, or `if (tid >= count) return;`)."""
    child, parent = op, op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        if isinstance(parent, scf.IfOp):
            in_then = child.parent_region() is parent.true_region
            cond = _condition(parent.cond)
            if cond is not None:
                cmp, negated = cond
                negated = negated != (not in_then)
                pred = arith.CMPI_COMPARISON_OPERATIONS[cmp.predicate.value.data]
                count = None
                if pred in _BELOW and _BELOW[pred] == negated and thread_key(cmp.lhs, forms) == key:
                    count = _scalar_param(cmp.rhs, names)
                elif pred in _ABOVE and _ABOVE[pred] == negated and thread_key(cmp.rhs, forms) == key:
                    count = _scalar_param(cmp.lhs, names)
                if count is not None:
                    return count
        child, parent = parent, parent.parent_op()
    return None


def _proof(f: Form | None, own_offset: BlockArgument | None, names: dict) -> tuple | None:
    """(offset parameter or "", thread key or None, scale, extra) when form `f` of an access to
    a buffer can be proven at launch; `own_offset`: the offset parameter of the buffer's pointer
    (its kernel ABI role says which), the one parameter the index may add."""
    if f is None:
        return None
    offset, thread, scale = "", None, 0
    for key, c in f.terms.items():
        if isinstance(key, BlockArgument):
            if key is not own_offset or c != 1:
                return None
            offset = names[key]
        elif thread is None:
            thread, scale = key, c
        else:
            return None
    return offset, thread, scale, f.hi


def _dim(thread, fn: func.FuncOp, names: dict) -> str:
    """The proof's dimension column: d of a global id, "g<d>/<R>" of a group id (below the
    global size along d / R), or "<parameter>*<c>" for a grid-stride loop's counter (below c x
    the parameter)."""
    if thread is None:
        return "0"
    if thread[0] == "gid":
        return str(thread[1])
    if thread[0] == "grp":  # a group id: below global size d / the group's size
        return f"g{thread[1]}/{thread[2]}"
    param, c = limit(thread[1], fn)
    return f"{names[param]}*{c}"


@dataclass
class Variants:
    proofs: list[str] = field(default_factory=list)  # the PROOFS rows
    # a proven access -> the flag (an i1 parameter of its function) under which it runs unguarded
    flags: dict[Operation, SSAValue] = field(default_factory=dict)
    shown: dict[str, str] = field(default_factory=dict)  # a kernel's shared body -> the kernel's name


def _own_offset(k: func.FuncOp, j: int) -> BlockArgument | None:
    """The offset parameter that goes with memref parameter j of kernel k, if j is a pointer."""
    role = role_of(k, j)
    return k.body.block.args[j + 1] if role is not None and role.role.data == "pointer" else None


def add_variants(module: ModuleOp) -> Variants:
    """Adds the __inbounds variants of the module's kernels and the clones of their callees."""
    summaries = Summaries(module)
    out = Variants()
    kernels = [f for f in module.ops if isinstance(f, func.FuncOp) and f.body.blocks and kernel.is_kernel(f)]
    proven_paths: dict[str, list[tuple]] = {}
    bad_callee_ops: set[Operation] = set()
    for k in kernels:
        names = {a: param_name(k, i) for i, a in enumerate(k.body.block.args)}
        forms = Forms(k)
        rows: dict[tuple, int] = {}  # (buffer, offset, dim, count, scale) -> the largest extra
        good, bad = [], []
        for path, j, f in summaries.of(k):
            buffer = names[k.body.block.args[j]] if j is not None else None
            p = _proof(f, _own_offset(k, j), names) if j is not None else None
            if p is None:
                bad.append(path)
                continue
            offset, thread, scale, extra = p
            count = guard_count(path[0], thread, names, forms) if thread is not None and scale else None
            key = (buffer, offset, _dim(thread, k, names), count or "", scale)
            rows[key] = max(extra, rows.get(key, extra))
            good.append(path)
        if not good:
            continue
        proven_paths[k.sym_name.data] = good
        bad_callee_ops.update(p[-1] for p in bad if len(p) > 1)
        variant = k.sym_name.data + INBOUNDS_SUFFIX
        for (buffer, offset, dim, count, scale), extra in sorted(rows.items()):
            out.proofs.append(f"{k.sym_name.data}|{variant}|{buffer}|{offset}|{dim}|{count}|{scale}|{extra}")
    if not proven_paths:
        return out
    # the functions the kernels reach that take a host buffer and make a proven access (or call
    # one that does) take the flag too; every call of theirs passes its caller's flag, else off
    funcs = summaries.funcs
    callee_ok = {p[-1] for paths in proven_paths.values() for p in paths if len(p) > 1} - bad_callee_ops
    flagged = {_function_of(op).sym_name.data for op in callee_ok}
    changed = True
    while changed:
        changed = False
        for name, g in funcs.items():
            if (name not in flagged and g.body.blocks and not kernel.is_kernel(g)
                    and any(host_buffer(t) for t in g.function_type.inputs.data)
                    and any(isinstance(o, func.CallOp) and o.callee.root_reference.data in flagged for o in g.walk())):
                flagged.add(name)
                changed = True
    flag_of = {name: append_params(funcs[name], [(i1, FLAG_NAME)])[0] for name in sorted(flagged)}
    bodies: dict[str, func.FuncOp] = {}
    for name in proven_paths:
        body, own = _shared_body(funcs[name], module)
        bodies[name] = body
        flag_of[body.sym_name.data] = body.body.block.args[-1]
        out.shown[body.sym_name.data] = name
        out.flags.update((own[p[0]], body.body.block.args[-1]) for p in proven_paths[name] if len(p) == 1)
    for f in [f for f in module.ops if isinstance(f, func.FuncOp) and f.body.blocks]:
        for call in [o for o in f.walk() if isinstance(o, func.CallOp)]:
            if call.callee.root_reference.data in flagged:
                _add_operand(call, flag_of.get(f.sym_name.data) or _bool_before(call, False))
    out.flags.update((op, flag_of[_function_of(op).sym_name.data]) for op in callee_ok)
    for name, body in bodies.items():
        _call_body(funcs[name], body, module)
    return out


def _shared_body(k: func.FuncOp, module: ModuleOp) -> tuple[func.FuncOp, dict[Operation, Operation]]:
    """`@<k>__body`: k's body as a function of k's parameters, the work-group memory k allocates
    (OpenCL allows `__local` arrays only at a kernel's top level) and the flag; and k's ops ->
    the body's. Always inlined, so each variant's compiler sees the body with its flag constant."""
    body = k.clone()
    own = dict(zip(k.walk(), body.walk()))
    body.sym_name = StringAttr(k.sym_name.data + BODY_SUFFIX)
    body.attributes.clear()
    body.attributes[ALWAYS_INLINE] = UnitAttr()
    body.attributes[BODY_OF] = StringAttr(k.sym_name.data)
    block = body.body.block
    for alloc in [o for o in block.ops if isinstance(o, kernel.LocalAllocOp)]:
        named = alloc.attributes.get(NAME)
        (arg,) = append_params(body, [(alloc.result.type, named.data if isinstance(named, StringAttr)
                                       else alloc.result.name_hint or "local")])
        if not isinstance(named, StringAttr):
            _set_arg_attr(body, len(block.args) - 1, OWN_LOCAL, UnitAttr())
        alloc.result.replace_all_uses_with(arg)
        alloc.detach()
        alloc.erase()
    append_params(body, [(i1, FLAG_NAME)])
    module.body.block.insert_op_before(body, k)
    return body, own


def _call_body(k: func.FuncOp, body: func.FuncOp, module: ModuleOp) -> None:
    """k's ops become a call of its body with the flag off, and its __inbounds variant (k's
    clone) calls it with the flag on."""
    block = k.body.block
    allocs = [o for o in block.ops if isinstance(o, kernel.LocalAllocOp)]
    for o in reversed(list(block.ops)):
        if o not in allocs:
            o.detach()
            o.erase()
    flag = arith.ConstantOp(IntegerAttr(0, i1))
    call = func.CallOp(body.sym_name.data, [*block.args, *(a.result for a in allocs), flag.result], [])
    for o in (flag, call, func.ReturnOp()):
        block.add_op(o)
    variant = k.clone()
    variant.sym_name = StringAttr(k.sym_name.data + INBOUNDS_SUFFIX)
    off = next(o for o in variant.body.block.ops if isinstance(o, arith.ConstantOp))
    Rewriter.replace_op(off, arith.ConstantOp(IntegerAttr(1, i1)))
    module.body.block.insert_op_after(variant, k)


def _function_of(op: Operation) -> func.FuncOp:
    fn = op.parent_op()
    while not isinstance(fn, func.FuncOp):
        fn = fn.parent_op()  # type: ignore[union-attr]
    return fn


def _set_arg_attr(f: func.FuncOp, i: int, key: str, value) -> None:
    attrs = list(f.arg_attrs.data)  # type: ignore[union-attr]
    attrs[i] = DictionaryAttr({**attrs[i].data, key: value})
    f.arg_attrs = ArrayAttr(attrs)


def _bool_before(at: Operation, value: bool) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(int(value), i1))
    at.parent_block().insert_op_before(c, at)  # type: ignore[union-attr]
    return c.result


def _add_operand(call: func.CallOp, value: SSAValue) -> None:
    new = func.CallOp(call.callee, [*call.arguments, value], [r.type for r in call.results])
    new.attributes.update(call.attributes)
    Rewriter.replace_op(call, new)
