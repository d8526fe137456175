"""Slang's cooperative vectors, `CoopVec<T, N>`, and their matrix operations.

A CoopVec of N elements is `vector<N x T>` in the IR, of any N (one element: a scalar):
construction from N scalars or one (broadcast), initializer lists, subscripts (also assigned,
also at runtime indices), elementwise operators and intrinsics, DifferentialPair and derivatives
are the vector's, as Slang's CoopVec is IDifferentiable with elementwise derivatives.
split-wide-vectors gives the OpenCL emitter vectors of the widths it has.

What only a CoopVec has (the matrices live in buffers; a byte offset is a multiple of the
buffer's element size, the matrix stride too):
  v.store(buffer or groupshared array[, byteOffset]), coopVecLoad<N[, T]>(buffer[, byteOffset]),
  coopVecLoadGroupshared<N[, T]>(array[, byteOffset]), v.getCount(),
  v.fill(x), v.copyFrom(w), v.matMul(Add)Accum(Packed)(...) = v += coopVecMatMul...<T, N>(...)
  coopVecMatMul<T, M[, K]>(input, inputInterpretation, matrix, matrixOffset, matrixInterpretation,
                           memoryLayout, transpose, matrixStride)           -> CoopVec<T, M>
  coopVecMatMulAdd<T, M[, K]>(..., matrixInterpretation, bias, biasOffset, biasInterpretation,
                              memoryLayout, transpose, matrixStride)
  coopVecMatMulPacked / coopVecMatMulAddPacked: `k` after inputInterpretation (float
      interpretations pack one value per element, so k is the input's size)
  coopVecOuterProductAccumulate(a, b, matrix, matrixOffset, matrixStride, memoryLayout,
                                matrixInterpretation)     matrix[i][j] += a[i] * b[j] (atomic)
  coopVecReduceSumAccumulate(v, buffer, offset)            buffer[i] += v[i] (atomic)
The matrix and bias are (RW)ByteAddressBuffers (read as the interpretation says: Slang's CPU and
GPU targets take these), RWStructuredBuffer / StructuredBuffer of half, float or double, or
pointers to them (the pointer forms take no offset; accumulation needs half or float); for a
structured buffer or typed pointer, the Float16 / Float32 / Float64 interpretations must name its
element type. A `void*` is read as the interpretation says (accumulations: as the matrix
interpretation, or the vector's element type for a sum), from its byte offset on
(byte_pointers.py); so is a byte address buffer, from its byte offset. Layouts: RowMajor /
ColumnMajor (the stride is the bytes from one row / column to the next, 0 for packed; a constant
one shorter than a row / column is an error), InferencingOptimal / TrainingOptimal: row-major,
packed (diffc's choice; the stride is ignored), so every operation reads and writes a matrix in
them alike (the gradient an outer product adds is the matrix a product reads). `transpose` needs
an optimal layout (as in Slang): the stored matrix is then K x M and the product uses its
transpose. Without transpose the stored
matrix is M x K. The operations run per work-item (as Slang specifies them), as loops over
private arrays of the vectors' elements. As in Slang they are not differentiable: a
derivative-carrying input in differentiated code is E0006 (Slang users give the function that
calls them a backward derivative built from the outer product, the reduction and a transposed
product)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects.builtin import IndexType, IntegerAttr, StringAttr, UnitAttr, VectorType
from xdsl.ir import Block, SSAValue

from diffc.dialects import diff, kernel

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.features import byte_pointers, groupshared
from diffc.frontend.coopvec_enums import INTERPRETED, PRELUDE
from diffc.frontend.errors import ARG_COUNT, TYPE_MISMATCH, UNDEFINED, UNSUPPORTED
from diffc.frontend.checker.symbols import err
from diffc.frontend.feature import Feature

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

MAX_ELEMENTS = 1 << 16  # a CoopVec is a vector of any width; split-wide-vectors gives OpenCL its widths
# the mutating methods: `v.matMulAccum(args)` is `v += coopVecMatMul<T, N>(args)` (Slang's definition)
ACCUMULATING = {"matMulAccum": "coopVecMatMul", "matMulAddAccum": "coopVecMatMulAdd",
                "matMulAccumPacked": "coopVecMatMulPacked", "matMulAddAccumPacked": "coopVecMatMulAddPacked"}
METHODS = {"store", "getCount", "fill", "copyFrom"} | set(ACCUMULATING)
# Slang's cooperative-vector operations this front end does not implement
REFUSED_METHODS = {"matMul", "matMulAdd", "outerProductAccumulate", "reduceSumAccumulate", "load", "storeAny"}
FUNCTIONS = {"coopVecMatMul", "coopVecMatMulAdd", "coopVecMatMulPacked", "coopVecMatMulAddPacked",
             "coopVecOuterProductAccumulate", "coopVecReduceSumAccumulate", "coopVecLoad", "coopVecLoadGroupshared"}
REFUSED_FUNCTIONS = {"coopVecStore"}


def resolve(c: Checking, t: A.TypeRef) -> T.Type:
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


def check_method(c: Checking, e: A.Call, callee: A.Member, vt: T.Vector) -> T.Type:
    """`v.store(buffer[, byteOffset])`: v's elements into `buffer` (a buffer of v's element type,
    or a RWByteAddressBuffer) from `byteOffset` (0 if omitted), a multiple of the element's size."""
    if callee.name in REFUSED_METHODS:
        raise err(UNSUPPORTED, f"the CoopVec operation '{callee.name}' is not supported", callee.name_span)
    if callee.name == "getCount":  # N, an int constant
        if e.args:
            raise err(ARG_COUNT, f"getCount takes no arguments, got {len(e.args)}", e)
        return c.expr(c.replace(e, A.Num(vt.n, False, "", span=e.span)))
    if callee.name in ("fill", "copyFrom"):  # v = CoopVec<T, N>(x): a broadcast, or a conversion
        if len(e.args) != 1:
            raise err(ARG_COUNT, f"{callee.name} takes one argument, got {len(e.args)}", e)
        own = A.TypeExpr(A.TypeRef("CoopVec", [A.TypeRef(str(vt.elem), span=e.span), vt.n], span=e.span), span=e.span)
        c.expr(c.replace(e, A.Assign("=", callee.base, A.Call(own, [e.args[0]], span=e.span), span=e.span)))
        return T.VOID
    if callee.name in ACCUMULATING:
        product = A.Name(ACCUMULATING[callee.name], targs=[A.TypeRef(str(vt.elem), span=e.span), vt.n],
                         span=callee.name_span)
        c.expr(c.replace(e, A.Assign("+=", callee.base, A.Call(product, e.args, span=e.span), span=e.span)))
        return T.VOID
    if len(e.args) not in (1, 2):
        raise err(ARG_COUNT, f"store takes a buffer and maybe a byte offset, got {len(e.args)} arguments", e)
    bt = c.expr(e.args[0])
    if isinstance(bt, T.ByteBuffer) and not bt.rw:
        raise err(TYPE_MISMATCH, f"store of a {vt} needs a writable buffer, got a read-only {bt}", e.args[0])
    shared = _groupshared_array(c, e.args[0], bt)
    if shared and bt.elem != vt.elem:
        raise err(TYPE_MISMATCH, f"store of a {vt} into group-shared memory needs a groupshared {vt.elem}[M], got {bt}",
                  e.args[0])
    typed_pointer = isinstance(bt, T.Pointer) and not bt.atomic and not bt.by_value and bt.elem == vt.elem
    if not (shared or typed_pointer or isinstance(bt, T.ByteBuffer)
            or isinstance(bt, T.Buffer) and not bt.atomic and bt.elem == vt.elem):
        raise err(TYPE_MISMATCH, f"store of a {vt} needs a RWStructuredBuffer<{vt.elem}>, a {vt.elem}* or a "
                  f"RWByteAddressBuffer, got {bt}", e.args[0])
    if len(e.args) == 1:
        return _typed(c, e, "coopvec_store", vt)
    c.expect_type(e.args[1], T.INT)
    size = element_bytes(vt.elem)
    if isinstance(e.args[1], A.Num) and int(e.args[1].value) % size:
        raise err(TYPE_MISMATCH, f"store's byte offset {int(e.args[1].value)} is not a multiple of the "
                  f"{size}-byte elements of the buffer", e.args[1])
    return _typed(c, e, "coopvec_store", vt)


