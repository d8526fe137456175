"""diff-fwd: forward-mode differentiation (JVP over differential pairs).

Every `diff.fwd_diff @f(...)` becomes `func.call @f_fwd(...)`, where `@f_fwd` has
`fwd_signature(f)` and computes, next to each primal value of `f`, its tangent. Callees of a
differentiable function get their own derivative (`@g_fwd`, generated once); a function with
`diff.fwd_derivative = @h` is replaced by `@h` everywhere.

Inside a generated function every source value `v` maps to a primal value and a tangent; the
tangent is None when it is known to be zero (constants, detached values, integers, results of
non-differentiable ops). Zero tangents cost nothing: a `diff.zero` is only materialized where a
pair must be built or a region must yield a tangent on one path and not on the other.

Region ops keep their primal results and carry the tangents alongside:
  scf.if     results: primal results, then one tangent per result that has one on some branch.
  scf.for    iter_args: primal ones, then one tangent per iter_arg that carries one (a fixed
             point: an iter_arg whose yielded value gets a tangent carries one too).
  scf.while  the same for the before-region arguments and the values scf.condition forwards.

Higher order: a function that contains `diff.fwd_diff` has those lowered first, so its body
holds pair values; the tangent of a `!diff.pair<T>` is a `!diff.pair<T>`, and
make_pair/primal/differential are linear, so their tangents are taken component-wise.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, UnitAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from diffc.dialects.diff import (
    DIFFERENTIABLE,
    FWD_DERIVATIVE,
    NO_DIFF,
    AddOp,
    DetachOp,
    DifferentialOp,
    FwdDiffOp,
    MakePairOp,
    PrimalOp,
    ZeroOp,
    arg_is_differentiable,
    custom_derivative,
    differential_type,
    fresh_symbol,
    fwd_signature,
    is_differentiable_func,
    result_is_differentiable,
)
from diffc.diagnostics import pass_error
from diffc.rules import RuleBuilder, emit_jvp, lookup_rule

Tangent = SSAValue | None


def _func_name(op: Operation) -> str:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    return parent.sym_name.data if isinstance(parent, func.FuncOp) else "<module>"


def _fail(fname: str, message: str, at: Operation) -> PassFailedException:
    """The error about op `at` of function @fname, located where `at` was written."""
    return pass_error(at, f"in function @{fname}: {message}")


def _discard(block: Block) -> None:
    """Drops a block built for a trial run, with everything in it."""
    for op in reversed(list(block.ops)):
        block.detach_op(op)
        op.erase(safe_erase=False)


class FwdGenerator:
    """Generates forward derivatives on demand, one per function, and lowers fwd_diff ops."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.funcs: dict[str, func.FuncOp] = {
            op.sym_name.data: op for op in module.walk() if isinstance(op, func.FuncOp)
        }
        self.derivatives: dict[str, str] = {}

    def derivative_of(self, callee: func.FuncOp) -> str:
        """The name of the forward derivative of `callee`, generating it if needed."""
        fname = callee.sym_name.data
        if fname in self.derivatives:
            return self.derivatives[fname]
        custom = custom_derivative(callee, FWD_DERIVATIVE)
        if custom is not None:
            if custom not in self.funcs:
                raise _fail(fname, f"diff.fwd_derivative names @{custom}, which does not exist", callee)
            self.derivatives[fname] = custom
            return custom
        if not callee.body.blocks:
            raise _fail(fname, "cannot differentiate a function without a body", callee)
        name = fresh_symbol(f"{fname}_fwd", self.funcs)
        self.derivatives[fname] = name
        # Inner fwd_diff ops first: the function then works on pairs, and is differentiated
        # over them (fwd of fwd).
        self.lower_fwd_diffs(callee)
        new = FuncDiff(self, callee).build(name)
        self.funcs[name] = new
        parent = callee.parent
        assert parent is not None
        parent.insert_op_after(new, callee)
        return name

    def reaches_custom_fwd(self, f: func.FuncOp, seen: set | None = None) -> bool:
        """Whether f has a custom forward derivative or its differentiated body calls one: such a
        derivative may read tangents from state of its own (a Slang DifferentialPtrPair's memory),
        so a call of f has a tangent even when no argument carries one."""
        if custom_derivative(f, FWD_DERIVATIVE) is not None:
            return True
        seen = set() if seen is None else seen
        if f in seen or not is_differentiable_func(f):
            return False
        seen.add(f)
        for op in f.walk():
            if isinstance(op, func.CallOp):
                callee = self.funcs.get(op.callee.root_reference.data)
                if callee is not None and self.reaches_custom_fwd(callee, seen):
                    return True
        return False

    def lower_fwd_diff(self, op: FwdDiffOp) -> None:
        caller = _func_name(op)
        target = op.callee.root_reference.data
        callee = self.funcs.get(target)
        if callee is None:
            raise _fail(caller, f"'diff.fwd_diff' of @{target}: no such function", op)
        if custom_derivative(callee, FWD_DERIVATIVE) is None and not is_differentiable_func(callee):
            raise _fail(
                caller,
                f"'diff.fwd_diff' of @{target}: @{target} is not differentiable "
                f"(mark it {DIFFERENTIABLE} or give it {FWD_DERIVATIVE})",
                op,
            )
        name = self.derivative_of(callee)
        call = func.CallOp(name, list(op.args), [r.type for r in op.res])
        Rewriter.replace_op(op, call)

    def lower_fwd_diffs(self, root: Operation) -> None:
        for op in list(root.walk()):
            if isinstance(op, FwdDiffOp) and op.parent is not None:
                self.lower_fwd_diff(op)

    def run(self) -> None:
        self.lower_fwd_diffs(self.module)


