"""func.call: a call of a function, differentiated through the callee's derivative.

Activity: the callee's differentiable results vary when a varied argument reaches a
differentiable parameter, or when the callee has (or reaches through its differentiable
callees) a custom derivative of the mode (`Activity.reaches_custom`): such a derivative may
read derivatives from state of its own. A varied argument passed to a function that is neither
diff.differentiable nor has a custom derivative of the mode is an error, unless no derivative of
the call's results is used (`feeds_a_derivative`: they only reach an int conversion, say): then,
as in Slang, the call is primal code.
Forward: `@g_fwd` (generated once by the driver, or g's diff.fwd_derivative) called over
pairs for the differentiable parameters and results.
Reverse: the forward sweep calls g itself; the adjoint calls `@g_bwd` (or g's
diff.bwd_derivative) with the primal arguments and the adjoints of g's differentiable results,
and accumulates the gradients it returns.
Checkpointing: the call's results are stored (see CallRule.checkpoint for diff.prefer).
"""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.dialects.builtin import SymbolRefAttr
from xdsl.ir import Block
from xdsl.rewriter import InsertPoint

from diffc.ad.uses import feeds_a_derivative
from diffc.ad.interface import DerivativeRule, register
from diffc.ad.tape import Emitter, adjoint_type
from diffc.dialects import diff
from diffc.dialects.diff import (
    DIFFERENTIABLE,
    FWD_DERIVATIVE,
    NO_DIFF,
    DifferentialOp,
    MakePairOp,
    PrimalOp,
    arg_is_differentiable,
    custom_derivative,
    fwd_signature,
    is_differentiable_func,
    result_is_differentiable,
)


def _is_diff_callee(callee, kind: str) -> bool:
    return isinstance(callee, func.FuncOp) and (
        diff.is_differentiable_func(callee) or diff.custom_derivative(callee, kind) is not None
    )


def substituted(callee, symbols: dict):
    """The function derivative code calls for `callee`: its diff.primal_substitute, if it names
    one (Slang's [PrimalSubstitute]), else callee itself."""
    sub = callee.attributes.get(diff.PRIMAL_SUBSTITUTE) if isinstance(callee, func.FuncOp) else None
    return symbols.get(sub.root_reference.data, callee) if sub is not None else callee


