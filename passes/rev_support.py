"""Shared pieces of diff-rev and diff-checkpoint: the marks diff-rev leaves in the IR for
diff-checkpoint, small IR builders (zeros, adjoint accumulation, index arithmetic) and the
activity analysis ("varied" values: those that carry a derivative from a differentiable
parameter)."""

from __future__ import annotations

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import PassFailedException

from diffc.diagnostics import pass_error
from diffc.dialects import diff
from diffc.rules import lookup_rule

# ---- the marks (contract between diff-rev and diff-checkpoint) ------------------------------
# On an op of the forward sweep that lies inside a region (branch or loop body): its id.
PRIMAL_ID = "diff.primal_id"
# On an op of the reverse sweep that recomputes the forward op with the same id.
RECOMPUTE = "diff.recompute"
# On every clone of a loop (forward, recomputed, reverse): the loop's id and its bound.
LOOP = "diff.loop"
TRIP = "diff.trip"
# On the op that computes the forward iteration number (0, 1, ...) inside a loop clone's body.
ITER = "diff.iter"
# On a memref.alloca that holds stored context: why ("loop-carried", "call", ...).
TAPE = "diff.tape"
# On a generated backward function: the function it differentiates.
BWD_OF = "diff.bwd_of"


def i64(v: int) -> IntegerAttr:
    return IntegerAttr(v, 64)


def fail(fn: str, msg: str, at: Operation) -> PassFailedException:
    """The error about op `at` of function @fn, located where `at` was written."""
    return pass_error(at, f"in function @{fn}: {msg}")


# ---- small builders ---------------------------------------------------------------------------