def _groupshared_array(c: Checking, arg: A.Expr, t: T.Type) -> bool:
    """Whether `arg` is a whole groupshared array of scalars (Slang's `groupshared T[M]` operand)."""
    return isinstance(t, T.Array) and isinstance(t.elem, T.Scalar) and isinstance(c.current(arg), A.Name) \
        and groupshared.in_groupshared(c.current(arg))


def _typed(c: Checking, e: A.Call, kind: str, target) -> T.Type:
    e.kind, e.target = kind, target
    return T.VOID


def element_bytes(s: T.Scalar) -> int:
    return {"half": 2, "float": 4, "double": 8}.get(s.kind) or T.int_bits(s) // 8


def lower_store(lw, e: A.Call) -> list[SSAValue]:
    """The elements, one after another, from element byteOffset / size of the buffer."""
    vt: T.Vector = e.target
    (vec,) = lw.lower_as(e.callee.base, vt)
    if groupshared.in_groupshared(e.args[0]):  # a groupshared T[M]: its work-group memory
        buf, start = lw.address(e.args[0])
    else:
        vals = lw.expr(e.args[0])
        buf, start = vals[0], vals[1] if len(vals) == 2 else None  # (a pointer: its offset)
    if len(e.args) == 2:
        (byte_offset,) = lw.lower_as(e.args[1], T.INT)
        at = lw.v(arith.IndexCastOp(byte_offset, IndexType()))
    else:
        at = lw.index_const(0)
    if byte_pointers.is_bytes(buf):  # a RWByteAddressBuffer
        byte_pointers.store(lw, buf, at, vt, [vec])
        return []
    size = lw.v(arith.ConstantOp(IntegerAttr(element_bytes(vt.elem), IndexType())))
    at = lw.v(arith.DivUIOp(at, size))
    lw.store_mem(buf, at if start is None else lw.v(arith.AddiOp(start, at)), vt, [vec])
    return []


