"""Memory of bytes: `void*`, and pointers to (or structured buffers of) a struct of several scalar
types (`AdamState* states` of `struct AdamState { half mean; half variance; int iteration; }`).

Such a pointer is a `memref<?xi8>` and an `index` offset counted in bytes (`types.byte_addressed`;
a buffer is the memref alone). The pointee's scalars sit where `types.byte_layout` puts them
(Slang's natural layout, which is C's: each scalar at a multiple of its size, a struct's size
rounded up to its largest alignment), and each is read or written as a load or store of its own
type at its own place: `kernel.reinterpret` of the bytes as that type, indexed by the byte
offset over the type's size. `p[i]`, `p + i` move by the struct's size; `p->f` by f's offset.

A `void*` is an address only: a cast gives it a type (`(half*)p` reads the same bytes as halves
from p's offset on, which must be a multiple of 2; `(S*)p` and `(void*)q` of a byte pointer change
nothing), and the CoopVec matrix operations read it as their component type (coopvec.py).
Reading through it, indexing it or moving it is E0003; a pointer of one scalar type
(`half*`) becomes a `void*` only where it came from one (its memref is of halves, not bytes):
E0008 otherwise. The host binds any Tensor to such a parameter, as its bytes (runtime/dispatch.py);
`Module.byte_layout(name)` gives the numpy dtype of a struct that such a pointer of the module
points at (runtime/byte_structs.py reads the IR's `diffc.byte_layouts`, which lowering records
from byte_layout, so both sides use the one rule)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from xdsl.dialects import arith, memref, vector
from xdsl.dialects.builtin import DYNAMIC_INDEX, IntegerType, MemRefType
from xdsl.ir import SSAValue

from diffc.dialects import kernel
from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.checker.symbols import SWIZZLE
from diffc.frontend.errors import TYPE_MISMATCH, UNSUPPORTED

from diffc.frontend.feature import Feature

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

BYTES = IntegerType(8)
LAYOUTS = "diffc.byte_layouts"  # module attribute: {struct: numpy dtype description}, JSON


def is_bytes(buf: SSAValue) -> bool:
    t = buf.type
    return isinstance(t, MemRefType) and t.element_type == BYTES


def stride(t: T.Type) -> int:
    """Bytes from one element to the next behind a byte pointer or in a byte buffer."""
    return T.byte_layout(t)[0]


def field_offset(s: T.Struct, name: str) -> int:
    i, _, _ = s.field(name)  # type: ignore[misc]
    return T.field_byte_offset(s, i)


def part_offset(t: T.Type, e: A.Member | A.Index, k: int | None) -> int:
    """The byte offset of e's part (a field, a vector component, constant element k) inside t."""
    if isinstance(e, A.Member) and isinstance(t, T.Struct):
        return field_offset(t, e.name)
    if isinstance(e, A.Member):  # one component of a vector
        return SWIZZLE[e.name] * T.byte_layout(T.elem_of(t))[0]  # type: ignore[arg-type]
    assert k is not None
    return k * element_stride(t)


def element_stride(t: T.Type) -> int:
    """Bytes between elements of an array, rows of a matrix, components of a vector."""
    if isinstance(t, T.Matrix):
        return T.byte_layout(t.row)[0]
    if isinstance(t, T.Vector):
        return T.byte_layout(t.elem)[0]
    assert isinstance(t, T.Array)
    return T.byte_layout(t.elem)[0]


def typed_at(lw, buf: SSAValue, off: SSAValue, s: T.Scalar) -> tuple[SSAValue, SSAValue]:
    """The memref of s-typed elements over the bytes and the index of the one at byte `off`."""
    typed = MemRefType(T.ir_scalar(s), [DYNAMIC_INDEX], memory_space=buf.type.memory_space)  # type: ignore[attr-defined]
    view = lw.v(kernel.ReinterpretOp(buf, typed))
    n = T.scalar_bytes(s)
    if n == 1:
        return view, off
    shift = lw.index_const(n.bit_length() - 1)
    return view, lw.v(arith.ShRSIOp(off, shift))  # (a negative offset stays out of bounds)


def load(lw, buf: SSAValue, off: SSAValue, t: T.Type) -> list[SSAValue]:
    """The leaves of a value of type t whose bytes start at byte `off` of buf."""
    if isinstance(t, T.Scalar):
        view, at = typed_at(lw, buf, off, t)
        return [lw.v(memref.LoadOp.get(view, [at]))]
    if isinstance(t, T.Vector):
        n = T.scalar_bytes(t.elem)
        return lw.build_vector([load(lw, buf, lw.offset_by(off, k * n), t.elem)[0] for k in range(t.n)], t)
    out: list[SSAValue] = []
    for k, pt in parts(t):
        out += load(lw, buf, lw.offset_by(off, k), pt)
    return out


def store(lw, buf: SSAValue, off: SSAValue, t: T.Type, vals: list[SSAValue]) -> None:
    if isinstance(t, T.Scalar):
        view, at = typed_at(lw, buf, off, t)
        lw.emit(memref.StoreOp.get(vals[0], view, [at]))
        return
    if isinstance(t, T.Vector):
        n, el = T.scalar_bytes(t.elem), T.ir_scalar(t.elem)
        for k in range(t.n):
            comp = lw.v(vector.ExtractOp(vals[0], [k], el))
            store(lw, buf, lw.offset_by(off, k * n), t.elem, [comp])
        return
    for k, pt in parts(t):
        n = T.leaf_count(pt)
        store(lw, buf, lw.offset_by(off, k), pt, vals[:n])
        vals = vals[n:]


