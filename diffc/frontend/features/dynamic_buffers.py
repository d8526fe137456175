"""Buffers of and pointers to interface values (`StructuredBuffer<IShape> shapes;`, `uniform
IShape* p;`), read-only, in the layout
Slang's host code writes them: per element two 32-bit words of type id (unused here), two of
conformance id (the union's tag: dynamic.py; only the low word is read) and the value, its
fields' 32-bit scalars from the first word on, in `[anyValueSize(N)]` bytes of the interface
(without the attribute: as many words as the largest implementation has scalars). Reading
element i gives the union with that tag, each implementation's fields read from the same words
(the bits of an 'any value', as createDynamicObject reinterprets them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IntegerType

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.errors import UNSUPPORTED

from diffc.frontend.feature import Feature
if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

HEADER_WORDS = 4  # uint2 type id, uint2 conformance id
TAG_WORD = 2
WORD = IntegerType(32)


def is_union(t: T.Type) -> bool:
    return isinstance(t, T.Struct) and t.dynamic_of is not None


def is_interface_buffer(t: T.Type) -> bool:
    return isinstance(t, T.Buffer) and is_union(t.elem)


def is_interface_pointer(t: T.Type) -> bool:
    """`IFoo* p`: the same words, one element at p (p[i]: the i-th)."""
    return isinstance(t, T.Pointer) and is_union(t.elem)


def any_value_words(c: Checking, idecl: A.Interface, where) -> int | None:
    """`[anyValueSize(N)]` on the interface, in 32-bit words (None without it)."""
    from diffc.frontend.checker.symbols import err

    for a in getattr(idecl, "attrs", []):
        if a.name == "anyValueSize":
            n = a.args[0] if len(a.args) == 1 else None
            if not (isinstance(n, A.Num) and not n.is_float and int(n.value) % 4 == 0 and int(n.value) >= 0):
                raise err(UNSUPPORTED, "[anyValueSize(N)] needs N a multiple of 4 bytes", a)
            return int(n.value) // 4
    return None


def check_element(c: Checking, dyn: T.Struct, atomic: bool, where) -> None:
    """Interface values in memory (a buffer's, a pointer's): every implementation's fields are
    32-bit scalars that fit the value words; they are not atomic."""
    from diffc.frontend.checker.symbols import err

    name = dyn.dynamic_of
    if atomic:
        raise err(UNSUPPORTED, f"atomic interface values ('{name}') in memory are not supported", where)
    payload = dyn.any_value_words
    for _, ft, _ in dyn.fields[1:]:
        scalars = T.scalar_leaves(ft) or []
        wide = [s for s in scalars if s.kind == "bool" or T.is_float_scalar(s) and s.kind != "float"
                or not T.is_float_scalar(s) and T.int_bits(s) != 32]
        if wide or not T.scalar_leaves(ft) and T.leaf_count(ft):
            raise err(UNSUPPORTED, f"interface '{name}' values in memory holding {ft}, whose fields are not all "
                      "32-bit numbers, are not supported", where)
        if payload is not None and len(scalars) > payload:
            raise err(UNSUPPORTED, f"{ft} has {4 * len(scalars)} bytes of fields, more than the "
                      f"[anyValueSize({4 * payload})] of interface '{name}'", where)


def stride(dyn: T.Struct) -> int:
    """Words per element."""
    payload = dyn.any_value_words
    if payload is None:
        payload = max((len(T.scalar_leaves(ft) or []) for _, ft, _ in dyn.fields[1:]), default=0)
    return HEADER_WORDS + payload


def load(lw, buf, index, dyn: T.Struct) -> list:
    """The union value of element `index` (an index-typed SSA value) of a buffer of words."""
    return load_at(lw, buf, lw.v(arith.MuliOp(index, lw.index_const(stride(dyn)))), dyn)


def load_at(lw, buf, at, dyn: T.Struct) -> list:
    """The union value whose element starts at word `at` (an index-typed SSA value)."""
    out = [lw.v(memref.LoadOp.get(buf, [lw.offset_by(at, TAG_WORD)]))]
    value = lw.offset_by(at, HEADER_WORDS)
    for _, ft, _ in dyn.fields[1:]:
        out += _read(lw, buf, value, ft)
    return out


def _read(lw, buf, off, t: T.Type) -> list:
    if isinstance(t, T.Scalar):
        w = lw.v(memref.LoadOp.get(buf, [off]))
        return [lw.v(arith.BitcastOp(w, T.ir_scalar(t))) if T.is_float_scalar(t) else w]
    if isinstance(t, T.Vector):
        return lw.build_vector([_read(lw, buf, lw.offset_by(off, k), t.elem)[0] for k in range(t.n)], t)
    out: list = []
    for k, ft in lw.mem_parts(t):
        out += _read(lw, buf, lw.offset_by(off, k), ft)
    return out


def _check_write(c: Checking, e: A.Expr, base: A.Expr, t: T.Type) -> None:
    if (isinstance(base, A.Index) and is_interface_buffer(t)) or is_interface_pointer(t):
        from diffc.frontend.checker.symbols import err

        raise err(UNSUPPORTED, f"writing an interface '{t.elem.dynamic_of}' value into memory is "  # type: ignore[union-attr]
                  "not supported (interface values in memory are read-only: dynamic_buffers.py)", e)


FEATURE = Feature("interface values in memory", check_write=_check_write, check_element=check_element)