# ---- matrix operations, loads --------------------------------------------------------------------

@dataclass
class Memory:
    """A matrix, bias or vector operand in memory: the argument, the index of its byte offset
    argument (None: a pointer form, or an omitted offset), its element type."""

    arg: A.Expr
    offset: A.Expr | None
    elem: T.Scalar


@dataclass
class Plan:
    op: str  # matmul, outer, reduce, load
    result: T.Type
    vectors: list[A.Expr]  # the CoopVec operands
    vector_types: list[T.Vector]
    matrix: Memory | None = None
    bias: Memory | None = None
    layout: str = "RowMajor"
    transpose: bool = False
    stride: A.Expr | None = None
    rows: int = 0  # of the matrix as stored
    cols: int = 0
    input_as: T.Scalar | None = None  # the input's interpretation (the input is rounded to it first)


def _enum_case(c: Checking, e: A.Expr, enum: str, what: str) -> str:
    """The case of `enum` that `e` names at compile time (a case, or a `static const` holding one)."""
    c.expr(e)
    seen = e
    for _ in range(8):
        loc = getattr(seen, "static", None) or getattr(seen, "sym", None)
        if loc is None or getattr(loc, "value", None) is None:
            break
        seen = loc.value
        if isinstance(seen, A.Num):
            cases = c.enums.get(enum, {})
            name = next((n for n, v in cases.items() if isinstance(v.value, A.Num) and v.value.value == seen.value), None)
            if name is not None and _names_case_of(c, enum, loc):
                return name
            break
    raise err(TYPE_MISMATCH, f"{what} must be a compile-time {enum} case (as {enum}.{_FIRST[enum]})", e)


def _names_case_of(c: Checking, enum: str, loc) -> bool:
    return any(v is loc for v in c.enums.get(enum, {}).values())


_INTERPRETATION_OF = {v: k for k, v in INTERPRETED.items()}
_FIRST = {"CoopVecComponentType": "Float16", "CoopVecMatrixLayout": "RowMajor"}


def _interpretation(c: Checking, e: A.Expr, what: str) -> T.Scalar:
    case = _enum_case(c, e, "CoopVecComponentType", what)
    if case not in INTERPRETED:
        raise err(UNSUPPORTED, f"{what} CoopVecComponentType.{case} is not supported (Float16, Float32 and Float64 are)", e)
    return T.Scalar(INTERPRETED[case])


def _memory(c: Checking, arg: A.Expr, offset: A.Expr | None, interp: A.Expr, what: str) -> Memory:
    """A buffer (with a byte offset) or a pointer (without), read as `interp` says."""
    t = c.expr(arg)
    want = _interpretation(c, interp, f"the {what}'s interpretation")
    if isinstance(t, T.ByteBuffer):  # bytes: read as the interpretation says
        elem = want
        if offset is None:
            raise err(ARG_COUNT, f"the {what} is a buffer: it needs a byte offset after it", arg)
        c.expect_type(offset, T.INT)
    elif isinstance(t, T.Buffer) and not t.atomic and isinstance(t.elem, T.Scalar):
        elem = t.elem
        if offset is None:
            raise err(ARG_COUNT, f"the {what} is a buffer: it needs a byte offset after it", arg)
        c.expect_type(offset, T.INT)
    elif isinstance(t, T.Pointer) and not t.atomic and (isinstance(t.elem, T.Scalar) or t.elem == T.VOID) \
            and not t.by_value:
        elem = want if t.elem == T.VOID else t.elem  # (a void*: what the interpretation says)
        if offset is not None:
            raise err(ARG_COUNT, f"the {what} is a pointer: it takes no byte offset", offset)
    else:
        raise err(TYPE_MISMATCH, f"the {what} must be a structured buffer or a pointer of half, float or double "
                  f"(or a void*, or a (RW)ByteAddressBuffer), got {t}", arg)
    if elem != want:
        raise err(TYPE_MISMATCH, f"the {what}'s interpretation CoopVecComponentType."
                  f"{_INTERPRETATION_OF[want.kind]} reads {want} elements, but the {what} holds {elem}",
                  interp)
    _check_byte_offset(offset, elem)
    return Memory(arg, offset, elem)


