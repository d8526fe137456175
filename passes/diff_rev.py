"""diff-rev: reverse-mode differentiation.

Every `diff.bwd_diff @f(...)` becomes `func.call @f_bwd(...)`, where `@f_bwd` has
`bwd_signature(f)` (the primal parameters, then one derivative per differentiable result; it
returns the gradient of each differentiable parameter): a forward sweep, then the adjoints in
reverse. The driver is diffc.ad.reverse (its docstring states the tape contract with
diff-checkpoint); each op's derivative is its rule's (diffc.ad.registry).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from diffc.ad.reverse import lower_bwd_diffs


@dataclass(frozen=True)
class DiffRevPass(ModulePass):
    """Replaces each diff.bwd_diff with a call to a generated backward derivative."""

    name = "diff-rev"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_bwd_diffs(op)
