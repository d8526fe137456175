"""Which memory of a kernel only atomic adds touch: reduce-atomics and accumulate-gradients may
then sum the adds elsewhere first (nothing reads or writes the location in between)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import func, scf
from xdsl.ir import Operation, SSAValue

from diffc.dialects import kernel


def is_global_add(op: Operation) -> bool:
    """An atomic add on global memory whose old value is unused."""
    if isinstance(op, kernel.AtomicAddOp):
        return kernel.memory_space(op.memref.type) is None
    if isinstance(op, kernel.AtomicRMWOp):
        return op.kind.data in ("addf", "addi") and not op.result.uses and kernel.memory_space(op.memref.type) is None
    return False


def only_added(start: SSAValue, funcs: dict[str, func.FuncOp],
               is_update: Callable[[Operation], bool] = is_global_add) -> bool:
    """Whether the memory behind `start` is only added to (or only touched by ops for which
    `is_update` holds): through scf results and carried values, and through the parameters of
    the callees in `funcs`."""
    return _only_added(start, funcs, is_update, set())


def _only_added(start: SSAValue, funcs: dict[str, func.FuncOp], is_update: Callable[[Operation], bool],
                following: set[func.FuncOp]) -> bool:
    """`following`: the callees whose parameters are being followed (a recursive call stops it)."""
    if isinstance(start.owner, kernel.ReinterpretOp):  # (other views of the same bytes are not followed)
        return False
    seen: set[SSAValue] = set()
    todo = [start]
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        for use in v.uses:
            user = use.operation
            if is_update(user) and use.index == 1:
                continue
            if isinstance(user, scf.YieldOp):
                parent = user.parent_op()
                if isinstance(parent, scf.IfOp | scf.ForOp):
                    todo.append(parent.results[use.index])
                    continue
                return False
            if isinstance(user, scf.ForOp) and use.index >= 3:
                todo += [user.body.blocks[0].args[use.index - 2], user.results[use.index - 3]]
                continue
            if isinstance(user, func.CallOp):
                callee = funcs.get(user.callee.root_reference.data)
                if callee is None or not callee.body.blocks or callee in following:
                    return False
                following.add(callee)
                try:
                    if not _only_added(callee.body.blocks[0].args[use.index], funcs, is_update, following):
                        return False
                finally:
                    following.discard(callee)
                continue
            return False
    return True
