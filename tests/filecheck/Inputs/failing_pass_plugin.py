"""A pass that fails the way passes should: with PassFailedException."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException


@dataclass(frozen=True)
class AlwaysFail(ModulePass):
    name = "always-fail"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise PassFailedException("always-fail: refusing this module on purpose")