class CallRule(DerivativeRule):
    jvp_when_inactive = True  # a callee reaching a custom derivative is called even then

    def activity(self, act, op: func.CallOp) -> None:
        callee = substituted(act.callee(op), act.symbols)
        if not any(o in act.varied for o in op.operands):
            # A custom derivative may act on state of its own (seed 000's getParam accumulates
            # into a gradient buffer), so its results carry derivatives even when no argument
            # does: the derivative code must call it.
            if isinstance(callee, func.FuncOp) and act.reaches_custom(callee):
                for i, r in enumerate(op.results):
                    if diff.result_is_differentiable(callee, i):
                        act.mark(r)
            return
        if not _is_diff_callee(callee, act.kind):
            # a no_diff parameter takes a derivative-carrying value and drops its derivative
            # (as forward mode's jvp_op does): only the others are refused
            bad = [i for i, a in enumerate(op.arguments)
                   if a in act.varied and (not isinstance(callee, func.FuncOp) or diff.arg_is_differentiable(callee, i))]
            if not bad or not feeds_a_derivative(op.results):
                return  # (nothing uses a derivative of the results: Slang drops it too)
            act.refuse(
                f"a derivative-carrying value (operand {bad[0]}) is passed to "
                f"@{op.callee.root_reference.data}, which is not differentiable "
                f"(mark it diff.differentiable, or the parameter diff.no_diff, or detach the value)",
                op,
            )
            return
        assert isinstance(callee, func.FuncOp)
        flows = any(a in act.varied and diff.arg_is_differentiable(callee, i) for i, a in enumerate(op.arguments))
        if flows:
            for i, r in enumerate(op.results):
                if diff.result_is_differentiable(callee, i):
                    act.mark(r)

    def jvp_op(self, fwd, op: func.CallOp, dst: Block) -> None:
        b = Builder(InsertPoint.at_end(dst))
        callee = substituted(fwd.gen.funcs.get(op.callee.root_reference.data), fwd.gen.funcs)
        target = callee.sym_name.data if isinstance(callee, func.FuncOp) else op.callee.root_reference.data
        tans = [fwd.t(v) for v in op.arguments]
        active = [i for i, t in enumerate(tans) if t is not None]
        if callee is not None:
            active = [i for i in active if arg_is_differentiable(callee, i)]
        dropped = callee is not None and not is_differentiable_func(callee) and (
            custom_derivative(callee, FWD_DERIVATIVE) is None) and not feeds_a_derivative(op.results)
        if dropped or not active and not (callee is not None and fwd.gen.reaches_custom_fwd(callee)):
            new = b.insert(op.clone(value_mapper=fwd.primal))
            if isinstance(callee, func.FuncOp) and callee.sym_name.data != op.callee.root_reference.data:
                new.properties["callee"] = SymbolRefAttr(callee.sym_name.data)  # the primal substitute
            for old, r in zip(op.results, new.results):
                fwd.bind(old, r, None)
            return
        if callee is None or (
            not is_differentiable_func(callee) and custom_derivative(callee, FWD_DERIVATIVE) is None
        ):
            raise fwd.fail(
                f"'func.call' passes a derivative-carrying value (operand #{active[0]}) to @{target}, "
                f"which is not differentiable (no {DIFFERENTIABLE}, no {FWD_DERIVATIVE}); "
                f"mark the parameter {NO_DIFF} or wrap the value in diff.detach",
                op,
            )
        name = fwd.gen.derivative_of(callee)
        args = []
        for i, v in enumerate(op.arguments):
            if arg_is_differentiable(callee, i):
                args.append(b.insert(MakePairOp(fwd.p(v), fwd.tan_or_zero(b, tans[i], v.type))).result)
            else:
                args.append(fwd.p(v))
        call = b.insert(func.CallOp(name, args, fwd_signature(callee).outputs.data))
        for i, (old, r) in enumerate(zip(op.results, call.results)):
            if result_is_differentiable(callee, i):
                fwd.bind(old, b.insert(PrimalOp(r)).result, b.insert(DifferentialOp(r)).result)
            else:
                fwd.bind(old, r, None)

    def primal_op(self, rev, op: func.CallOp, vmap: dict, em, ctx: list, mode: str):
        """The forward sweep calls the primal substitute too: derivative code never runs f."""
        new = op.clone(value_mapper=vmap)
        callee = rev.gen.symbols.get(op.callee.root_reference.data)
        sub = substituted(callee, rev.gen.symbols)
        if sub is not callee:
            new.properties["callee"] = SymbolRefAttr(sub.sym_name.data)
        return new

    def vjp_op(self, rev, op: func.CallOp, adj: dict, vmap: dict, em: Emitter, ctx) -> None:
        callee = substituted(rev.gen.symbols[op.callee.root_reference.data], rev.gen.symbols)
        name = rev.gen.bwd_of(callee, rev.name, op)
        args = [vmap[a] for a in op.arguments]
        for i, r in enumerate(op.results):
            if diff.result_is_differentiable(callee, i):
                args.append(adj[r] if r in adj else em.zero(adjoint_type(r.type)))
        sig = diff.bwd_signature(callee)
        call = em(func.CallOp(name, args, sig.outputs.data))
        grads = iter(call.results)
        for i, a in enumerate(op.arguments):
            if diff.arg_is_differentiable(callee, i):
                rev.accumulate(adj, a, next(grads), em)

    def checkpoint(self, op: func.CallOp, prefer: str | None, origin: str, symbols: dict) -> tuple[bool, str]:
        # a call is expensive to run again: stored, unless the callee (first) or the function
        # prefers recompute; a callee's "checkpoint" wins over the function's "recompute"
        name = op.callee.root_reference.data
        callee = symbols.get(name)
        own = diff.prefer(callee) if callee is not None else None
        if own == "recompute":
            return False, f"callee @{name} prefers recompute"
        if own == "checkpoint":
            return True, f"callee @{name} prefers checkpoint"
        if prefer == "recompute":
            return False, f"call to @{name}: @{origin} prefers recompute"
        return True, f"result of a call to @{name} (expensive)"


register(func.CallOp, CallRule())
