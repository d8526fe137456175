"""One function's emission state, as the op handlers (statements.py, expressions.py, printf.py)
see it: the C name or expression of each SSA value, the lines written so far at their depth,
and the module's shared parts (module_parts.py)."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Attribute, Operation, SSAValue

from diffc.dialects.kernel import is_kernel

from .module_parts import ModuleParts
from .naming import Namer, ctype, pointer_ctype
from .options import OpenCLEmitError

INDENT = "    "


class FunctionContext:
    def __init__(self, module: ModuleParts, fn: func.FuncOp):
        self.module = module
        self.options = module.options
        self.fn = fn
        self.kernel = is_kernel(fn)
        self.namer = Namer(module.global_names)
        self.values: dict[SSAValue, str] = {}
        self.compound: set[SSAValue] = set()  # values printed as an expression (not a name or literal)
        self.arrays: set[SSAValue] = set()  # memrefs declared here as C arrays (not pointers)
        self.lines: list[str] = []
        self.depth = 1

    def error(self, op: Operation, message: str) -> OpenCLEmitError:
        return OpenCLEmitError.at(op, message)

    def expr(self, value: SSAValue) -> str:
        """The value as an operand of a C expression (an inlined expression in parentheses)."""
        text = self.bare(value)
        return f"({text})" if value in self.compound else text

    def bare(self, value: SSAValue) -> str:
        """The value where a whole expression stands (an initializer, an argument, a condition)."""
        try:
            return self.values[value]
        except KeyError:  # IR that uses a value above its definition (xDSL does not check dominance)
            owner = value.owner if isinstance(value.owner, Operation) else self.fn
            name = f"%{value.name_hint}" if value.name_hint else "its result"
            raise self.error(owner, f"defines {name} after an op that uses it") from None

    def ctype(self, t: Attribute, op: Operation) -> str:
        try:
            self.module.note_type(t)
            return ctype(t, self.options)
        except TypeError:
            raise self.error(op, f"uses type {t}, which has no OpenCL C equivalent here") from None

    def line(self, text: str) -> None:
        self.lines.append(INDENT * self.depth + text)

    def fresh(self, value: SSAValue | None, default: str = "v") -> str:
        return self.namer.fresh(value.name_hint if value is not None else None, default)

    def declare(self, value: SSAValue, rhs: str, op: Operation) -> str:
        name = self.fresh(value)
        t = value.type
        if isinstance(t, MemRefType):  # a buffer chosen at run time (`select` of two pointers)
            self.module.note_type(t)
            self.line(f"{pointer_ctype(t, self.options)} {name} = {rhs};")
        else:
            self.line(f"{self.ctype(t, op)} {name} = {rhs};")
        self.values[value] = name
        return name

    def declare_uninitialized(self, value: SSAValue, op: Operation, default: str) -> str:
        name = self.fresh(value, default)
        self.line(f"{self.ctype(value.type, op)} {name};")
        return name

    def declare_all_uninitialized(self, values: list[SSAValue], op: Operation, default: str) -> list[str]:
        """Variables for `values`, those of one type in a row declared in one line."""
        names = [self.fresh(v, default) for v in values]
        types = [self.ctype(v.type, op) for v in values]
        k = 0
        while k < len(names):
            j = k
            while j + 1 < len(names) and types[j + 1] == types[k]:
                j += 1
            self.line(f"{types[k]} {', '.join(names[k:j + 1])};")
            k = j + 1
        return names
