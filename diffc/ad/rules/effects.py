"""Memory and atomics: no derivative flows through memory.

diffc differentiates SSA values only. A derivative-carrying value stored to memory (memref.store)
or added atomically (memref.atomic_rmw) would lose its derivative silently, so it is an error in
both modes (the same one as for an op without a rule; detach the value to store its primal
only). Loads give values without a derivative (their operands, a memref and indices, carry
none). Derivatives through buffers are the user's: custom derivatives that accumulate into
gradient buffers (Slang's DifferentialPtrPair, diff.accumulate), which a call reaching them
makes the derivative code call (diffc/ad/rules/func_call.py). printf's rule (no derivative) is
data in diffc/rules/effect_rules.py.
"""

from __future__ import annotations

from xdsl.dialects import memref
from xdsl.ir import Block, Operation

from diffc.ad.interface import DerivativeRule, register


class RefuseDerivatives(DerivativeRule):
    """An op that takes no derivative-carrying operand."""

    differentiable = False

    def activity(self, act, op: Operation) -> None:
        if any(o in act.varied for o in op.operands):
            act.refuse(f"'{op.name}' has no derivative rule but receives a derivative-carrying value", op)

    def jvp_op(self, fwd, op: Operation, dst: Block) -> None:
        fwd.refuse_no_rule(op)


register(memref.StoreOp, RefuseDerivatives())
register(memref.AtomicRMWOp, RefuseDerivatives())
