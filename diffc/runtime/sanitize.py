"""The sanitizer mode: `DIFFC_CHECK=1`, `diffc.load_module(path, check=True)` or `diffc run
--check`. Derivative code is built with nan-check (passes/nan_check.py), and a launch whose
derivative code made a NaN or an infinity out of finite operands raises NonFiniteError
(runtime/status.py) naming the kernel and the op's Slang source line.

The mode also reports a call over tensors that reads a gradient nobody initialized: `.bwds`
adds into each input's `.grad` and reads `_result.grad`, `.fwds` reads each input's `.grad` as
its tangent; a gradient made by `with_grads(zero=False)` or `Tensor.empty` and not written since
holds whatever the allocator left there (UninitializedReadError, E0013). Dispatches of entry
points are checked by the kernels themselves, element by element (passes/uninit_check.py,
runtime/uninit.py).

The kernel settings' `sanitize` (diffc/pipeline.py) builds with nan-check and uninit-check.
Derivative code is what the differentiation pipeline generated (every function that exists
after it and did not before: diffc.compiler.derivative_functions) and the custom derivatives
(the functions a primal names with diff.fwd_derivative / diff.bwd_derivative). Primal code, the kernels' own loads and stores, and
the calls over tensors' `m.f(...)` (no derivative) are left as they are.
"""

from __future__ import annotations

import os


def enabled_by_default() -> bool:
    return os.environ.get("DIFFC_CHECK", "0") not in ("", "0")


def check_initialized(fn_name: str, mode: str, grads: list[tuple[str, object]]) -> None:
    """Raises UninitializedReadError for the first (argument, gradient Tensor) in `grads` that
    was never written (`Tensor.uninitialized`); `mode` is "bwds" or "fwds"."""
    from diffc.runtime.errors import UninitializedReadError

    for name, g in grads:
        if g is not None and getattr(g, "uninitialized", False):
            what = "adds into" if mode == "bwds" and name != "_result" else "reads"
            raise UninitializedReadError(
                f"error[E0013]: {fn_name}.{mode} {what} the .grad of '{name}', which was never initialized "
                "(with_grads(zero=False) or Tensor.empty, and nothing wrote it since): fill it, or use "
                "with_grads() to start from zero",
                name,
            )
