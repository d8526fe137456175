"""slang-torch's CUDA-flavoured intrinsics: `cudaThreadIdx()`, `cudaBlockIdx()`, `cudaBlockDim()`
(each a `uint3`) and `reinterpret<To, From>(x)`.

A slang-torch kernel runs as an OpenCL kernel whose work-groups are CUDA's blocks
(`launchRaw(blockSize=..., gridSize=...)`: diffc/slangtorch.py), so the three queries are the
work-item's local id, its group id and the group's size, read wherever they are called (a kernel's
helper functions too, as in CUDA). They carry no derivative (integers). `reinterpret<To,
From>(x)` is a bit cast between scalars of one size (`bit_cast<To>(x)`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects.builtin import i32

from diffc.dialects import kernel
from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.errors import ARG_COUNT, TYPE_MISMATCH
from diffc.frontend.checker.symbols import err
from diffc.frontend.feature import Feature

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

QUERIES = {"cudaThreadIdx": kernel.LocalIdOp, "cudaBlockIdx": kernel.GroupIdOp, "cudaBlockDim": kernel.LocalSizeOp}
NAMES = frozenset(QUERIES) | {"reinterpret"}
UINT3 = T.Vector(T.UINT, 3)


def check(c: Checking, e: A.Call, callee: A.Name) -> T.Type:
    """The type of a call of one of NAMES; marks the call for `lower`."""
    name = callee.id
    if name == "reinterpret":
        if len(callee.targs) not in (1, 2) or not all(isinstance(a, A.TypeRef) for a in callee.targs):
            raise err(ARG_COUNT, "reinterpret needs its result type: reinterpret<To, From>(value)", callee)
        if len(e.args) != 1:
            raise err(ARG_COUNT, f"reinterpret expects 1 argument, got {len(e.args)}", e)
        dst = c.resolve(callee.targs[0])
        src = c.expr(e.args[0])
        if len(callee.targs) == 2:
            c.expect_type(e.args[0], c.resolve(callee.targs[1]))
            src = c.resolve(callee.targs[1])
        if not (isinstance(src, T.Scalar) and isinstance(dst, T.Scalar)) or _bits(src) != _bits(dst):
            raise err(TYPE_MISMATCH, f"reinterpret from {src} to {dst}: both must be scalars of the same size", e)
        e.kind, e.target = "bitcast", dst  # lowered as bit_cast is
        return dst
    if e.args:
        raise err(ARG_COUNT, f"{name} expects 0 arguments, got {len(e.args)}", e)
    e.kind, e.target = "cuda_query", name
    return UINT3


def _bits(t: T.Scalar) -> int:
    return {"half": 16, "float": 32, "double": 64}.get(t.kind) or T.int_bits(t)


def lower(lw, e: A.Call) -> list:
    """A `cuda_query` call: the three components of the work-item query, as a uint3."""
    op = QUERIES[e.target]
    lanes = [lw.v(arith.IndexCastOp(lw.v(op(d)), i32)) for d in range(3)]
    return lw.build_vector(lanes, UINT3)


FEATURE = Feature(
    "cuda_builtins",
    check_call=lambda c, e, name: check(c, e, e.callee) if name in NAMES and isinstance(e.callee, A.Name) else None,
)
