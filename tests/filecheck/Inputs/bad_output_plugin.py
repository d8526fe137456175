"""A pass that leaves invalid IR behind (diff.prefer = "sometimes"): diffc-opt's verifier
after the pass must catch it and name the pass."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass


@dataclass(frozen=True)
class SpoilPrefer(ModulePass):
    name = "spoil-prefer"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in op.walk():
            if isinstance(func, FuncOp):
                func.attributes["diff.prefer"] = StringAttr("sometimes")