def _check_byte_offset(offset: A.Expr | None, elem: T.Scalar) -> None:
    if isinstance(offset, A.Num) and not offset.is_float and int(offset.value) % element_bytes(elem):
        raise err(TYPE_MISMATCH, f"byte offset {int(offset.value)} is not a multiple of the "
                  f"{element_bytes(elem)}-byte {elem} elements", offset)


def _vector(c: Checking, e: A.Expr, what: str) -> T.Vector:
    t = c.expr(e)
    if not (isinstance(t, T.Vector) and T.is_float_scalar(t.elem)):
        raise err(TYPE_MISMATCH, f"{what} must be a CoopVec of half, float or double of at least 2 elements, got {t}", e)
    return t


def _size_arg(c: Checking, name: str, a, where: A.Node, what: str) -> int:
    v = c.generic_arg(name, a, where)
    if not isinstance(v, int) or v < 2:
        raise err(UNSUPPORTED if isinstance(v, int) else TYPE_MISMATCH,
                  f"{what} of {name} must be a compile-time int of at least 2, got {v}", where)
    return v


def check_function(c: Checking, e: A.Call, name: str, callee: A.Name) -> T.Type:
    """The checks of one call of Slang's CoopVec functions; e.target gets its Plan."""
    args, targs = e.args, callee.targs
    if name == "coopVecLoadGroupshared":
        if not targs or len(targs) > 2 or not 1 <= len(args) <= 2:
            raise err(ARG_COUNT, "coopVecLoadGroupshared<N[, T]>(array[, byteOffset]) takes a size, maybe an element "
                      "type, then a groupshared array and maybe a byte offset", e)
        n = _size_arg(c, name, targs[0], callee, "the size")
        at = c.expr(args[0])
        if not _groupshared_array(c, args[0], at):
            raise err(TYPE_MISMATCH, f"coopVecLoadGroupshared reads a groupshared array of scalars, got {at}", args[0])
        if len(targs) == 2 and c.generic_arg(name, targs[1], callee) != at.elem:
            raise err(TYPE_MISMATCH, f"coopVecLoadGroupshared<{n}, {targs[1]}> reads {targs[1]} elements, but the "
                      f"array holds {at.elem}", args[0])
        offset = args[1] if len(args) == 2 else None
        if offset is not None:
            c.expect_type(offset, T.INT)
        _check_byte_offset(offset, at.elem)
        vt = T.Vector(at.elem, n)
        e.kind, e.target = "coopvec", Plan("load", vt, [], [], matrix=Memory(args[0], offset, at.elem))
        return vt
    if name == "coopVecLoad":
        if not targs or len(targs) > 2 or not 1 <= len(args) <= 2:
            raise err(ARG_COUNT, "coopVecLoad<N[, T]>(buffer[, byteOffset]) takes a size, maybe an element type, "
                      "then a buffer and maybe a byte offset", e)
        n = _size_arg(c, name, targs[0], callee, "the size")
        bt = c.expr(args[0])
        is_ptr = isinstance(bt, T.Pointer) and not bt.by_value
        if isinstance(bt, T.ByteBuffer):  # bytes: the element type says what they are
            if len(targs) != 2:
                raise err(ARG_COUNT, f"coopVecLoad<N, T> of a {bt} needs the element type T (its bytes have none)", callee)
            elem = c.generic_arg(name, targs[1], callee)
            if not (isinstance(elem, T.Scalar) and elem != T.BOOL):
                raise err(TYPE_MISMATCH, f"coopVecLoad<{n}, {elem}>: the element type must be a numeric scalar", callee)
        elif not (isinstance(bt, T.Buffer | T.Pointer) and isinstance(bt.elem, T.Scalar) and not bt.atomic):
            raise err(TYPE_MISMATCH, f"coopVecLoad reads a structured buffer or a pointer of scalars (or a "
                      f"(RW)ByteAddressBuffer), got {bt}", args[0])
        else:
            elem = bt.elem
        if len(targs) == 2 and not isinstance(bt, T.ByteBuffer):
            elem = c.generic_arg(name, targs[1], callee)
            if elem != bt.elem:
                raise err(TYPE_MISMATCH, f"coopVecLoad<{n}, {elem}> reads {elem} elements, but the buffer holds "
                          f"{bt.elem}", args[0])
        offset = args[1] if len(args) == 2 else None
        if offset is not None:
            c.expect_type(offset, T.INT)
        _check_byte_offset(offset, elem)
        vt = T.Vector(elem, n)
        e.kind, e.target = "coopvec", Plan("load", vt, [], [], matrix=Memory(args[0], offset, elem))
        return vt
    if name == "coopVecReduceSumAccumulate":
        if len(args) not in (2, 3):
            raise err(ARG_COUNT, f"{name}(v, buffer, byteOffset) or (v, pointer) takes 2 or 3 arguments, got {len(args)}", e)
        vt = _vector(c, args[0], "the vector")
        mem = _accumulated(c, args[1], args[2] if len(args) == 3 else None, "buffer", vt.elem)
        e.kind, e.target = "coopvec", Plan("reduce", T.VOID, [args[0]], [vt], matrix=mem)
        return T.VOID
    if name == "coopVecOuterProductAccumulate":
        if len(args) not in (6, 7):
            raise err(ARG_COUNT, f"{name}(a, b, matrix, matrixOffset, matrixStride, memoryLayout, "
                      f"matrixInterpretation) takes 7 arguments (6 with a pointer), got {len(args)}", e)
        a, b = _vector(c, args[0], "a"), _vector(c, args[1], "b")
        ptr = len(args) == 6
        stride, layout, interp = args[3:] if ptr else args[4:]
        want = _interpretation(c, interp, "the matrix's interpretation")
        mem = _accumulated(c, args[2], None if ptr else args[3], "matrix", want)
        if want != mem.elem:
            raise err(TYPE_MISMATCH, f"the matrix's interpretation reads {want} elements, but the matrix holds "
                      f"{mem.elem}", interp)
        plan = Plan("outer", T.VOID, [args[0], args[1]], [a, b], matrix=mem, rows=a.n, cols=b.n)
        _layout(c, plan, layout, None, stride)
        _check_stride(plan)
        e.kind, e.target = "coopvec", plan
        return T.VOID
    # the matrix-vector products
    packed, add = name.endswith("Packed"), "Add" in name
    slots = ["input", "inputInterpretation"] + (["k"] if packed else []) + ["matrix", "matrixOffset",
             "matrixInterpretation"] + (["bias", "biasOffset", "biasInterpretation"] if add else []) + [
             "memoryLayout", "transpose", "matrixStride"]
    ptr_slots = [s for s in slots if s not in ("matrixOffset", "biasOffset")]
    at = slots.index("matrix")
    pointer = len(args) > at and isinstance(c.expr(args[at]), T.Pointer)  # the pointer form takes no offsets
    want = ptr_slots if pointer else slots
    if len(args) != len(want):
        raise err(ARG_COUNT, f"{name} takes ({', '.join(want)}): {len(want)} arguments, got {len(args)}", e)
    got = dict(zip(want, args))
    if not 2 <= len(targs) <= 3:
        raise err(ARG_COUNT, f"{name}<T, M[, K]>: give the result's element type and size", callee)
    rt = c.generic_arg(name, targs[0], callee)
    if not (isinstance(rt, T.Scalar) and T.is_float_scalar(rt)):
        raise err(UNSUPPORTED, f"{name}<{rt}, ...>: results of half, float or double are supported", callee)
    m = _size_arg(c, name, targs[1], callee, "the result size M")
    it = _vector(c, got["input"], "the input")
    k = it.n
    if len(targs) == 3 and _size_arg(c, name, targs[2], callee, "the input size K") != k:
        raise err(TYPE_MISMATCH, f"{name}<..., K = {targs[2]}>: the input has {k} elements", got["input"])
    in_interp = _interpretation(c, got["inputInterpretation"], "the input's interpretation")
    if packed:
        c.expect_type(got["k"], T.INT)
        kk = got["k"]
        if not (isinstance(kk, A.Num) and int(kk.value) == k):
            raise err(UNSUPPORTED, f"{name}: a {in_interp} interpretation packs one value per element, so k must be "
                      f"the input's size {k}", kk)
    mat = _memory(c, got["matrix"], got.get("matrixOffset"), got["matrixInterpretation"], "matrix")
    bias = _memory(c, got["bias"], got.get("biasOffset"), got["biasInterpretation"], "bias") if add else None
    plan = Plan("matmul", T.Vector(rt, m), [got["input"]], [it], matrix=mat, bias=bias, input_as=in_interp)
    _layout(c, plan, got["memoryLayout"], got["transpose"], got["matrixStride"])
    plan.rows, plan.cols = (k, m) if plan.transpose else (m, k)
    _check_stride(plan)
    e.kind, e.target = "coopvec", plan
    return plan.result


