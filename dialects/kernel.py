"""The `kernel` dialect: what an OpenCL kernel needs beyond func/arith/math/scf/memref.

Function-level attributes (on `func.func`):
  kernel.entry                          unit: the function is an OpenCL `__kernel void`. Its
                                        memref arguments are `__global` pointers (`__local` when
                                        the memref has memory space 3), scalars are passed by
                                        value; it has no results.
  kernel.reqd_work_group_size = [x,y,z] optional: `__attribute__((reqd_work_group_size(x,y,z)))`.

On `scf.for`:
  diffc.unroll                          unit: unrolled by the device compiler (`#pragma unroll`);
                                        Slang's [ForceUnroll], and loops the kernel passes keep
                                        rolled in the source where the device would unroll them

Memory spaces: a memref without a memory space is global memory; memory space `3 : i32` is
work-group local memory (`LOCAL_MEMORY_SPACE`). `memref.alloca` is private memory.

Ops (all ids are `index` values):
  %i = kernel.global_id 0       get_global_id(0)     (also local_id, group_id, global_size,
                                                      local_size, num_groups)
  kernel.barrier                barrier(CLK_LOCAL_MEM_FENCE); `kernel.barrier global` also
                                fences global memory
  kernel.atomic_add %v, %mem[%i] : memref<?xf32>
                                atomically adds %v to mem[i] (f32 or i32 elements, global or
                                local memory); no result
  %old = kernel.atomic_rmw maxu %v, %mem[%i] : memref<?xi32>
                                atomically mem[i] = KIND(mem[i], v); the result is the old
                                value. KIND: addf (f16 or f32 elements), addi, maxs, maxu, mins,
                                minu (i32 elements; s/u say how the bits compare). An f16
                                element is half storage: the add runs a compare-and-swap loop on
                                the 32-bit word that holds it (no cl_khr_fp16 needed).
  %v = kernel.vload %mem[%i] : memref<?xf32> -> vector<4xf32>
  kernel.vstore %v, %mem[%i] : vector<4xf32>, memref<?xf32>
                                vector load/store of N contiguous elements. The index counts
                                VECTORS, not elements: elements i*N .. i*N+N-1 are accessed
                                (OpenCL's vloadN(i, p) convention). The memref has rank 1. An
                                f16 memref is read into / written from a vector of f32
                                (vload_halfN / vstore_halfN).
  %h = kernel.reinterpret %bytes : memref<?xi8> to memref<?xf16>
                                the same memory, from its first byte, read as elements of
                                another type (a Slang `void*` or a struct of several scalar
                                types: bytes); its length is the bytes' divided by the element
                                size. Rank 1, dynamic size, the same memory space.
  %buf = kernel.local_alloc : memref<256xf32, 3 : i32>
                                work-group local memory; only at the top level of a kernel body,
                                static shape, memory space 3.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    Float16Type,
    Float32Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    UnitAttr,
    VectorType,
    i32,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect, Pure
from xdsl.utils.exceptions import VerifyException

from diffc.dialects.abi import KERNEL_ENTRY, fill_roles

ENTRY = KERNEL_ENTRY  # (dialects/abi.py checks kernels' parameter roles by it)
REQD_WORK_GROUP_SIZE = "kernel.reqd_work_group_size"
UNROLL = "diffc.unroll"
# on a loop whose carried float sum may be added in any order (the dot products of a matrix
# operation, whose order Slang leaves to the implementation): the OpenCL backend lets the device
# compiler reassociate it where EmitOptions.reassociate says so
REASSOCIATE = "diffc.reassociate"
# on a function: the OpenCL emitter asks the device compiler to inline it at every call (a
# kernel's body shared by its variants, each of which calls it with its own constant flag)
ALWAYS_INLINE = "diffc.always_inline"
LOCAL_MEMORY_SPACE = 3
# on a `ub.poison` memref: the buffer of a null pointer (frontend/optional.py), which the OpenCL
# backend prints as a null pointer and the bounds check gives length 0
NULL_POINTER_ATTR = "diffc.null"
VECTOR_WIDTHS = (2, 3, 4, 8, 16)


def is_kernel(func: FuncOp) -> bool:
    return ENTRY in func.attributes


def mark_kernel(func: FuncOp, reqd_work_group_size: Sequence[int] | None = None) -> FuncOp:
    """Marks `func` as a kernel entry point (what the runtime calls); each parameter that has no
    kernel ABI role yet gets its plain one (dialects/abi.py: a memref is a buffer, else a value)."""
    from xdsl.dialects.builtin import i64

    func.attributes[ENTRY] = UnitAttr()
    fill_roles(func)
    if reqd_work_group_size is not None:
        func.attributes[REQD_WORK_GROUP_SIZE] = ArrayAttr(
            [IntegerAttr(int(n), i64) for n in reqd_work_group_size]
        )
    return func


def work_group_size(func: FuncOp) -> tuple[int, int, int] | None:
    """The kernel's `kernel.reqd_work_group_size` as (x, y, z), missing sizes 1; None without it."""
    attr = func.attributes.get(REQD_WORK_GROUP_SIZE)
    if not isinstance(attr, ArrayAttr):
        return None
    sizes = [a.value.data for a in attr.data if isinstance(a, IntegerAttr)]
    return tuple((sizes + [1, 1, 1])[:3])  # type: ignore[return-value]


