"""Forward mode's driver (the diff-fwd pass, passes/diff_fwd.py, runs it): JVP over
differential pairs.

Every `diff.fwd_diff @f(...)` becomes `func.call @f_fwd(...)`, where `@f_fwd` has
`fwd_signature(f)` and computes, next to each primal value of `f`, its tangent. Callees of a
differentiable function get their own derivative (`@g_fwd`, generated once); a function with
`diff.fwd_derivative = @h` is replaced by `@h` everywhere.

Inside a generated function every source value `v` maps to a primal value and a tangent; the
tangent is None when it is known to be zero (constants, detached values, integers, results of
non-differentiable ops). Zero tangents cost nothing: a `diff.zero` is only materialized where a
pair must be built or a region must yield a tangent on one path and not on the other.

The driver walks the ops and hands each to its rule (`DerivativeRule.jvp_op`, found in
diffc.ad.registry): control flow (diffc/ad/rules/scf_*.py) keeps its primal results and carries
the tangents alongside, calls (func_call.py) call the callee's derivative, partials
(diffc.ad.partials) build `sum_i dy/dxi * dxi`. What rules use: `p(v)` / `t(v)` (the primal and
tangent of a source value), `bind`, `translate` (a region's block into a new block),
`loop_block`, `yield_values`, `tan_or_zero`, `fail`, and `gen` (derivatives of callees).

Higher order: a function that contains `diff.fwd_diff` has those lowered first, so its body
holds pair values; the tangent of a `!diff.pair<T>` is a `!diff.pair<T>`, and
make_pair/primal/differential are linear, so their tangents are taken component-wise.
"""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, UnitAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from diffc.dialects.diff import (
    DIFFERENTIABLE,
    FWD_DERIVATIVE,
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
from diffc.ad.activity import Activity, reaches_custom
from diffc.ad.locations import locate_after
from diffc.ad.registry import lookup

Tangent = SSAValue | None


def _func_name(op: Operation) -> str:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    return parent.sym_name.data if isinstance(parent, func.FuncOp) else "<module>"


def _fail(fname: str, message: str, at: Operation) -> PassFailedException:
    """The error about op `at` of function @fname, located where `at` was written."""
    return pass_error(at, f"in function @{fname}: {message}")


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

    def reaches_custom_fwd(self, f: func.FuncOp) -> bool:
        """Whether f has a custom forward derivative or its differentiated body calls one: such a
        derivative may read tangents from state of its own (a Slang DifferentialPtrPair's memory),
        so a call of f has a tangent even when no argument carries one."""
        return reaches_custom(f, FWD_DERIVATIVE, self.funcs)

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
        # Which values carry tangents, ahead of translation: loops start from it (their carried
        # tangents), so the fixed point below a loop normally needs one translation.
        self.act = Activity(src, self.gen.funcs, kind=FWD_DERIVATIVE, strict=False)
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
        """Differentiates one op into `dst` through its rule (diffc.ad.registry); an op whose
        operands carry no tangent is copied, its results without tangent."""
        last = dst.last_op
        rule = lookup(op)
        if rule is not None and rule.jvp_when_inactive:
            rule.jvp_op(self, op, dst)
        elif all(self.t(v) is None for v in op.operands):
            self.copy_without_tangents(op, dst)
        elif rule is None:
            self.refuse_no_rule(op)
        else:
            rule.jvp_op(self, op, dst)
        locate_after(dst, last, op)

    def copy_without_tangents(self, op: Operation, dst: Block) -> None:
        for region in op.regions:
            for inner in region.walk():
                for v in inner.operands:
                    if self.t(v) is not None:
                        raise self.fail(
                            f"'{op.name}' uses a derivative-carrying value inside its region, "
                            f"and diff-fwd has no rule for it",
                            op,
                        )
        new = Builder(InsertPoint.at_end(dst)).insert(op.clone(value_mapper=self.primal))
        for old, r in zip(op.results, new.results):
            self.bind(old, r, None)

    def refuse_no_rule(self, op: Operation) -> None:
        """A tangent reaches `op`, which has no derivative: a located error."""
        active = [i for i, v in enumerate(op.operands) if self.t(v) is not None]
        if op.regions:
            raise self.fail(f"'{op.name}' has regions and a derivative-carrying operand; no rule for it", op)
        raise self.fail(
            f"'{op.name}' has no derivative rule, but its operand #{active[0]} carries a derivative "
            f"(use diff.detach for a value whose derivative should be dropped)",
            op,
        )

    @staticmethod
    def discard(block: Block) -> None:
        """Drops a block built for a trial run, with everything in it."""
        for op in reversed(list(block.ops)):
            block.detach_op(op)
            op.erase(safe_erase=False)

    def yield_values(self, b: Builder, values, active: list[int]) -> list[SSAValue]:
        """Primal values, then the tangent of each active index (zero where none)."""
        prim = [self.p(v) for v in values]
        tans = [self.tan_or_zero(b, self.t(values[i]), values[i].type) for i in active]
        return prim + tans

    def loop_block(self, src_args, active: list[int], lead: list[SSAValue] = ()) -> Block:
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