def _accumulated(c: Checking, arg: A.Expr, offset: A.Expr | None, what: str, as_void: T.Scalar) -> Memory:
    """Where an accumulation adds: a RWStructuredBuffer or a pointer of half or float, or a void*
    read as `as_void`."""
    t = c.expr(arg)
    if isinstance(t, T.ByteBuffer) and t.rw and as_void not in (T.HALF, T.FLOAT):
        raise err(UNSUPPORTED, f"accumulating {as_void} values into a RWByteAddressBuffer is not supported (atomic "
                  "adds take half or float)", arg)
    if isinstance(t, T.ByteBuffer) and t.rw:  # bytes, added to as `as_void`
        if offset is None:
            raise err(ARG_COUNT, f"the {what} is a buffer: it needs a byte offset after it", arg)
        c.expect_type(offset, T.INT)
        _check_byte_offset(offset, as_void)
        return Memory(arg, offset, as_void)
    if isinstance(t, T.Pointer) and t.elem == T.VOID and as_void in (T.HALF, T.FLOAT):
        if offset is not None:
            raise err(ARG_COUNT, f"the {what} is a pointer: it takes no byte offset", offset)
        return Memory(arg, None, as_void)
    if isinstance(t, T.Buffer) and not t.atomic and t.elem in (T.HALF, T.FLOAT):
        if offset is None:
            raise err(ARG_COUNT, f"the {what} is a buffer: it needs a byte offset after it", arg)
        c.expect_type(offset, T.INT)
    elif isinstance(t, T.Pointer) and not t.atomic and t.elem in (T.HALF, T.FLOAT):
        if offset is not None:
            raise err(ARG_COUNT, f"the {what} is a pointer: it takes no byte offset", offset)
    else:
        raise err(TYPE_MISMATCH, f"the {what} must be a RWStructuredBuffer or a pointer of half or float (atomic "
                  f"adds), or a RWByteAddressBuffer read as half or float, got {t}", arg)
    _check_byte_offset(offset, t.elem)
    return Memory(arg, offset, t.elem)


