"""merge-calls: a kernel computes each read-only call once.

A backward pass recomputes the primal: `bwd_diff(loss)` evaluates the network, each layer's
custom backward derivative evaluates its layer again, and the entry point calls `loss` once more
for the batch's largest loss. After accumulate-gradients has turned the gradient atomics into
private sums, nothing between those calls writes memory they read, so they compute the same
values. In each kernel (`kernel.entry`) this pass:

* inlines calls to small read-only wrappers (functions of one block, no regions, at most
  `inline_ops` ops, that call other functions), so that `loss -> eval -> _eval -> layer.eval`
  chains expose the calls they share;
* merges, block by block, a call to a read-only function with an earlier call to the same
  function with the same operands, unless an op between them may write memory the callee can
  read (a store into global or local memory, an atomic, a barrier, a call that writes, or a
  store into a private array passed to the call); CSE (diffc/kernel_support/cse.py: xDSL's, in
  linear time) runs between rounds so that the operands inlined copies compute (`x * x`) become
  the same values.

Read-only: every op of the function is free of effects, a read, or a store into one of its own
private arrays (`memref.alloca`), and every callee is read-only (a printf, an atomic or a
barrier is not). (The MLP's accumulated learnGradient
evaluated each layer five times a sample; merged, once.)
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, memref, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.traits import is_side_effect_free

from diffc.dialects import kernel
from diffc.kernel_support.cse import cse, pure_by_type
from diffc.kernel_support.inlining import inline_call

_READS = (memref.LoadOp, kernel.VLoadOp)
# control flow: its effects are its regions' ops', which are judged one by one
_CONTROL = (scf.ForOp, scf.IfOp, scf.WhileOp, scf.IndexSwitchOp, scf.YieldOp, scf.ConditionOp)
ALL = None  # "may write any memory"
_READS_ONLY = (func.CallOp, func.ReturnOp, memref.AllocaOp, *_READS, *_CONTROL)


@dataclass(frozen=True)
class MergeCallsPass(ModulePass):
    name = "merge-calls"

    inline_ops: int = 64  # inline read-only wrappers of at most this many ops
    rounds: int = 4  # inline / CSE / merge rounds, at most

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = {f.sym_name.data: f for f in op.ops if isinstance(f, func.FuncOp)}
        readonly = _read_only(funcs)
        for fn in funcs.values():
            if not kernel.is_kernel(fn) or not fn.body.blocks:
                continue
            for _ in range(self.rounds):
                inlined = _inline_wrappers(fn, funcs, readonly, self.inline_ops)
                cse(fn)
                merged = sum(_merge_in(block, readonly) for block in _blocks(fn))
                if not inlined and not merged:
                    break


def _callee(call: func.CallOp) -> str:
    return call.callee.root_reference.data


def _private(v: SSAValue) -> bool:
    return isinstance(v.owner, memref.AllocaOp)


def _read_only(funcs: dict[str, func.FuncOp]) -> set[str]:
    """The functions that write no memory but their own private arrays (to a fixed point over
    calls; a function calling an unknown one is not read-only)."""
    candidates = set()
    for name, f in funcs.items():
        if not f.body.blocks:
            continue
        if all(_reads_only(op) for op in f.walk() if op is not f):
            candidates.add(name)
    changed = True
    while changed:
        changed = False
        for name in list(candidates):
            if any(isinstance(op, func.CallOp) and _callee(op) not in candidates for op in funcs[name].walk()):
                candidates.discard(name)
                changed = True
    return candidates


def _reads_only(op: Operation) -> bool:
    """Whether `op` (its regions are walked apart) has no effect but reads, or writes only a
    private array (calls are judged at the fixed point). A printf is an effect: two calls that
    print must stay two."""
    if pure_by_type(op) or isinstance(op, _READS_ONLY) or is_side_effect_free(op):
        return True
    return isinstance(op, memref.StoreOp) and _private(op.memref)


def _inline_wrappers(fn: func.FuncOp, funcs: dict[str, func.FuncOp], readonly: set[str], limit: int) -> int:
    count = 0
    for call in [op for op in fn.walk() if isinstance(op, func.CallOp)]:
        name = _callee(call)
        callee = funcs.get(name)
        if name not in readonly or callee is None or len(callee.body.blocks) != 1:
            continue
        ops = list(callee.body.blocks[0].ops)
        if (len(ops) > limit or not isinstance(ops[-1], func.ReturnOp) or any(o.regions for o in ops)
                or not any(isinstance(o, func.CallOp) for o in ops)):
            continue
        count += inline_call(call, callee)
    return count


def _blocks(fn: func.FuncOp) -> list[Block]:
    out = []
    for op in fn.walk():
        for region in op.regions:
            out.extend(region.blocks)
    return out


def _written(op: Operation, readonly: set[str]) -> set[SSAValue] | None:
    """The private arrays `op` (and the ops in its regions) may write, or ALL when it may write
    other memory."""
    out: set[SSAValue] = set()
    for o in op.walk():
        if isinstance(o, func.CallOp):
            if _callee(o) not in readonly:
                return ALL
            continue
        if isinstance(o, memref.StoreOp) and _private(o.memref):
            out.add(o.memref)
        elif not _reads_only(o):  # a store elsewhere, an atomic, a barrier, any unknown effect
            return ALL
    return out


def _merge_in(block: Block, readonly: set[str]) -> int:
    """Merges the block's repeated read-only calls; returns how many it removed."""
    seen: dict[tuple, func.CallOp] = {}
    merged = 0
    for op in list(block.ops):
        if isinstance(op, func.CallOp) and _callee(op) in readonly:
            key = (_callee(op), tuple(op.arguments), tuple(r.type for r in op.results))
            earlier = seen.get(key)
            if earlier is not None:
                Rewriter.replace_op(op, [], list(earlier.results))
                merged += 1
            else:
                seen[key] = op
            continue
        written = _written(op, readonly)
        if written is ALL:
            seen.clear()
        elif written:
            for key in [k for k in seen if any(v in written for v in k[1])]:
                del seen[key]
    return merged
