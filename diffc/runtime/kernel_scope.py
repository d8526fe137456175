"""What a call-over-tensors kernel module keeps: the kernel and the functions it reaches.

A module may declare global buffers (`RWStructuredBuffer<float> G;`, a `memref.global`) that
only its compute entry points bind (dispatch.py). The kernels of `m.f(...)` have no way to bind
one, and the OpenCL emitter has no module-level globals, so the kernel module drops every
function the kernel does not call and every global nothing left uses. A global the called
function does use is a CallError naming it (the status globals of the checks aside: the
runtime binds those itself).
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr

from diffc.dialects.kernel import ENTRY
from diffc.kernel_support.status_report import STATUS_PREFIX
from diffc.runtime.errors import CallError


def _symbols_used(op) -> set[str]:
    """The root names of every symbol reference in `op`'s attributes and properties, nested ops too."""
    used: set[str] = set()
    for inner in op.walk():
        for attr in [*inner.attributes.values(), *inner.properties.values()]:
            if isinstance(attr, SymbolRefAttr):
                used.add(attr.root_reference.data)
    return used


def keep_kernel_scope(module: ModuleOp, function: str) -> None:
    """Drops from `module` what its kernels (functions marked ENTRY) do not reach; a global they
    reach is a CallError (calls over tensors bind no globals)."""
    by_name = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    roots = [name for name, op in by_name.items() if ENTRY in op.attributes]
    if not roots:
        return
    reached: set[str] = set()
    uses: dict[str, set[str]] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        uses[name] = _symbols_used(by_name[name])
        todo.extend(s for s in uses[name] if s in by_name)
    for op in list(module.ops):
        if isinstance(op, func.FuncOp) and op.sym_name.data not in reached:
            op.detach()
            op.erase()
    used = set().union(*uses.values())
    for op in list(module.ops):
        if op.name != "memref.global":
            continue
        name = op.sym_name.data
        if name.startswith(STATUS_PREFIX):
            continue  # the checks' own status buffers: the runtime binds them (status.status_for)
        if name in used:
            raise CallError(
                f"error: {function}(): it reads or writes the global '{name}', which calls over tensors cannot "
                "bind: pass the buffer as a parameter, or call a compute entry point with .dispatch(...)",
                function,
            )
        op.detach()
        op.erase()
