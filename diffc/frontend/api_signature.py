"""The Slang-level signature of a function, kept on its IR op for calls over tensors.

The IR sees only leaves: `float3x3 m` is three `vector<3xf32>` parameters, a struct its fields'
leaves, an `out` parameter an extra result (and xDSL drops a `_<digits>` tail from the leaves'
name hints). `m.f(...)` (diffc/runtime/layouts.py) needs the shape behind them, so a function
whose leaves do not say it alone carries `diffc.api`: a JSON object

    {"params": [{"name": "m", "dir": "in" | "out" | "inout", "type": TYPE}, ...], "result": TYPE}

Only modules compiled inside `recording()` carry it (the runtime's loads, `load_module`), so the
IR that `diffc-opt` and `diffc compile` print stays as it was.

TYPE: {"k": "scalar", "t": "float"}, {"k": "vector", "t": "float", "n": 3},
{"k": "matrix", "t": "float", "rows": 3, "cols": 3}, {"k": "array", "elem": TYPE, "n": 4},
{"k": "struct", "name": "S", "fields": [["pos", TYPE], ...]}, {"k": "void"}, or
{"k": "other", "name": "DifferentialPair<float>"} for what calls over tensors cannot pass.
"""

from __future__ import annotations

import contextvars
import json
from contextlib import contextmanager

from diffc.frontend import types as T

API_ATTR = "diffc.api"
_RECORDING = contextvars.ContextVar("diffc_api_recording", default=False)


@contextmanager
def recording():
    """Within it, compiled functions carry `diffc.api` where their leaves do not say it all."""
    token = _RECORDING.set(True)
    try:
        yield
    finally:
        _RECORDING.reset(token)


def type_node(t: T.Type) -> dict:
    if isinstance(t, T.Scalar):
        return {"k": "scalar", "t": t.kind}
    if isinstance(t, T.Vector):
        return {"k": "vector", "t": t.elem.kind, "n": t.n}
    if isinstance(t, T.Matrix):
        return {"k": "matrix", "t": t.elem.kind, "rows": t.rows, "cols": t.cols}
    if isinstance(t, T.Array):
        return {"k": "array", "elem": type_node(t.elem), "n": t.n}
    if isinstance(t, T.Struct) and t.ptr_differential is None and not any(
        isinstance(ft, (T.Pointer, T.Buffer)) for _, ft, _ in t.fields
    ):
        return {"k": "struct", "name": t.sname, "fields": [[n, type_node(ft)] for n, ft, _ in t.fields]}
    if isinstance(t, T.Void):
        return {"k": "void"}
    return {"k": "other", "name": str(t)}


def _needs_description(params, ret: T.Type) -> bool:
    """Whether the IR leaves alone would misdescribe the signature: a parameter or result that is
    not one scalar or vector leaf, or an out/inout parameter."""
    def plain(t: T.Type) -> bool:
        return isinstance(t, (T.Scalar, T.Vector))

    return not (plain(ret) or isinstance(ret, T.Void)) or any(
        p.direction != "in" or not plain(p.ty) for p in params)


def describe(params, ret: T.Type) -> str | None:
    """The `diffc.api` JSON of a function with these checker parameters (PInfo) and result type,
    or None when its IR says it all or nobody is recording."""
    if not _RECORDING.get() or not _needs_description(params, ret):
        return None
    return json.dumps({
        "params": [{"name": p.name, "dir": p.direction, "type": type_node(p.ty)} for p in params],
        "result": type_node(ret),
    }, separators=(",", ":"))
