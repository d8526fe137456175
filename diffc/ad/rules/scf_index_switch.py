"""scf.index_switch: a multi-way branch on an index (Slang's `switch` without fall-through);
translated as every branching op is (diffc/ad/branches.py): the adjoint is an index_switch on
the same index with the same cases.

This file is all diffc needs for the op: the registry loads every file of diffc/ad/rules/.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Region

from diffc.ad import branches
from diffc.ad.interface import register


def _regions(op: scf.IndexSwitchOp) -> list[Region]:
    return [op.default_region, *op.case_regions]


def _make(op: scf.IndexSwitchOp, arg):
    """A switch like `op` (same case values) on `arg`, from blocks (default first)."""
    return lambda blocks, types: scf.IndexSwitchOp(arg, op.cases, Region(blocks[0]), [Region(b) for b in blocks[1:]], types)


class IndexSwitchRule(branches.BranchRule):
    def activity(self, act, op: scf.IndexSwitchOp) -> None:
        branches.activity(act, op, _regions(op))

    def jvp_op(self, fwd, op: scf.IndexSwitchOp, dst) -> None:
        branches.jvp(fwd, op, _regions(op), dst, _make(op, fwd.p(op.arg)))

    def primal_op(self, rev, op: scf.IndexSwitchOp, vmap: dict, em, ctx, mode: str) -> scf.IndexSwitchOp:
        return branches.primal(rev, op, _regions(op), vmap, ctx, mode, _make(op, vmap[op.arg]))  # type: ignore[return-value]

    def vjp_op(self, rev, op: scf.IndexSwitchOp, adj: dict, vmap: dict, em, ctx) -> None:
        branches.vjp(rev, op, _regions(op), adj, vmap, em, ctx, _make(op, vmap[op.arg]))


register(scf.IndexSwitchOp, IndexSwitchRule())
