"""How the Slang-level parameters and result of a function map onto its IR leaves and onto the
arrays of a call over tensors (record_calls.py).

A *dense* type (a scalar, vector, matrix, or an array of dense types) is one array argument
whose trailing dimensions are the type's shape: `float3` takes `(..., 3)`, `float2x3`
`(..., 2, 3)`, `float3[4]` `(..., 4, 3)`, as SlangPy maps them. Each element of the leading
(batch) dimensions is one record of `record` scalars, and each IR leaf is `width` consecutive
scalars of it at `offset`. A struct takes a dict of its fields (or a numpy structured array),
each field on its own. An array of structs `S[N]` is taken as a struct of arrays: a dict of S's
fields, each an array with the extra dimension N before the field's own shape (`{"at": (..., N,
2), "w": (..., N)}` for `Pt[N]`, Pt being {float2 at; float w}); the IR has the elements' leaves
one element after another, so a field's leaves are N runs apart (`ir`). The description comes from the function's `diffc.api` attribute
(frontend/api_signature.py) or, for IR without one, from the IR types: each parameter one leaf.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, IndexType, IntegerType, VectorType

DTYPES = {
    "float": np.dtype(np.float32),
    "half": np.dtype(np.float16),
    "double": np.dtype(np.float64),
    "int": np.dtype(np.int32),
    "uint": np.dtype(np.uint32),
    "index": np.dtype(np.int64),
    "int64": np.dtype(np.int64),
}


@dataclass(frozen=True)
class Node:
    """A Slang type as a call over tensors sees it."""

    kind: str  # "dense" | "struct" | "void" | "other"
    name: str  # as Slang spells it, for messages
    dtype: np.dtype | None = None  # dense: the scalar type of every leaf
    shape: tuple[int, ...] = ()  # dense: the trailing dimensions of its arrays
    leaves: tuple[tuple[int, int], ...] = ()  # dense: (offset, width) of each IR leaf in a record
    fields: tuple[tuple[str, Node], ...] = ()  # struct
    # dense: each leaf's IR parameter, counted from the node's first (default: 0, 1, 2, ...)
    ir: tuple[int, ...] = ()
    # struct: each field's first IR parameter, counted from the struct's (default: one field
    # after another)
    starts: tuple[int, ...] = ()

    @cached_property  # (read on every call: cached)
    def record(self) -> int:
        return math.prod(self.shape)

    @cached_property
    def leaf_count(self) -> int:
        if self.kind == "dense":
            return len(self.leaves)
        return sum(f.leaf_count for _, f in self.fields)

    @cached_property
    def ir_leaves(self) -> tuple[tuple[int, int, int], ...]:
        """dense: (IR parameter counted from the node's first, offset, width) of each leaf."""
        return tuple((d, off, w) for d, (off, w) in zip(self.ir or range(len(self.leaves)), self.leaves))

    @cached_property
    def field_starts(self) -> tuple[int, ...]:
        """struct: each field's first IR parameter, counted from the struct's."""
        if self.starts:
            return self.starts
        counts = [f.leaf_count for _, f in self.fields]
        return tuple(sum(counts[:k]) for k in range(len(counts)))


def _arrayed(node: Node, n: int, stride: int, name: str) -> Node:
    """`node` as the type of n elements, one after another in the IR, `stride` leaves apart:
    a dense node gets the leading dimension n, a struct's fields each get it."""
    if node.kind == "struct":
        fields = tuple((fname, _arrayed(f, n, stride, f"{f.name}[{n}]")) for fname, f in node.fields)
        return Node("struct", name, fields=fields, starts=node.field_starts)
    r = node.record
    leaves = tuple((i * r + off, w) for i in range(n) for off, w in node.leaves)
    ir = tuple(i * stride + d for i in range(n) for d, _, _ in node.ir_leaves)
    return Node("dense", name, node.dtype, (n, *node.shape), leaves, ir=ir)


@dataclass(frozen=True)
class Param:
    name: str
    direction: str  # in | out | inout
    node: Node
    arg: int  # its first IR parameter (in, inout), else -1
    res: int  # its first IR result (out, inout), else -1


@dataclass(frozen=True)
class Layout:
    params: tuple[Param, ...]
    result: Node
    res: int = 0  # the result's first IR result

    @cached_property
    def outputs(self) -> tuple[tuple[str, Node, int], ...]:
        """(name, type, first IR result) of what a call writes: "_result", then out/inout parameters."""
        outs = [("_result", self.result, self.res)] if self.result.kind != "void" else []
        return tuple(outs + [(p.name, p.node, p.res) for p in self.params if p.direction != "in"])

    @cached_property
    def inout(self) -> frozenset[str]:
        return frozenset(p.name for p in self.params if p.direction == "inout")


def _dense(kind: str, name: str, scalar: str, shape: tuple[int, ...], width: int) -> Node:
    dt = DTYPES.get(scalar)
    if dt is None:
        return Node("other", name)
    n = int(np.prod(shape, dtype=np.int64))
    return Node("dense", name, dt, shape, tuple((k, width) for k in range(0, n, width)))


def node_of(d: dict) -> Node:
    """A Node from a `diffc.api` TYPE (see frontend/api_signature.py)."""
    k = d["k"]
    if k == "scalar":
        return _dense(k, d["t"], d["t"], (), 1)
    if k == "vector":
        return _dense(k, f"{d['t']}{d['n']}", d["t"], (d["n"],), d["n"])
    if k == "matrix":  # rows are leaves: vectors, or scalars when there is one column
        return _dense(k, f"{d['t']}{d['rows']}x{d['cols']}", d["t"], (d["rows"], d["cols"]), d["cols"])
    if k == "array":
        elem = node_of(d["elem"])
        name = f"{elem.name}[{d['n']}]"
        if elem.kind not in ("dense", "struct") or any(f.kind == "other" for f in _dense_nodes(elem)):
            return Node("other", name)
        return _arrayed(elem, d["n"], elem.leaf_count, name)
    if k == "struct":
        fields = tuple((fname, node_of(ft)) for fname, ft in d["fields"])
        return Node("struct", d["name"], fields=fields)
    if k == "void":
        return Node("void", "void")
    return Node("other", d.get("name", "?"))


def _dense_nodes(node: Node) -> list[Node]:
    """The leaf types of a struct (itself for any other node)."""
    if node.kind == "struct":
        return [x for _, f in node.fields for x in _dense_nodes(f)]
    return [node]


def _ir_scalar(t) -> str | None:
    if isinstance(t, Float32Type):
        return "float"
    if isinstance(t, Float16Type):
        return "half"
    if isinstance(t, Float64Type):
        return "double"
    if isinstance(t, IndexType):
        return "index"
    if isinstance(t, IntegerType) and t.width.data in (32, 64):
        return "int" if t.width.data == 32 else "int64"
    return None


def ir_type_node(t) -> dict:
    """The TYPE of one IR leaf type (for IR without `diffc.api`)."""
    if isinstance(t, VectorType) and len(t.get_shape()) == 1:
        s = _ir_scalar(t.element_type)
        if s is not None:
            return {"k": "vector", "t": s, "n": t.get_shape()[0]}
    s = _ir_scalar(t)
    return {"k": "scalar", "t": s} if s is not None else {"k": "other", "name": str(t)}


def describe_ir(op, names: list[str]) -> str:
    """The `diffc.api` JSON a function without one has: each IR parameter is one `in`
    parameter; one IR result is the result (several: a type calls cannot return)."""
    outs = op.function_type.outputs.data
    if len(outs) == 1:
        result = ir_type_node(outs[0])
    else:
        result = {"k": "void"} if not outs else {"k": "other", "name": f"({', '.join(str(t) for t in outs)})"}
    params = [{"name": n, "dir": "in", "type": ir_type_node(t)} for n, t in zip(names, op.function_type.inputs.data)]
    return json.dumps({"params": params, "result": result}, separators=(",", ":"))


def layout_of(api: str) -> Layout:
    d = json.loads(api)
    result = node_of(d["result"])
    arg = 0
    res = result.leaf_count if result.kind != "other" else 1
    params = []
    for p in d["params"]:
        node = node_of(p["type"])
        n = node.leaf_count if node.kind != "other" else 1
        a = arg if p["dir"] != "out" else -1
        r = res if p["dir"] != "in" else -1
        arg += n if p["dir"] != "out" else 0
        res += n if p["dir"] != "in" else 0
        params.append(Param(p["name"], p["dir"], node, a, r))
    return Layout(tuple(params), result)


def is_plain(layout: Layout) -> bool:
    """Whether the original scalar path (module.py, kernels.py) runs this function: every
    parameter an `in` scalar of float32, float64 or an integer, one such scalar result."""
    scalar = {np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32), np.dtype(np.int64)}

    def ok(n: Node) -> bool:
        return n.kind == "dense" and n.shape == () and n.dtype in scalar

    return ok(layout.result) and all(p.direction == "in" and ok(p.node) for p in layout.params)