def memory_space(t: Attribute) -> int | None:
    """The integer memory space of a memref type (None: global / unspecified)."""
    if isinstance(t, MemRefType) and isinstance(t.memory_space, IntegerAttr):
        return t.memory_space.value.data
    return None


def local_memref(element: Attribute, shape: Sequence[int]) -> MemRefType:
    return MemRefType(element, shape, memory_space=IntegerAttr(LOCAL_MEMORY_SPACE, i32))


class _IdOp(IRDLOperation):
    """`%x = kernel.<name> DIM`: a work-item query along dimension DIM (0, 1 or 2)."""

    dim = prop_def(IntegerAttr)
    result = result_def(IndexType)
    traits = traits_def(Pure())

    def __init__(self, dim: int):
        super().__init__(result_types=[IndexType()], properties={"dim": IntegerAttr(dim, 64)})

    @classmethod
    def parse(cls, parser: Parser):
        dim = parser.parse_integer(allow_boolean=False, allow_negative=False)
        attrs = parser.parse_optional_attr_dict()
        op = cls(dim)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(f" {self.dim.value.data}")
        printer.print_op_attributes(self.attributes)

    def verify_(self) -> None:
        if self.dim.value.data not in (0, 1, 2):
            raise VerifyException(f"'{self.name}' dimension must be 0, 1 or 2, got {self.dim.value.data}")


@irdl_op_definition
class GlobalIdOp(_IdOp):
    name = "kernel.global_id"


@irdl_op_definition
class LocalIdOp(_IdOp):
    name = "kernel.local_id"


@irdl_op_definition
class GroupIdOp(_IdOp):
    name = "kernel.group_id"


@irdl_op_definition
class GlobalSizeOp(_IdOp):
    name = "kernel.global_size"


@irdl_op_definition
class LocalSizeOp(_IdOp):
    name = "kernel.local_size"


@irdl_op_definition
class NumGroupsOp(_IdOp):
    name = "kernel.num_groups"


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """A work-group barrier with a local memory fence (`{global}` adds a global fence)."""

    name = "kernel.barrier"
    global_fence = opt_prop_def(UnitAttr, prop_name="global")
    assembly_format = "(`global` $global^)? attr-dict"

    def __init__(self, global_fence: bool = False):
        super().__init__(properties={"global": UnitAttr()} if global_fence else {})


def _check_indices(op: Operation, memref: SSAValue, indices: Sequence[SSAValue]) -> MemRefType:
    t = memref.type
    assert isinstance(t, MemRefType)
    if len(indices) != t.get_num_dims():
        raise VerifyException(
            f"'{op.name}' expects {t.get_num_dims()} indices for {t}, got {len(indices)}"
        )
    return t


