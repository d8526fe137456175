"""The numpy dtype of a Slang struct that a `void*`-style pointer of bytes points at
(frontend/features/byte_pointers.py): a pointer to, or a structured buffer of, a struct of several
scalar types is bound to a Tensor of its bytes, laid out as the front end's `byte_layout` says
(Slang's natural layout: C's, numpy's `align=True`). The front end records each such struct's
fields, offsets and size in the module attribute `diffc.byte_layouts`; this reads it, so the host
writes the bytes where the kernel reads them:

    states = np.zeros(n, m.byte_layout("AdamState"))
    states["iteration"] = 1
    t = diffc.Tensor.from_numpy(states.view(np.uint8))      # bound to `uniform AdamState* states`
"""

from __future__ import annotations

import json
import re

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr

from diffc.runtime.errors import CallError

LAYOUTS = "diffc.byte_layouts"


def _format(f):
    if isinstance(f, str):
        return f
    if isinstance(f, dict):
        return _dtype(f)
    inner, shape = f
    return (_format(inner), tuple(shape))


def _dtype(d: dict) -> np.dtype:
    return np.dtype({"names": d["names"], "formats": [_format(f) for f in d["formats"]],
                     "offsets": d["offsets"], "itemsize": d["itemsize"]})


def struct_dtype(ir: ModuleOp, name: str) -> np.dtype:
    attr = ir.attributes.get(LAYOUTS)
    layouts = json.loads(attr.data) if isinstance(attr, StringAttr) else {}
    if name not in layouts:  # `AdamState<float>`: the generic instance's name (frontend/generics.py)
        name = re.sub(r"\W+", "_", name).strip("_")
    if name not in layouts:
        have = ", ".join(sorted(layouts)) or "none"
        raise CallError(f"error: byte_layout: no pointer or buffer of this module points at a struct '{name}' "
                        f"laid out in bytes (those that do: {have})")
    return _dtype(layouts[name])
