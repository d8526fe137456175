"""A pass plugin for diffc-opt's tests: `rename-functions{prefix=P}` prefixes the name of every
func.func and rewrites the symbol references to it (func.call, diff.fwd_diff, diff.bwd_diff,
diff.fwd_derivative / diff.bwd_derivative)."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass


@dataclass(frozen=True)
class RenameFunctions(ModulePass):
    name = "rename-functions"

    prefix: str = "renamed_"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        names = {f.sym_name.data for f in op.walk() if isinstance(f, FuncOp)}

        def renamed(ref: SymbolRefAttr) -> SymbolRefAttr:
            root = ref.root_reference.data
            return SymbolRefAttr(self.prefix + root) if root in names else ref

        for o in op.walk():
            if isinstance(o, FuncOp):
                o.sym_name = StringAttr(self.prefix + o.sym_name.data)
            for table in (o.properties, o.attributes):
                for key, value in list(table.items()):
                    if isinstance(value, SymbolRefAttr):
                        table[key] = renamed(value)