@irdl_op_definition
class AtomicAddOp(IRDLOperation):
    """`kernel.atomic_add %v, %mem[%i] : memref<?xf32>`: mem[i] += v, atomically."""

    name = "kernel.atomic_add"
    T: ClassVar = VarConstraint("T", AnyAttr())
    value = operand_def(T)
    memref = operand_def(MemRefType.constr(T))
    indices = var_operand_def(IndexType())
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$value `,` $memref `[` $indices `]` attr-dict `:` type($memref)"

    def __init__(self, value: SSAValue | Operation, memref: SSAValue | Operation, indices: Sequence[SSAValue | Operation]):
        super().__init__(operands=[value, memref, indices])

    def verify_(self) -> None:
        t = _check_indices(self, self.memref, self.indices)
        el = t.element_type
        if not (isinstance(el, Float32Type) or el == i32):
            raise VerifyException(f"'{self.name}' supports f32 and i32 elements, got {el}")
        space = memory_space(t)
        if space not in (None, LOCAL_MEMORY_SPACE):
            raise VerifyException(f"'{self.name}' needs global or local (3) memory, got memory space {space}")


# MLIR's arith::AtomicRMWKind numbers (memref.atomic_rmw's `kind`) of the kinds kernels support.
ATOMIC_RMW_KINDS = {0: "addf", 1: "addi", 4: "maxs", 5: "maxu", 7: "mins", 8: "minu"}
ATOMIC_RMW_KIND_NUMBERS = {name: n for n, name in ATOMIC_RMW_KINDS.items()}
_FLOAT_KINDS = ("addf",)


@irdl_op_definition
class AtomicRMWOp(IRDLOperation):
    """`%old = kernel.atomic_rmw maxu %v, %mem[%i] : memref<?xi32>`: mem[i] = maxu(mem[i], v),
    atomically; %old is mem[i] before."""

    name = "kernel.atomic_rmw"
    T: ClassVar = VarConstraint("T", AnyAttr())
    kind = prop_def(StringAttr)
    value = operand_def(T)
    memref = operand_def(MemRefType.constr(T))
    indices = var_operand_def(IndexType())
    result = result_def(T)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    def __init__(
        self,
        kind: str,
        value: SSAValue | Operation,
        memref: SSAValue | Operation,
        indices: Sequence[SSAValue | Operation],
    ):
        v = SSAValue.get(value)
        super().__init__(
            operands=[v, memref, indices], result_types=[v.type], properties={"kind": StringAttr(kind)}
        )

    @classmethod
    def parse(cls, parser: Parser):
        kind = parser.parse_identifier()
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        mem = parser.parse_unresolved_operand()
        indices = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        if not isinstance(t, MemRefType):
            parser.raise_error(f"'kernel.atomic_rmw' needs a memref type, got {t}")
        value = parser.resolve_operand(value, t.element_type)
        mem = parser.resolve_operand(mem, t)
        indices = [parser.resolve_operand(i, IndexType()) for i in indices]
        op = cls(kind, value, mem, indices)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(f" {self.kind.data} ")
        printer.print_operand(self.value)
        printer.print_string(", ")
        printer.print_operand(self.memref)
        printer.print_string("[")
        printer.print_list(self.indices, printer.print_operand)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.memref.type)

    def verify_(self) -> None:
        t = _check_indices(self, self.memref, self.indices)
        el = t.element_type
        kind = self.kind.data
        if kind not in ATOMIC_RMW_KIND_NUMBERS:
            raise VerifyException(
                f"'{self.name}' kind must be one of {', '.join(ATOMIC_RMW_KIND_NUMBERS)}, got {kind}"
            )
        if kind in _FLOAT_KINDS:
            if not isinstance(el, Float16Type | Float32Type):
                raise VerifyException(f"'{self.name}' {kind} supports f16 and f32 elements, got {el}")
        elif el != i32:
            raise VerifyException(f"'{self.name}' {kind} supports i32 elements, got {el}")
        space = memory_space(t)
        if space not in (None, LOCAL_MEMORY_SPACE):
            raise VerifyException(f"'{self.name}' needs global or local (3) memory, got memory space {space}")