class FuncDiff:
    """The forward derivative of one function."""

    def __init__(self, gen: FwdGenerator, src: func.FuncOp):
        self.gen = gen
        self.src = src
        self.fname = src.sym_name.data
        self.primal: dict[SSAValue, SSAValue] = {}
        self.tangent: dict[SSAValue, Tangent] = {}

    # -- helpers ------------------------------------------------------------------------------

    def fail(self, message: str, at: Operation) -> PassFailedException:
        return _fail(self.fname, message, at)

    def p(self, v: SSAValue) -> SSAValue:
        return self.primal.get(v, v)

    def t(self, v: SSAValue) -> Tangent:
        return self.tangent.get(v)

    def bind(self, old: SSAValue, new: SSAValue, tan: Tangent) -> None:
        self.primal[old] = new
        self.tangent[old] = tan
        hint = old.name_hint
        if hint is not None:
            if new.name_hint is None:
                new.name_hint = hint
            if tan is not None and tan.name_hint is None:
                tan.name_hint = f"{hint}_d"

    @staticmethod
    def zero(b: Builder, primal_type: Attribute) -> SSAValue:
        return b.insert(ZeroOp(differential_type(primal_type))).result

    def tan_or_zero(self, b: Builder, tan: Tangent, primal_type: Attribute) -> SSAValue:
        return tan if tan is not None else self.zero(b, primal_type)

    # -- the function -------------------------------------------------------------------------

    def build(self, name: str) -> func.FuncOp:
        src = self.src
        if len(src.body.blocks) != 1:
            raise self.fail("only functions with a single block can be differentiated", src)
        sig = fwd_signature(src)
        block = Block(arg_types=sig.inputs.data)
        b = Builder(InsertPoint.at_end(block))
        for i, (old, new) in enumerate(zip(src.args, block.args)):
            if arg_is_differentiable(src, i):
                self.bind(old, b.insert(PrimalOp(new)).result, b.insert(DifferentialOp(new)).result)
            else:
                self.bind(old, new, None)
        ret = self.translate(src.body.block, block)
        b = Builder(InsertPoint.at_end(block))
        outs = []
        for i, v in enumerate(ret.operands):
            if result_is_differentiable(src, i):
                outs.append(b.insert(MakePairOp(self.p(v), self.tan_or_zero(b, self.t(v), v.type))).result)
            else:
                outs.append(self.p(v))
        b.insert(func.ReturnOp(*outs))

        def attrs_of(array: ArrayAttr | None, n: int, keep) -> ArrayAttr | None:
            if array is None and not any(not keep(i) for i in range(n)):
                return None
            out = []
            for i in range(n):
                d = dict(array.data[i].data) if array is not None else {}
                if keep(i):
                    d = {}
                out.append(DictionaryAttr(d))
            return ArrayAttr(out)

        n_in, n_out = len(sig.inputs.data), len(sig.outputs.data)
        arg_attrs = attrs_of(src.arg_attrs, n_in, lambda i: arg_is_differentiable(src, i))
        res_attrs = attrs_of(src.res_attrs, n_out, lambda i: result_is_differentiable(src, i))
        new = func.FuncOp(
            name,
            sig,
            Region(block),
            src.sym_visibility,
            arg_attrs=arg_attrs,
            res_attrs=res_attrs,
        )
        # A forward derivative is itself differentiable (fwd of fwd).
        new.attributes[DIFFERENTIABLE] = UnitAttr()
        return new

    def translate(self, src: Block, dst: Block) -> Operation:
        """Differentiates every op of `src` but its terminator into `dst`; returns the
        terminator (the caller builds its replacement)."""
        ops = list(src.ops)
        if not ops:
            raise self.fail("a block without terminator", src.parent_op() or self.src)
        for op in ops[:-1]:
            self.op(op, dst)
        return ops[-1]

    # -- ops ----------------------------------------------------------------------------------

    def op(self, op: Operation, dst: Block) -> None:
        b = Builder(InsertPoint.at_end(dst))
        if isinstance(op, scf.IfOp):
            return self.if_op(op, dst)
        if isinstance(op, scf.ForOp):
            return self.for_op(op, dst)
        if isinstance(op, scf.WhileOp):
            return self.while_op(op, dst)
        if isinstance(op, func.CallOp):
            return self.call_op(op, dst)
        if isinstance(op, FwdDiffOp):  # lowered before; kept for safety
            raise self.fail("'diff.fwd_diff' left inside a function being differentiated", op)
        if isinstance(op, DetachOp):
            # Keep the detach in the generated function: differentiating @f_fwd again (higher
            # order) must still see that this value's derivative is dropped.
            return self.bind(op.result, b.insert(DetachOp(self.p(op.input))).result, None)
        tans = [self.t(v) for v in op.operands]
        active = [i for i, t in enumerate(tans) if t is not None]
        if isinstance(op, ZeroOp) or not active:
            for region in op.regions:
                self.check_no_captured_tangent(op, region)
            new = b.insert(op.clone(value_mapper=self.primal))
            for old, r in zip(op.results, new.results):
                self.bind(old, r, None)
            return
        new = b.insert(op.clone(value_mapper=self.primal))
        if isinstance(op, AddOp):
            ta, tb = tans
            t = ta if tb is None else tb if ta is None else b.insert(AddOp(ta, tb)).result
            return self.bind(op.result, new.results[0], t)
        if isinstance(op, MakePairOp):
            tp = self.tan_or_zero(b, tans[0], op.primal.type)
            td = self.tan_or_zero(b, tans[1], op.differential.type)
            return self.bind(op.result, new.results[0], b.insert(MakePairOp(tp, td)).result)
        if isinstance(op, PrimalOp | DifferentialOp):
            t = b.insert(type(op)(tans[0])).result
            return self.bind(op.result, new.results[0], t)
        if op.regions:
            raise self.fail(f"'{op.name}' has regions and a derivative-carrying operand; no rule for it", op)
        if lookup_rule(op) is None:
            raise self.fail(
                f"'{op.name}' has no derivative rule, but its operand #{active[0]} carries a derivative "
                f"(use diff.detach for a value whose derivative should be dropped)",
                op,
            )
        if not lookup_rule(op).differentiable:  # e.g. printf: no result carries a derivative
            for old, r in zip(op.results, new.results):
                self.bind(old, r, None)
            return
        if len(op.results) != 1:
            raise self.fail(f"'{op.name}': derivative rules handle ops with one result", op)
        try:
            t = emit_jvp(RuleBuilder(InsertPoint.at_end(dst)), new, tans)
        except NotImplementedError:  # a rule with a reverse-mode hook alone
            raise self.fail(f"'{op.name}': its derivative rule has no forward-mode derivative", op) from None
        self.bind(op.results[0], new.results[0], t)

    def check_no_captured_tangent(self, op: Operation, region: Region) -> None:
        for inner in region.walk():
            for v in inner.operands:
                if self.t(v) is not None:
                    raise self.fail(
                        f"'{op.name}' uses a derivative-carrying value inside its region, "
                        f"and diff-fwd has no rule for it",
                        op,
                    )

    def call_op(self, op: func.CallOp, dst: Block) -> None:
        b = Builder(InsertPoint.at_end(dst))
        target = op.callee.root_reference.data
        callee = self.gen.funcs.get(target)
        tans = [self.t(v) for v in op.arguments]
        active = [i for i, t in enumerate(tans) if t is not None]
        if callee is not None:
            active = [i for i in active if arg_is_differentiable(callee, i)]
        if not active and not (callee is not None and self.gen.reaches_custom_fwd(callee)):
            new = b.insert(op.clone(value_mapper=self.primal))
            for old, r in zip(op.results, new.results):
                self.bind(old, r, None)
            return
        if callee is None or (
            not is_differentiable_func(callee) and custom_derivative(callee, FWD_DERIVATIVE) is None
        ):
            raise self.fail(
                f"'func.call' passes a derivative-carrying value (operand #{active[0]}) to @{target}, "
                f"which is not differentiable (no {DIFFERENTIABLE}, no {FWD_DERIVATIVE}); "
                f"mark the parameter {NO_DIFF} or wrap the value in diff.detach",
                op,
            )
        name = self.gen.derivative_of(callee)
        args = []
        for i, v in enumerate(op.arguments):
            if arg_is_differentiable(callee, i):
                args.append(b.insert(MakePairOp(self.p(v), self.tan_or_zero(b, tans[i], v.type))).result)
            else:
                args.append(self.p(v))
        call = b.insert(func.CallOp(name, args, fwd_signature(callee).outputs.data))
        for i, (old, r) in enumerate(zip(op.results, call.results)):
            if result_is_differentiable(callee, i):
                self.bind(old, b.insert(PrimalOp(r)).result, b.insert(DifferentialOp(r)).result)
            else:
                self.bind(old, r, None)

    def _yield_values(self, b: Builder, values, active: list[int]) -> list[SSAValue]:
        """Primal values, then the tangent of each active index (zero where none)."""
        prim = [self.p(v) for v in values]
        tans = [self.tan_or_zero(b, self.t(values[i]), values[i].type) for i in active]
        return prim + tans

    def if_op(self, op: scf.IfOp, dst: Block) -> None:
        b = Builder(InsertPoint.at_end(dst))
        blocks, terms = [], []
        for region in (op.true_region, op.false_region):
            if not region.blocks:
                continue
            blk = Block()
            terms.append(self.translate(region.block, blk))
            blocks.append(blk)
        n = len(op.results)
        active = [
            i for i in range(n) if any(self.t(term.operands[i]) is not None for term in terms)
        ]
        for blk, term in zip(blocks, terms):
            yb = Builder(InsertPoint.at_end(blk))
            yb.insert(scf.YieldOp(*self._yield_values(yb, list(term.operands), active)))
        types = [r.type for r in op.results] + [differential_type(op.results[i].type) for i in active]
        new = scf.IfOp(self.p(op.cond), types, [blocks[0]], [blocks[1]] if len(blocks) > 1 else None)
        new.attributes.update(op.attributes)
        b.insert(new)
        for i, r in enumerate(op.results):
            t = new.results[n + active.index(i)] if i in active else None
            self.bind(r, new.results[i], t)

    def _loop_block(self, src_args, active: list[int], lead: list[SSAValue] = ()) -> Block:
        """A block for a region whose source arguments are `lead + src_args`, with one extra
        tangent argument per active index of src_args."""
        types = [a.type for a in lead] + [a.type for a in src_args]
        types += [differential_type(src_args[i].type) for i in active]
        blk = Block(arg_types=types)
        k = len(lead)
        for a, new in zip(lead, blk.args[:k]):
            self.bind(a, new, None)
        n = len(src_args)
        for i, a in enumerate(src_args):
            t = blk.args[k + n + active.index(i)] if i in active else None
            self.bind(a, blk.args[k + i], t)
        return blk

    def for_op(self, op: scf.ForOp, dst: Block) -> None:
        b = Builder(InsertPoint.at_end(dst))
        body = op.body.block
        iv, carried = body.args[0], list(body.args[1:])
        inits = list(op.iter_args)
        active = sorted(i for i, v in enumerate(inits) if self.t(v) is not None)
        while True:
            blk = self._loop_block(carried, active, [iv])
            term = self.translate(body, blk)
            grown = sorted(set(active) | {i for i, v in enumerate(term.operands) if self.t(v) is not None})
            if grown == active:
                break
            _discard(blk)
            active = grown
        yb = Builder(InsertPoint.at_end(blk))
        yb.insert(scf.YieldOp(*self._yield_values(yb, list(term.operands), active)))
        new_inits = self._yield_values(b, inits, active)
        new = scf.ForOp(self.p(op.lb), self.p(op.ub), self.p(op.step), new_inits, blk)
        new.attributes.update(op.attributes)
        b.insert(new)
        n = len(op.results)
        for i, r in enumerate(op.results):
            t = new.results[n + active.index(i)] if i in active else None
            self.bind(r, new.results[i], t)

    def while_op(self, op: scf.WhileOp, dst: Block) -> None:
        b = Builder(InsertPoint.at_end(dst))
        before, after = op.before_region.block, op.after_region.block
        inits = list(op.arguments)
        active = sorted(i for i, v in enumerate(inits) if self.t(v) is not None)
        while True:
            bblk = self._loop_block(list(before.args), active)
            cond = self.translate(before, bblk)
            assert isinstance(cond, scf.ConditionOp)
            fwd_active = [i for i, v in enumerate(cond.args) if self.t(v) is not None]
            # scf.condition passes its values on; bind them before the after region reads them
            ablk = self._loop_block(list(after.args), fwd_active)
            term = self.translate(after, ablk)
            grown = sorted(set(active) | {i for i, v in enumerate(term.operands) if self.t(v) is not None})
            if grown == active:
                break
            _discard(bblk)
            _discard(ablk)
            active = grown
        cb = Builder(InsertPoint.at_end(bblk))
        cb.insert(scf.ConditionOp(self.p(cond.condition), *self._yield_values(cb, list(cond.args), fwd_active)))
        yb = Builder(InsertPoint.at_end(ablk))
        yb.insert(scf.YieldOp(*self._yield_values(yb, list(term.operands), active)))
        new_inits = self._yield_values(b, inits, active)
        types = [r.type for r in op.results] + [differential_type(op.results[i].type) for i in fwd_active]
        new = scf.WhileOp(new_inits, types, Region(bblk), Region(ablk))
        new.attributes.update(op.attributes)
        b.insert(new)
        n = len(op.results)
        for i, r in enumerate(op.results):
            t = new.results[n + fwd_active.index(i)] if i in fwd_active else None
            self.bind(r, new.results[i], t)


@dataclass(frozen=True)
class DiffFwdPass(ModulePass):
    """Replaces every diff.fwd_diff with a call to a generated forward derivative."""

    name = "diff-fwd"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        FwdGenerator(op).run()
