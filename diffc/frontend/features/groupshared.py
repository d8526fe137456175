"""`groupshared` globals: memory that the work-items of one work-group share.

A `groupshared T name;` (T a scalar, vector, matrix, array or struct whose scalars are all of
one type: `groupshared float tile[16][16];`) is a place in memory, not a value: reads and writes
of it, of its elements and fields are loads and stores of the scalars it is laid out as, like
a buffer element's (lower_expr.in_memory / address). Its storage is one `memref.global` in the
work-group memory space (`memref<N x E, 3>`, N its scalars); lower-entry-points allocates it
at the top of every kernel that uses it (`kernel.local_alloc`, OpenCL's `__local` array) and
passes it to the functions that use it, as it passes buffers. What one work-item stores, the
others see after a group barrier (GroupMemoryBarrierWithGroupSync), as in Slang.

It is not differentiable: storing a derivative-carrying value into it is E0006, as a buffer
write is (the activity analysis decides that on the IR), and values read from it are constants
to fwd_diff and bwd_diff.

`__getAddress(tile[i])` is a pointer into it, `Ptr<T, Access::ReadWrite, AddressSpace::GroupShared>`
(T's scalars of one type): the work-group memref seen as one of dynamic size (`memref.cast`) and
an index, passed to functions as device pointers are; its accesses are checked against the
group-shared variable's size (bounds-check passes it as the length), and `p != nullptr` holds for it.
"""

from __future__ import annotations

from xdsl.dialects import memref
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType

from diffc.dialects import kernel
from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.errors import ARG_COUNT, UNSUPPORTED
from diffc.frontend.checker.symbols import err
from diffc.frontend.feature import Feature
from diffc.frontend.checker.symbols import Local


def check_groupshared(d: A.Global, ty: T.Type) -> None:
    """A located error where `groupshared` global d (of type ty) cannot be work-group memory."""
    if d.init is not None:
        raise err(UNSUPPORTED, f"groupshared variable '{d.name}' has an initializer: work-group memory starts "
                  "undefined, so write it from the kernel (an initializer is not supported)", d.init)
    scalars = T.scalar_leaves(ty)
    if not scalars:
        raise err(UNSUPPORTED, f"groupshared variable '{d.name}' of type {ty} is not supported (work-group "
                  "memory holds scalars, vectors, matrices, and arrays and structs of them)", d)
    if any(s != scalars[0] for s in scalars):
        raise err(UNSUPPORTED, f"groupshared variable '{d.name}' of type {ty} mixes scalar types "
                  f"({', '.join(sorted({str(s) for s in scalars}))}); it must hold one", d)
    if scalars[0] == T.BOOL:
        raise err(UNSUPPORTED, f"groupshared variable '{d.name}' holds bools, which work-group memory does not "
                  "(use int or uint)", d)


def storage_type(ty: T.Type) -> MemRefType:
    """The work-group memref that holds a groupshared value of type ty."""
    scalars = T.scalar_leaves(ty)
    assert scalars
    return kernel.local_memref(T.ir_scalar(scalars[0]), [len(scalars)])


def in_groupshared(e: A.Expr) -> bool:
    """Whether lvalue e is (an element or field of) a groupshared global."""
    while isinstance(e, A.Member | A.Index):
        e = e.base
    return isinstance(e, A.Name) and getattr(e.sym, "shared", False)


def declare_global(c, d: A.Global, ty: T.Type) -> bool | None:
    if "groupshared" not in d.mods:
        return None
    check_groupshared(d, ty)
    c.scopes[0][d.name] = Local(d.name, ty, True, True, shared=True)
    return True


def check_address(c, e: A.Call, name: str) -> T.Type | None:
    """`__getAddress(x)` of an element, field or whole of a groupshared variable."""
    if name != "__getAddress" or not isinstance(e.callee, A.Name):
        return None
    if len(e.args) != 1:
        raise err(ARG_COUNT, f"__getAddress expects 1 argument, got {len(e.args)}", e)
    t = c.lvalue(e.args[0])
    place = c.current(e.args[0])
    if not in_groupshared(place):
        raise err(UNSUPPORTED, "taking the address of anything but group-shared memory is not supported (device "
                  "memory is reached through pointers the host passes)", e.args[0])
    if T.pointee_scalar(t) is None:
        raise err(UNSUPPORTED, f"a group-shared pointer to {t} is not supported", e.args[0])
    e.kind = "address"
    return T.Pointer(t, space="groupshared")


def lower_address(lw, e: A.Call) -> list:
    buf, off = lw.address(e.args[0])
    t = buf.type
    dynamic = kernel.local_memref(t.element_type, [DYNAMIC_INDEX])
    return [lw.v(memref.CastOp.get(buf, dynamic)), off]


FEATURE = Feature("groupshared", declare_global=declare_global, shared_memory=in_groupshared,
                  check_call=check_address)