def _check_vector(op: Operation, memref: SSAValue, indices: Sequence[SSAValue], vec: Attribute) -> None:
    t = memref.type
    assert isinstance(t, MemRefType)
    if t.get_num_dims() != 1 or len(indices) != 1:
        raise VerifyException(f"'{op.name}' needs a rank-1 memref and one index, got {t}")
    if not isinstance(vec, VectorType) or vec.get_num_dims() != 1 or vec.get_shape()[0] not in VECTOR_WIDTHS:
        raise VerifyException(f"'{op.name}' needs a vector of 2, 3, 4, 8 or 16 elements, got {vec}")
    el = t.element_type
    want = Float32Type() if isinstance(el, Float16Type) else el
    if vec.element_type != want:
        raise VerifyException(
            f"'{op.name}' vector element type must be {want} for {t}, got {vec.element_type}"
        )


@irdl_op_definition
class VLoadOp(IRDLOperation):
    """`%v = kernel.vload %mem[%i] : memref<?xf32> -> vector<4xf32>`: elements i*4 .. i*4+3."""

    name = "kernel.vload"
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType())
    result = result_def(VectorType)
    traits = traits_def(MemoryReadEffect())
    assembly_format = "$memref `[` $indices `]` attr-dict `:` type($memref) `->` type($result)"

    def __init__(self, memref: SSAValue | Operation, index: SSAValue | Operation, result_type: VectorType):
        super().__init__(operands=[memref, [index]], result_types=[result_type])

    def verify_(self) -> None:
        _check_vector(self, self.memref, self.indices, self.result.type)


@irdl_op_definition
class VStoreOp(IRDLOperation):
    """`kernel.vstore %v, %mem[%i] : vector<4xf32>, memref<?xf32>`: elements i*4 .. i*4+3."""

    name = "kernel.vstore"
    value = operand_def(VectorType)
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType())
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$value `,` $memref `[` $indices `]` attr-dict `:` type($value) `,` type($memref)"

    def __init__(self, value: SSAValue | Operation, memref: SSAValue | Operation, index: SSAValue | Operation):
        super().__init__(operands=[value, memref, [index]])

    def verify_(self) -> None:
        _check_vector(self, self.memref, self.indices, self.value.type)


@irdl_op_definition
class ReinterpretOp(IRDLOperation):
    """`%h = kernel.reinterpret %bytes : memref<?xi8> to memref<?xf16>`: bytes as another element type."""

    name = "kernel.reinterpret"
    source = operand_def(MemRefType)
    result = result_def(MemRefType)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `to` type($result)"

    def __init__(self, source: SSAValue | Operation, result_type: MemRefType):
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        src, res = self.source.type, self.result.type
        assert isinstance(src, MemRefType) and isinstance(res, MemRefType)
        if src.element_type != IntegerType(8) or src.get_shape() != (DYNAMIC_INDEX,):
            raise VerifyException(f"'{self.name}' reads bytes (memref<?xi8>), got {src}")
        if res.get_shape() != (DYNAMIC_INDEX,):
            raise VerifyException(f"'{self.name}' result must be a rank-1 memref of dynamic size, got {res}")
        if memory_space(src) != memory_space(res):
            raise VerifyException(f"'{self.name}' keeps the memory space: {src} to {res}")


@irdl_op_definition
class LocalAllocOp(IRDLOperation):
    """`%buf = kernel.local_alloc : memref<256xf32, 3 : i32>`: work-group local memory."""

    name = "kernel.local_alloc"
    result = result_def(MemRefType)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type: MemRefType):
        super().__init__(result_types=[result_type])

    def verify_(self) -> None:
        t = self.result.type
        assert isinstance(t, MemRefType)
        if any(d < 0 for d in t.get_shape()):
            raise VerifyException(f"'{self.name}' needs a static shape, got {t}")
        if memory_space(t) != LOCAL_MEMORY_SPACE:
            raise VerifyException(f"'{self.name}' result must have memory space 3 (local), got {t}")
        parent = self.parent_op()
        if not isinstance(parent, FuncOp) or not is_kernel(parent):
            raise VerifyException(
                f"'{self.name}' must be at the top level of a func.func with {ENTRY}"
            )


Kernel = Dialect(
    "kernel",
    [
        GlobalIdOp,
        LocalIdOp,
        GroupIdOp,
        GlobalSizeOp,
        LocalSizeOp,
        NumGroupsOp,
        BarrierOp,
        AtomicAddOp,
        AtomicRMWOp,
        VLoadOp,
        VStoreOp,
        ReinterpretOp,
        LocalAllocOp,
    ],
    [],
)