class Emitter:
    """Appends ops at the end of one block."""

    def __init__(self, block: Block):
        self.block = block

    def __call__(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def v(self, op: Operation) -> SSAValue:
        return self(op).results[0]

    def index(self, n: int) -> SSAValue:
        return self.v(arith.ConstantOp(IntegerAttr(n, IndexType())))

    def zero(self, t: Attribute) -> SSAValue:
        if isinstance(t, VectorType):
            attr = DenseIntOrFPElementsAttr.from_list(t, [0.0] * t.element_count())
            return self.v(arith.ConstantOp(attr, t))
        if diff.is_float_type(t):
            return self.v(arith.ConstantOp(FloatAttr(0.0, t)))
        return self.v(diff.ZeroOp(t))

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if diff.is_float_type(a.type) or isinstance(a.type, VectorType):
            return self.v(arith.AddfOp(a, b))
        return self.v(diff.AddOp(a, b))


def adjoint_type(t: Attribute) -> Attribute:
    return diff.differential_type(t)


def storable(t: Attribute) -> bool:
    return diff.is_float_type(t) or isinstance(t, IntegerType | IndexType | VectorType)


def byte_size(t: Attribute) -> int:
    if isinstance(t, IndexType):
        return 8
    if isinstance(t, IntegerType):
        return max(1, t.width.data // 8)
    if diff.is_float_type(t):
        return t.bitwidth // 8  # type: ignore[attr-defined]
    if isinstance(t, VectorType):
        return t.element_count() * byte_size(t.element_type)
    return 8


# ---- activity analysis ------------------------------------------------------------------------


def is_diff_callee(callee: Operation | None) -> bool:
    return isinstance(callee, func.FuncOp) and (
        diff.is_differentiable_func(callee) or diff.custom_derivative(callee, diff.BWD_DERIVATIVE) is not None
    )


LINEAR_DIFF_OPS = (diff.MakePairOp, diff.PrimalOp, diff.DifferentialOp, diff.AddOp)


class Activity:
    """Which values of a function carry a derivative (forward activity).

    Raises PassFailedException when a derivative-carrying value reaches an op that has no
    derivative rule or a function that is not differentiable."""

    def __init__(self, fn: func.FuncOp, symbols: dict[str, func.FuncOp]):
        self.fn = fn
        self.name = fn.sym_name.data
        self.symbols = symbols
        self.varied: set[SSAValue] = set()
        for i, a in enumerate(fn.body.block.args):
            if diff.arg_is_differentiable(fn, i):
                self.varied.add(a)
        self._changed = True
        # a few sweeps reach the fixed point of loop-carried activity
        while self._changed:
            self._changed = False
            self._block(fn.body.block)

    def __contains__(self, v: SSAValue) -> bool:
        return v in self.varied

    def _mark(self, v: SSAValue) -> None:
        if v not in self.varied and diff.is_differentiable_type(v.type):
            self.varied.add(v)
            self._changed = True

    def _block(self, block: Block) -> None:
        for op in block.ops:
            self._op(op)

    def reaches_custom_bwd(self, f: func.FuncOp) -> bool:
        return self._reaches_custom_bwd(f, set())

    def _reaches_custom_bwd(self, f: func.FuncOp, seen: set) -> bool:
        """Whether f has a custom backward derivative or its differentiated body calls one (a
        network's eval calling layers that accumulate their gradients into buffers)."""
        if diff.custom_derivative(f, diff.BWD_DERIVATIVE):
            return True
        if f in seen or diff.DIFFERENTIABLE not in f.attributes:
            return False
        seen.add(f)
        for op in f.walk():
            if isinstance(op, func.CallOp):
                callee = self.symbols.get(op.callee.root_reference.data)
                if isinstance(callee, func.FuncOp) and self._reaches_custom_bwd(callee, seen):
                    return True
        return False

    def _op(self, op: Operation) -> None:
        if isinstance(op, diff.DetachOp | scf.YieldOp | scf.ConditionOp | func.ReturnOp):
            return
        any_in = any(o in self.varied for o in op.operands)
        if isinstance(op, scf.IfOp):
            for r in op.regions:
                self._block(r.block) if r.blocks else None
            for i, res in enumerate(op.results):
                for r in op.regions:
                    if r.blocks and r.block.last_op is not None and r.block.last_op.operands[i] in self.varied:
                        self._mark(res)
            return
        if isinstance(op, scf.ForOp):
            body = op.body.block
            for init, arg in zip(op.iter_args, body.args[1:]):
                if init in self.varied:
                    self._mark(arg)
            self._block(body)
            y = body.last_op
            assert y is not None
            for i, (res, arg) in enumerate(zip(op.results, body.args[1:])):
                if y.operands[i] in self.varied:
                    self._mark(arg)
                if arg in self.varied:
                    self._mark(res)
            return
        if isinstance(op, scf.WhileOp):
            before, after = op.before_region.block, op.after_region.block
            for init, arg in zip(op.arguments, before.args):
                if init in self.varied:
                    self._mark(arg)
            self._block(before)
            cond = before.last_op
            assert isinstance(cond, scf.ConditionOp)
            for v, a, r in zip(cond.args, after.args, op.results):
                if v in self.varied:
                    self._mark(a)
                    self._mark(r)
            self._block(after)
            y = after.last_op
            assert y is not None
            for v, a in zip(y.operands, before.args):
                if v in self.varied:
                    self._mark(a)
            return
        if isinstance(op, func.CallOp) and not any_in:
            # A custom backward derivative may act on state of its own (seed 000's getParam
            # accumulates into a gradient buffer), so its results carry derivatives even when
            # no argument does: the reverse sweep must call it.
            callee = self.symbols.get(op.callee.root_reference.data)
            if isinstance(callee, func.FuncOp) and self._reaches_custom_bwd(callee, set()):
                for i, r in enumerate(op.results):
                    if diff.result_is_differentiable(callee, i):
                        self._mark(r)
            return
        if not any_in:
            return
        if isinstance(op, func.CallOp):
            callee = self.symbols.get(op.callee.root_reference.data)
            if not is_diff_callee(callee):
                bad = [i for i, a in enumerate(op.arguments) if a in self.varied]
                raise fail(
                    self.name,
                    f"a derivative-carrying value (operand {bad[0]}) is passed to "
                    f"@{op.callee.root_reference.data}, which is not differentiable "
                    f"(mark it diff.differentiable, or the parameter diff.no_diff, or detach the value)",
                    op,
                )
            assert isinstance(callee, func.FuncOp)
            flows = any(
                a in self.varied and diff.arg_is_differentiable(callee, i) for i, a in enumerate(op.arguments)
            )
            if flows:
                for i, r in enumerate(op.results):
                    if diff.result_is_differentiable(callee, i):
                        self._mark(r)
            return
        if isinstance(op, LINEAR_DIFF_OPS):
            for r in op.results:
                self._mark(r)
            return
        rule = lookup_rule(op)
        if rule is None:
            if op.regions or not op.results or any(diff.is_differentiable_type(r.type) for r in op.results):
                raise fail(
                    self.name,
                    f"'{op.name}' has no derivative rule but receives a derivative-carrying value",
                    op,
                )
            return
        if not rule.differentiable:  # hooks alone (jvp/vjp) make a rule differentiable too
            return
        for r in op.results:
            self._mark(r)


def free_varied(regions: list[Region], act: Activity) -> list[SSAValue]:
    """Varied values used inside `regions` but defined outside them, in first-use order."""
    inside: set[Operation] = set()
    blocks: set[Block] = set()
    for r in regions:
        for o in r.walk():
            inside.add(o)
        for b in r.blocks:
            blocks.add(b)
        for o in r.walk():
            for rr in o.regions:
                blocks.update(rr.blocks)
    seen: list[SSAValue] = []
    for r in regions:
        for o in r.walk():
            for v in o.operands:
                if v not in act or v in seen:
                    continue
                owner = v.owner
                if (isinstance(owner, Block) and owner in blocks) or (isinstance(owner, Operation) and owner in inside):
                    continue
                seen.append(v)
    return seen


def symbols_of(module: ModuleOp) -> dict[str, func.FuncOp]:
    return {o.sym_name.data: o for o in module.walk() if isinstance(o, func.FuncOp)}