def _layout(c: Checking, plan: Plan, layout: A.Expr, transpose: A.Expr | None, stride: A.Expr) -> None:
    plan.layout = _enum_case(c, layout, "CoopVecMatrixLayout", "the memory layout")
    if transpose is not None:
        c.expect_type(transpose, T.BOOL)
        plan.transpose = _const_bool(transpose)
        if plan.transpose and plan.layout in ("RowMajor", "ColumnMajor"):
            raise err(TYPE_MISMATCH, f"transpose needs an optimal layout (InferencingOptimal or TrainingOptimal); "
                      f"with {plan.layout} it must be false (use the other of RowMajor / ColumnMajor)", transpose)
    c.expect_type(stride, T.UINT)
    es = element_bytes(plan.matrix.elem)
    if isinstance(stride, A.Num) and not stride.is_float and int(stride.value) % es:
        raise err(TYPE_MISMATCH, f"matrix stride {int(stride.value)} is not a multiple of the {es}-byte "
                  f"{plan.matrix.elem} elements", stride)
    plan.stride = stride


def _check_stride(p: Plan) -> None:
    """A constant RowMajor / ColumnMajor stride shorter than a row / column of the matrix the
    operation reads (its sizes are the vectors') would overlap rows: a located error."""
    if p.layout not in ("RowMajor", "ColumnMajor") or not isinstance(p.stride, A.Num) or p.stride.is_float:
        return
    stride, es = int(p.stride.value), element_bytes(p.matrix.elem)
    run, what = (p.cols, "row") if p.layout == "RowMajor" else (p.rows, "column")
    if stride and stride < run * es:
        raise err(TYPE_MISMATCH, f"matrix stride {stride} bytes is shorter than a {what} of the {p.rows} x {p.cols} "
                  f"{p.matrix.elem} matrix ({run} elements, {run * es} bytes) in {p.layout} layout", p.stride)


def _const_bool(e: A.Expr) -> bool:
    if isinstance(e, A.BoolLit):
        return e.value
    raise err(TYPE_MISMATCH, "transpose must be a literal true or false", e)


def _where(lw, mem: Memory) -> tuple[SSAValue, SSAValue]:
    """The memref and the element index where `mem` starts."""
    if groupshared.in_groupshared(mem.arg):  # a groupshared array: its work-group memory
        vals = list(lw.address(mem.arg))
    else:
        vals = lw.expr(mem.arg)
    if byte_pointers.is_bytes(vals[0]) and len(vals) == 1:  # a (RW)ByteAddressBuffer: from its byte offset
        at = lw.index_const(0)
        if mem.offset is not None:
            (byte_offset,) = lw.lower_as(mem.offset, T.INT)
            at = lw.v(arith.IndexCastOp(byte_offset, IndexType()))
        return byte_pointers.typed_at(lw, vals[0], at, mem.elem)
    if byte_pointers.is_bytes(vals[0]) and len(vals) == 2 and T.scalar_bytes(mem.elem) > 1:  # a void*
        vals = list(byte_pointers.typed_at(lw, vals[0], vals[1], mem.elem))
    buf = vals[0]
    at = vals[1] if len(vals) > 1 else lw.index_const(0)  # a pointer: its offset
    if mem.offset is not None:
        (byte_offset,) = lw.lower_as(mem.offset, T.INT)
        off = lw.v(arith.IndexCastOp(byte_offset, IndexType()))
        off = lw.v(arith.DivUIOp(off, lw.index_const(element_bytes(mem.elem))))
        at = lw.v(arith.AddiOp(at, off)) if len(vals) > 1 else off
    return buf, at


