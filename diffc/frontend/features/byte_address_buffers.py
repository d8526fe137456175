"""`ByteAddressBuffer` and `RWByteAddressBuffer`: buffers of bytes without an element type.

Such a buffer is a `types.ByteBuffer`, a `memref<?xi8>` (the memory of bytes of byte_pointers.py),
addressed by byte offsets. Each access says what its bytes are:
  b.Load(at), b.Load2/3/4(at)             uint, uint2..4
  b.Load<T>(at)                           a T (a scalar, vector, array or struct: byte_layout's bytes)
  b.Store(at, v), b.Store2/3/4(at, v)     v's bytes (Store of a uint literal stores a uint; of any
  b.Store<T>(at, v)                       other value, that value's type, as Slang infers it)
The offset is expected to be a multiple of the scalar's size (each scalar is a load of its own
type at offset / size: kernel.reinterpret). A ByteAddressBuffer is read-only (Store: E0003).
The CoopVec operations take either kind as their matrix, bias or vector memory, read as their
component type says (coopvec.py). `diffc run` fills such a buffer as Slang's test runner does
(cli_run.py). Not supported (E0008): indexing, GetDimensions and the Interlocked* methods."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType
from xdsl.ir import SSAValue

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.checker.symbols import err
from diffc.frontend.errors import ARG_COUNT, TYPE_MISMATCH, UNSUPPORTED
from diffc.frontend.feature import Feature
from diffc.frontend.features import byte_pointers

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

BYTE_ADDRESS = "diffc.byte_address"  # on the global of such a buffer (cli_run.py fills it)
NAMES = {"ByteAddressBuffer": False, "RWByteAddressBuffer": True}  # name -> writable
_WORDS = {"Load": 1, "Load2": 2, "Load3": 3, "Load4": 4, "Store": 1, "Store2": 2, "Store3": 3, "Store4": 4}
REFUSED = {"GetDimensions", "InterlockedAdd", "InterlockedAnd", "InterlockedOr", "InterlockedXor",
           "InterlockedMin", "InterlockedMax", "InterlockedExchange", "InterlockedCompareExchange",
           "InterlockedCompareStore", "InterlockedAddF32", "InterlockedAddF16", "LoadAligned", "StoreAligned"}


def _resolve(c: Checking, name: str, t: A.TypeRef) -> T.Type | None:
    if name not in NAMES:
        return None
    if t.args:
        raise err(ARG_COUNT, f"{name} takes no generic arguments", t)
    return T.ByteBuffer(rw=NAMES[name])


def _words(n: int) -> T.Type:
    return T.UINT if n == 1 else T.Vector(T.UINT, n)


def _value_type(c: Checking, e: A.Call, callee: A.Member) -> T.Type | None:
    """The type an explicit `<T>` names, or None."""
    if not callee.targs:
        return None
    if len(callee.targs) != 1:
        raise err(ARG_COUNT, f"{callee.name}<T> takes one type", callee.name_span)
    t = c.generic_arg(callee.name, callee.targs[0], callee)
    if not isinstance(t, T.Type):
        raise err(TYPE_MISMATCH, f"{callee.name}<T> needs a type, got {t}", callee.name_span)
    try:
        T.byte_layout(t)
    except TypeError:
        raise err(UNSUPPORTED, f"{callee.name}<{t}> is not supported: {t} has no bytes of its own here", callee.name_span) from None
    return t


def _check_method(c: Checking, e: A.Call, callee: A.Member, bt: T.Type) -> T.Type | None:
    if not isinstance(bt, T.ByteBuffer):
        return None
    name = callee.name
    if name in REFUSED:
        raise err(UNSUPPORTED, f"{bt}.{name} is not supported", callee.name_span)
    if name not in _WORDS:
        raise err(TYPE_MISMATCH, f"{bt} has no method '{name}' (it has Load, Load2/3/4, Load<T>"
                  + (", Store, Store2/3/4, Store<T>)" if bt.rw else ")"), callee.name_span)
    explicit = _value_type(c, e, callee)
    if explicit is not None and name not in ("Load", "Store"):
        raise err(ARG_COUNT, f"{name} takes no generic arguments (Load<T> and Store<T> do)", callee.name_span)
    if name.startswith("Load"):
        if len(e.args) != 1:
            raise err(ARG_COUNT, f"{name} takes a byte offset, got {len(e.args)} arguments", e)
        c.expect_type(e.args[0], T.UINT)
        t = explicit or _words(_WORDS[name])
        e.kind, e.target = "byte_buffer", ("load", t)
        return t
    if not bt.rw:
        raise err(TYPE_MISMATCH, f"a ByteAddressBuffer is read-only: {name} needs a RWByteAddressBuffer", callee.name_span)
    if len(e.args) != 2:
        raise err(ARG_COUNT, f"{name} takes a byte offset and a value, got {len(e.args)} arguments", e)
    c.expect_type(e.args[0], T.UINT)
    if explicit is None and name == "Store":  # (Slang infers Store<T> from the value; a bare literal: uint)
        vt = c.expr(e.args[1])
        explicit = T.UINT if isinstance(e.args[1], A.Num) and not e.args[1].is_float or vt == T.INT else vt
        if isinstance(explicit, T.Scalar) and explicit.kind == "bool":
            raise err(TYPE_MISMATCH, "Store of a bool is not supported (it has no bytes of its own here)", e.args[1])
        try:
            T.byte_layout(explicit)
        except TypeError:
            raise err(UNSUPPORTED, f"Store of a {explicit} is not supported: it has no bytes of its own here", e.args[1]) from None
    t = explicit or _words(_WORDS[name])
    c.expect_type(e.args[1], t)
    e.kind, e.target = "byte_buffer", ("store", t)
    return T.VOID


def _check_index(c: Checking, e: A.Index, t: T.Type) -> T.Type | None:
    if isinstance(t, T.ByteBuffer):
        raise err(UNSUPPORTED, f"indexing a {t} is not supported (read it with Load<T>(byteOffset))", e)
    return None


def byte_offset(lw, e: A.Expr) -> SSAValue:
    (at,) = lw.lower_as(e, T.UINT)
    return lw.v(arith.IndexCastOp(at, IndexType()))


def lower_call(lw, e: A.Call) -> list[SSAValue]:
    op, t = e.target
    (buf,) = lw.expr(e.callee.base)
    at = byte_offset(lw, e.args[0])
    if op == "load":
        return byte_pointers.load(lw, buf, at, t)
    byte_pointers.store(lw, buf, at, t, lw.lower_as(e.args[1], t))
    return []


FEATURE = Feature("byte address buffers", resolve_type=_resolve, check_method=_check_method, check_index=_check_index)
