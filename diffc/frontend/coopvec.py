"""Slang's cooperative vectors, `CoopVec<T, N>`, as the vectors they compute like.

A CoopVec of N <= 4 elements is `vector<T, N>`: construction from N scalars or one (broadcast),
initializer lists, subscripts (also assigned, also at runtime indices), elementwise operators
and intrinsics, DifferentialPair and derivatives are the vector's. What only a CoopVec has:
`v.store(buffer, byteOffset)`, which writes its elements to a buffer of T from a byte offset.
The matrix operations of cooperative vectors (hardware matrix-vector products with their own
memory layouts) and larger CoopVecs are refused (E0008)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import SSAValue

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.errors import ARG_COUNT, TYPE_MISMATCH, UNDEFINED, UNSUPPORTED
from diffc.frontend.symbols import err

if TYPE_CHECKING:
    from diffc.frontend.checker import Checker

MAX_ELEMENTS = 1 << 16  # a CoopVec is a vector of any width; split-wide-vectors gives OpenCL its widths
METHODS = {"store"}
# Slang's cooperative-vector operations this front end does not implement
REFUSED_METHODS = {"matMul", "matMulAdd", "outerProductAccumulate", "reduceSumAccumulate", "load", "fill",
                   "copyFrom", "storeAny"}
REFUSED_FUNCTIONS = {"coopVecMatMul", "coopVecMatMulAdd", "coopVecMatMulPacked", "coopVecMatMulAddPacked",
                     "coopVecOuterProductAccumulate", "coopVecReduceSumAccumulate", "coopVecLoad",
                     "coopVecLoadGroupshared", "coopVecStore"}


def resolve(c: Checker, t: A.TypeRef) -> T.Type:
    """`CoopVec<T, N>`: T a numeric scalar, N a compile-time int (a literal, a `static const`, or a
    generic int parameter of an instance)."""
    if len(t.args) != 2:
        raise err(ARG_COUNT, f"CoopVec takes an element type and a size, got {len(t.args)} arguments", t)
    if not isinstance(t.args[0], A.TypeRef):
        raise err(UNDEFINED, f"'{t.args[0]}' is not a type (in the arguments of CoopVec)", t)
    elem = c.resolve(t.args[0])
    if not isinstance(elem, T.Scalar) or elem.kind == "bool":
        raise err(TYPE_MISMATCH, f"CoopVec needs a numeric scalar element type, got {elem}", t)
    n = t.args[1]
    if isinstance(n, str):
        n = c.static_const_int(n)
    if not isinstance(n, int) or n < 1:
        raise err(UNDEFINED, f"the size of CoopVec<...> must be a positive compile-time int, got '{t.args[1]}'", t)
    if n > MAX_ELEMENTS:
        raise err(UNSUPPORTED, f"CoopVec<{elem}, {n}>: a CoopVec of more than {MAX_ELEMENTS} elements is not "
                  "supported (diffc models a CoopVec as a vector)", t)
    return T.Vector(elem, n) if n > 1 else elem


def check_method(c: Checker, e: A.Call, callee: A.Member, vt: T.Vector) -> T.Type:
    """`v.store(buffer, byteOffset)`: v's elements into `buffer` (a buffer of v's element type)
    from `byteOffset`, a multiple of the element's size."""
    if callee.name in REFUSED_METHODS:
        raise err(UNSUPPORTED, f"the CoopVec operation '{callee.name}' is not supported", callee.name_span)
    if len(e.args) != 2:
        raise err(ARG_COUNT, f"store takes a buffer and a byte offset, got {len(e.args)} arguments", e)
    bt = c.expr(e.args[0])
    if not (isinstance(bt, T.Buffer) and not bt.atomic and bt.elem == vt.elem):
        raise err(TYPE_MISMATCH, f"store of a {vt} needs a RWStructuredBuffer<{vt.elem}>, got {bt}", e.args[0])
    c.expect_type(e.args[1], T.INT)
    size = element_bytes(vt.elem)
    if isinstance(e.args[1], A.Num) and int(e.args[1].value) % size:
        raise err(TYPE_MISMATCH, f"store's byte offset {int(e.args[1].value)} is not a multiple of the "
                  f"{size}-byte elements of the buffer", e.args[1])
    e.kind, e.target = "coopvec_store", vt
    return T.VOID


def element_bytes(s: T.Scalar) -> int:
    return {"half": 2, "float": 4, "double": 8}.get(s.kind) or T.int_bits(s) // 8


def lower_store(lw, e: A.Call) -> list[SSAValue]:
    """The elements, one after another, from element byteOffset / size of the buffer."""
    vt: T.Vector = e.target
    (vec,) = lw.lower_as(e.callee.base, vt)
    (buf,) = lw.expr(e.args[0])
    (byte_offset,) = lw.lower_as(e.args[1], T.INT)
    at = lw.v(arith.IndexCastOp(byte_offset, IndexType()))
    size = lw.v(arith.ConstantOp(IntegerAttr(element_bytes(vt.elem), IndexType())))
    lw.store_mem(buf, lw.v(arith.DivUIOp(at, size)), vt, [vec])
    return []