def _strides(lw, p: Plan) -> tuple[SSAValue, SSAValue]:
    """Elements from one stored row to the next, and from one column to the next."""
    packed_rows = p.layout not in ("RowMajor", "ColumnMajor") or (isinstance(p.stride, A.Num) and int(p.stride.value) == 0)
    if packed_rows or p.stride is None:
        return lw.index_const(p.cols), lw.index_const(1)
    (stride,) = lw.lower_as(p.stride, T.UINT)
    s = lw.v(arith.IndexCastOp(stride, IndexType()))
    s = lw.v(arith.DivUIOp(s, lw.index_const(element_bytes(p.matrix.elem))))
    return (s, lw.index_const(1)) if p.layout == "RowMajor" else (lw.index_const(1), s)


def _scalar(lw, value: SSAValue, src: T.Scalar, dst: T.Scalar) -> SSAValue:
    return lw.convert([value], src, dst)[0]


def _add_to(lw, mem_elem: T.Scalar, buf: SSAValue, at: SSAValue, value: SSAValue, elem: T.Scalar) -> None:
    lw.atomic_rmw(0, _scalar(lw, value, elem, mem_elem), buf, at)  # addf


def lower_operation(lw, e: A.Call) -> list[SSAValue]:
    p: Plan = e.target
    if p.op == "load":
        buf, at = _where(lw, p.matrix)
        return lw.load_mem(buf, at, p.result)
    vecs = [lw.lower_as(x, t)[0] for x, t in zip(p.vectors, p.vector_types)]
    if p.op == "reduce":
        (v,), vt = vecs, p.vector_types[0]
        buf, at = _where(lw, p.matrix)
        arr = _spill(lw, v, vt)

        def add(i: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            lane = lw.v(memref.LoadOp.get(arr, [i]))
            _add_to(lw, p.matrix.elem, buf, lw.v(arith.AddiOp(at, i)), lane, vt.elem)
            return []

        _loop(lw, vt.n, [], add, "reduce_sum_accumulate")
        return []
    if p.op == "outer":
        return _outer(lw, p, *vecs)
    return _matmul(lw, p, vecs[0])


def _spill(lw, v: SSAValue, vt: T.Vector, elem: T.Scalar | None = None) -> SSAValue:
    """A private array of v's elements (converted to `elem`), for loops that index them: a
    runtime lane of a vector is a select over its lanes, an array element one load. (Storing a
    derivative-carrying value there is E0006: Slang's matrix operations are not differentiable.)"""
    elem = elem or vt.elem
    arr = lw.v(memref.AllocaOp.get(T.ir_scalar(elem), shape=[vt.n]))
    for k in range(vt.n):
        lane = _scalar(lw, lw.v(vector.ExtractOp(v, [k], T.ir_scalar(vt.elem))), vt.elem, elem)
        lw.emit(memref.StoreOp.get(lane, arr, [lw.index_const(k)]))
    return arr


COOPVEC_LOOP = "diffc.coopvec"  # on the outer loop of each operation: which one (for kernel passes)


def _loop(lw, n: int, init: list[SSAValue], body, op: str | None = None, reassociate: bool = False) -> list[SSAValue]:
    """scf.for i in [0, n) carrying `init`; body(i, carried) -> the next carried values;
    `reassociate`: its carried sum may be added in any order (kernel.REASSOCIATE)."""
    blk = Block(arg_types=[IndexType(), *[v.type for v in init]])

    def fill():
        out = body(blk.args[0], list(blk.args[1:]))
        lw.emit(scf.YieldOp(*out))

    lw.in_block(blk, fill)
    loop = lw.emit(scf.ForOp(lw.index_const(0), lw.index_const(n), lw.index_const(1), init, blk))
    loop.attributes[diff.MAX_ITERS] = IntegerAttr(n, 64)
    if op is not None:
        loop.attributes[COOPVEC_LOOP] = StringAttr(op)
    if reassociate:
        loop.attributes[kernel.REASSOCIATE] = UnitAttr()
    return list(loop.results)


def _matmul(lw, p: Plan, x: SSAValue) -> list[SSAValue]:
    """result = W x (+ bias): for each result element, the dot product of one row of W (as the
    product reads it) with the input, through private arrays."""
    rt: T.Vector = p.result  # type: ignore[assignment]
    xt = p.vector_types[0]
    buf, at = _where(lw, p.matrix)
    rs, cs = _strides(lw, p)
    # W[r][c] of the stored matrix is at at + r * rs + c * cs; transposed, result i reads W[k][i]
    out_step, in_step = (cs, rs) if p.transpose else (rs, cs)
    if p.input_as is not None and p.input_as != xt.elem:  # read as its interpretation says
        xt2 = T.Vector(p.input_as, xt.n)
        x, xt = lw.convert([x], xt, xt2)[0], xt2
    xs = _spill(lw, x, xt, rt.elem)
    out = lw.v(memref.AllocaOp.get(T.ir_scalar(rt.elem), shape=[rt.n]))
    bias = _where(lw, p.bias) if p.bias is not None else None

    def row(i: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
        start = lw.v(arith.AddiOp(at, lw.v(arith.MuliOp(i, out_step))))

        def term(k: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            where = lw.v(arith.AddiOp(start, lw.v(arith.MuliOp(k, in_step))))
            w = _scalar(lw, lw.load_mem(buf, where, p.matrix.elem)[0], p.matrix.elem, rt.elem)
            return [lw.v(arith.AddfOp(acc[0], lw.v(arith.MulfOp(w, lw.v(memref.LoadOp.get(xs, [k]))))))]

        (dot,) = _loop(lw, xt.n, lw.const(0.0, rt.elem), term, reassociate=True)
        if bias is not None:
            b = lw.load_mem(bias[0], lw.v(arith.AddiOp(bias[1], i)), p.bias.elem)[0]
            dot = lw.v(arith.AddfOp(dot, _scalar(lw, b, p.bias.elem, rt.elem)))
        lw.emit(memref.StoreOp.get(dot, out, [i]))
        return []

    _loop(lw, rt.n, [], row, "matmul")
    return lw.build_vector([lw.v(memref.LoadOp.get(out, [lw.index_const(i)])) for i in range(rt.n)], rt)


def _outer(lw, p: Plan, a: SSAValue, b: SSAValue) -> list[SSAValue]:
    """matrix[i][j] += a[i] * b[j], atomically, through private arrays of a and b."""
    at_, bt = p.vector_types
    buf, at = _where(lw, p.matrix)
    rs, cs = _strides(lw, p)
    elem = at_.elem if T.RANK[at_.elem.kind] >= T.RANK[bt.elem.kind] else bt.elem
    aa, ba = _spill(lw, a, at_, elem), _spill(lw, b, bt, elem)

    # one loop over the matrix's elements (not a loop nest: accumulate-gradients unrolls the
    # constant-trip loops around adds, and a flat one unrolls to independent adds)
    def element(f: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
        i = lw.v(arith.DivUIOp(f, lw.index_const(bt.n)))
        j = lw.v(arith.RemUIOp(f, lw.index_const(bt.n)))
        where = lw.v(arith.AddiOp(at, lw.v(arith.AddiOp(lw.v(arith.MuliOp(i, rs)), lw.v(arith.MuliOp(j, cs))))))
        ai, bj = lw.v(memref.LoadOp.get(aa, [i])), lw.v(memref.LoadOp.get(ba, [j]))
        _add_to(lw, p.matrix.elem, buf, where, lw.v(arith.MulfOp(ai, bj)), elem)
        return []

    _loop(lw, at_.n * bt.n, [], element, "outer_product_accumulate")
    return []


def _settle(c: Checking, plan: Plan) -> None:
    """The plan's operands as they stand after checking (a rewrite, `w` -> `this.w`, puts a new
    node where the old one was: c.current finds it)."""
    def now(x):
        return c.current(x) if isinstance(x, A.Node) else x

    plan.vectors = [now(v) for v in plan.vectors]
    plan.stride = now(plan.stride)
    for mem in (plan.matrix, plan.bias):
        if mem is not None:
            mem.arg, mem.offset = now(mem.arg), now(mem.offset)


def _check_call(c: Checking, e: A.Call, name: str) -> T.Type | None:
    if name in FUNCTIONS:
        t = check_function(c, e, name, e.callee)
        _settle(c, e.target)
        return t
    if name in REFUSED_FUNCTIONS:
        raise err(UNSUPPORTED, f"the CoopVec operation '{name}' is not supported", e.callee)
    return None


FEATURE = Feature(
    "CoopVec", prelude=PRELUDE,  # (its enums)
    resolve_type=lambda c, name, t: resolve(c, t) if name == "CoopVec" else None, check_call=_check_call,
    check_method=lambda c, e, callee, t: check_method(c, e, callee, t)
    if isinstance(t, T.Vector) and callee.name in METHODS | REFUSED_METHODS else None,
)
