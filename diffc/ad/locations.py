"""Ops the differentiation drivers build for a primal op carry that op's source location, so
that a report about derivative code (nan-check's, a pass error) names the Slang line the
derivative comes from rather than no place at all."""

from __future__ import annotations

from xdsl.dialects.builtin import UnknownLoc
from xdsl.ir import Block, Operation


def locate_after(block: Block, last: Operation | None, source: Operation) -> None:
    """Gives every unlocated op appended to `block` after `last` (all of them when `last` is
    None), and every op nested in them, the location of `source`."""
    if isinstance(source.location, UnknownLoc):
        return
    op = block.first_op if last is None else last.next_op
    while op is not None:
        for inner in op.walk():
            if isinstance(inner.location, UnknownLoc):
                inner.location = source.location
        op = op.next_op
