"""A pass plugin for diffc-opt's tests: `tag-functions{tag=NAME}` marks every func.func with
`plugin.tag = "NAME"` (default "tagged")."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass


@dataclass(frozen=True)
class TagFunctions(ModulePass):
    name = "tag-functions"

    tag: str = "tagged"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in op.walk():
            if isinstance(func, FuncOp):
                func.attributes["plugin.tag"] = StringAttr(self.tag)


class NotAPass:
    """Not a ModulePass: the loader must ignore it."""

    name = "not-a-pass"