def parts(t: T.Type) -> list[tuple[int, T.Type]]:
    """(byte offset, type) of each element of an array, row of a matrix, field of a struct."""
    if isinstance(t, T.Matrix):
        t = t.as_rows()
    if isinstance(t, T.Array):
        size = stride(t.elem)
        return [(i * size, t.elem) for i in range(t.n)]
    assert isinstance(t, T.Struct)
    return [(T.field_byte_offset(t, i), ft) for i, (_, ft, _) in enumerate(t.fields)]


# ---- casts ----

def cast_kind(src: T.Type, dst: T.Type) -> str | None:
    """"same": `(void*)p`, `(S*)p` between byte pointers (the same bytes and offset);
    "typed": `(half*)p` of a byte pointer (the bytes read as halves); None: not a byte cast."""
    if not (isinstance(src, T.Pointer) and isinstance(dst, T.Pointer)) or src.by_value or dst.by_value:
        return None
    if not (T.byte_addressed(src) and (dst.elem == T.VOID or src.elem == T.VOID)):
        return None
    if T.byte_addressed(dst):
        return "same"
    if dst.atomic or T.pointee_scalar(dst.elem) is None:
        return None
    return "typed"


def _check_cast(c: Checking, e: A.Cast, src: T.Type, dst: T.Type) -> bool | None:
    from diffc.frontend.checker.symbols import err

    if cast_kind(src, dst) is not None:
        return True
    if isinstance(src, T.Pointer) and isinstance(dst, T.Pointer) and dst.elem == T.VOID and not src.by_value:
        raise err(UNSUPPORTED, f"casting {src} to void* is not supported: a void* here is a pointer of bytes, "
                  f"and {src} is a pointer of {T.pointee_scalar(src.elem) or src.elem}s (declare it void*, or "
                  "cast a void* to it instead)", e)
    return None


def lower_cast(lw, vals: list[SSAValue], src: T.Type, dst: T.Type) -> list[SSAValue]:
    if cast_kind(src, dst) == "same":
        return vals
    buf, off = vals
    s = T.pointee_scalar(dst.elem)  # type: ignore[union-attr]
    assert s is not None
    return list(typed_at(lw, buf, off, s))


# ---- what the host side reads ----

def numpy_description(s: T.Struct) -> dict:
    """numpy's dtype dict of struct s: fields at byte_layout's offsets (nested structs, arrays,
    vectors and matrices as sub-dtypes), and its size."""
    names, formats, offsets = [], [], []
    for i, (name, ft, _) in enumerate(s.fields):
        names.append(name)
        formats.append(_numpy_format(ft))
        offsets.append(T.field_byte_offset(s, i))
    return {"names": names, "formats": formats, "offsets": offsets, "itemsize": T.byte_layout(s)[0]}


_NUMPY = {"half": "<f2", "float": "<f4", "double": "<f8", "int8_t": "i1", "uint8_t": "u1", "int16_t": "<i2",
          "uint16_t": "<u2", "int": "<i4", "uint": "<u4", "int64_t": "<i8", "uint64_t": "<u8"}


def _numpy_format(t: T.Type):
    if isinstance(t, T.Scalar):
        return _NUMPY[t.kind]
    if isinstance(t, T.Vector):
        return [_NUMPY[t.elem.kind], [t.n]]
    if isinstance(t, T.Matrix):
        return [_NUMPY[t.elem.kind], [t.rows, t.cols]]
    if isinstance(t, T.Array):
        return [_numpy_format(t.elem), [t.n]]
    assert isinstance(t, T.Struct)
    return numpy_description(t)


def record_layouts(types: list[T.Type]) -> str | None:
    """The JSON of `diffc.byte_layouts`: each struct that a byte pointer or buffer among `types`
    (and the fields of their structs) points at, by name."""
    out: dict[str, dict] = {}
    seen: set[int] = set()

    def visit(t: T.Type) -> None:
        if id(t) in seen:
            return
        seen.add(id(t))
        elem = getattr(t, "elem", None)
        if T.byte_addressed(t) and isinstance(elem, T.Struct):
            out[str(elem)] = numpy_description(elem)
        if isinstance(t, T.Struct):
            for _, ft, _ in t.fields:
                visit(ft)
        elif isinstance(t, T.Array | T.Pointer):
            visit(t.elem)

    for t in types:
        visit(t)
    return json.dumps(out, sort_keys=True) if out else None


def _sizeof(c: Checking, e: A.Call, name: str) -> T.Type | None:
    """`sizeof(T)` (T a type, or a value's type): T's bytes by byte_layout, a uint constant."""
    from diffc.frontend.checker.symbols import err

    if name != "sizeof" or not isinstance(e.callee, A.Name) or len(e.args) != 1:
        return None
    (a,) = e.args
    if isinstance(a, A.TypeExpr):
        t = c.resolve(a.type)
    elif isinstance(a, A.Name) and c.lookup(a.id) is None:  # a type's name
        t = c.resolve(A.TypeRef(a.id, span=a.span))
    else:
        t = c.expr(a)
    try:
        size = T.byte_layout(t)[0]
    except TypeError:
        raise err(UNSUPPORTED, f"sizeof({t}) is not supported: it has no byte layout here", a) from None
    return c.expr(c.replace(e, A.Num(size, False, "u", span=e.span)))


FEATURE = Feature("byte pointers", check_cast=_check_cast, check_call=_sizeof)
