"""diff-fwd: forward-mode differentiation (JVP over differential pairs).

Every `diff.fwd_diff @f(...)` becomes `func.call @f_fwd(...)`, where `@f_fwd` has
`fwd_signature(f)` and computes, next to each primal value of `f`, its tangent; callees get
their own `@g_fwd`, a custom `diff.fwd_derivative` is called instead. The driver is
diffc.ad.forward; each op's derivative is its rule's (diffc.ad.registry). Output still holds
pair types (diff-lower removes them).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from diffc.ad.forward import FwdGenerator


@dataclass(frozen=True)
class DiffFwdPass(ModulePass):
    """Replaces every diff.fwd_diff with a call to a generated forward derivative."""

    name = "diff-fwd"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        FwdGenerator(op).run()
