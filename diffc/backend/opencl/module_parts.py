"""What the functions of one module share while they are emitted: the C names of functions, the
structs that carry several results, the helper functions (atomics, half conversions) that some
op needs, and whether any type is a double (the fp64 pragma)."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, VectorType
from xdsl.ir import Attribute, Operation

from . import atomics, ptx_atomics
from .cuda_prelude import CUDA_NAMES
from .naming import Namer, ctype, uses_double
from .options import EmitOptions, OpenCLEmitError

_CMPXCHG_HELPER = """\
static void {name}(volatile {space} float* p, float v) {{
    volatile {space} uint* bits = (volatile {space} uint*)p;
    uint expected = *bits;
    while (true) {{
        uint desired = as_uint(as_float(expected) + v);
        uint seen = atomic_cmpxchg(bits, expected, desired);
        if (seen == expected) break;
        expected = seen;
    }}
}}"""
_EXT_HELPER = """\
static void {name}(volatile {space} float* p, float v) {{
    atomic_fetch_add_explicit((volatile {space} atomic_float*)p, v, memory_order_relaxed, {scope});
}}"""


class ModuleParts:
    """Filled as the functions are emitted; module.py prints it around them."""

    def __init__(self, module: ModuleOp, options: EmitOptions):
        from diffc.kernel_support.wide_vectors import has_wide_vectors, split_wide_vectors

        if has_wide_vectors(module):  # vectors wider than OpenCL's (a wide CoopVec): split, in a copy
            module = module.clone()
            split_wide_vectors(module)
        self.module = module
        self.options = options
        self.fp64 = False
        self.vectors = False  # whether any value is a vector (the CUDA prelude's vector part)
        self.helpers: dict[str, str] = {}  # atomic helper name -> its C text
        self.structs: dict[str, str] = {}  # struct name -> its typedef
        self.functions: dict[str, func.FuncOp] = {}
        self.names: dict[str, str] = {}  # symbol -> C name
        namer = Namer(set(CUDA_NAMES) if options.cuda else None)
        for op in module.ops:
            if isinstance(op, func.FuncOp):
                self.functions[op.sym_name.data] = op
                self.names[op.sym_name.data] = namer.fresh(op.sym_name.data, "fn")
            else:
                raise OpenCLEmitError.at(op, "at module level is not supported by the OpenCL emitter")
        self.global_names = (
            set(self.names.values()) | {f"{n}_result" for n in self.names.values()} | set(atomics.HELPER_NAMES)
            | set(ptx_atomics.HELPER_NAMES) | (CUDA_NAMES if options.cuda else set())
        )

    def note_type(self, t: Attribute) -> None:
        if uses_double(t):
            self.fp64 = True
        if isinstance(t, VectorType):
            self.vectors = True

    def function_name(self, symbol: str, op: Operation) -> str:
        if symbol not in self.names:
            raise OpenCLEmitError.at(op, f"calls @{symbol}, which is not defined in this module")
        return self.names[symbol]

    def result_struct_of(self, symbol: str, op: Operation) -> str:
        self.function_name(symbol, op)
        return self.result_struct(self.functions[symbol])

    def result_struct(self, fn: func.FuncOp) -> str:
        """Several results come back as `typedef struct { T0 r0; T1 r1; } <name>_result;`."""
        name = f"{self.names[fn.sym_name.data]}_result"
        if name not in self.structs:
            fields: list[tuple[str, list[str]]] = []  # (C type, field names): one line per run of a type
            for i, t in enumerate(fn.function_type.outputs.data):
                try:
                    self.note_type(t)
                    c = ctype(t, self.options)
                except TypeError:
                    raise OpenCLEmitError.at(fn, f"returns type {t}, which has no OpenCL C equivalent") from None
                if fields and fields[-1][0] == c:
                    fields[-1][1].append(f"r{i}")
                else:
                    fields.append((c, [f"r{i}"]))
            self.structs[name] = "typedef struct {\n" + "".join(
                f"    {c} {', '.join(names)};\n" for c, names in fields) + f"}} {name};"
        return name

    def atomic_helper(self, strategy: str, local: bool) -> str:
        space = "__local" if local else "__global"
        if strategy == "ptx" and not local:
            return self.warp_add_helper("f32")
        if strategy == "ext":
            name = f"diffc_atomic_add_ext_{space[2:]}"
            scope = "memory_scope_work_group" if local else "memory_scope_device"
            self.helpers.setdefault(name, _EXT_HELPER.format(name=name, space=space, scope=scope))
            return name
        name = f"diffc_atomic_add_cmpxchg_{space[2:]}"
        self.helpers.setdefault(name, _CMPXCHG_HELPER.format(name=name, space=space))
        return name

    def warp_add_helper(self, element: str) -> str:
        """The "ptx" mode's warp-aggregated `red` add into global memory ("f32", "f16", "i32")."""
        name, text = ptx_atomics.warp_add(element)
        self.helpers.setdefault(name, text)
        return name

    def half_conversions(self) -> None:
        for name, text in atomics.half_conversions().items():
            self.helpers.setdefault(name, text)

    def fetch_add_helper(self, half: bool, space: str) -> str:
        """The helper that atomically adds a float to a half (or float) and returns the old value."""
        if half:
            self.half_conversions()
        name, text = (atomics.half_fetch_add if half else atomics.float_fetch_add)(space)
        self.helpers.setdefault(name, text)
        return name
