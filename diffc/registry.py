"""Where diffc's dialects, passes and targets are listed, as lazy `name -> factory` dicts.

Plugins extend these in two ways: a Python file given to `diffc-opt --load-pass-plugin`, or an
installed package that declares an entry point in the group `diffc.plugins`. Such an entry point
names a callable taking a `PluginRegistry`; it adds dialects, passes and derivative rules.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe

from diffc.pipeline import CALL_KERNEL_PIPELINE, KERNEL_PIPELINE
from diffc.rules.arith_ext import extend_arith_dialect


def _lazy(module: str, name: str) -> Callable[[], Any]:
    def load() -> Any:
        return getattr(importlib.import_module(module), name)

    return load


DIALECTS: dict[str, Callable[[], Dialect]] = {
    "diff": _lazy("diffc.dialects.diff", "Diff"),
    "kernel": _lazy("diffc.dialects.kernel", "Kernel"),
}

# One line per differentiation pass; each module holds one pass.
PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "diff-fwd": _lazy("diffc.passes.diff_fwd", "DiffFwdPass"),
    "diff-lower": _lazy("diffc.passes.diff_lower", "DiffLowerPass"),
    "diff-rev": _lazy("diffc.passes.diff_rev", "DiffRevPass"),
    "diff-checkpoint": _lazy("diffc.passes.diff_checkpoint", "DiffCheckpointPass"),
    "forward-handle-results": _lazy("diffc.passes.forward_handle_results", "ForwardHandleResultsPass"),
    "split-wide-vectors": _lazy("diffc.passes.split_wide_vectors", "SplitWideVectorsPass"),
    "cached-canonicalize": _lazy("diffc.passes.cached_canonicalize", "CachedCanonicalizePass"),
    "linear-cse": _lazy("diffc.passes.linear_cse", "LinearCsePass"),
}
# The kernel passes: each is listed once, where it runs (diffc/pipeline.py's kernel pipelines).
for _step in (*KERNEL_PIPELINE, *CALL_KERNEL_PIPELINE):
    PASSES.setdefault(_step.name, _lazy(f"diffc.passes.{_step.where.rsplit('.', 1)[0]}", _step.where.rsplit(".", 1)[1]))

# Targets for `diffc-opt -t NAME`.
TARGETS: dict[str, Callable[[], Any]] = {
    "opencl": _lazy("diffc.backend.opencl.target", "OpenCLTarget"),
    "cuda": _lazy("diffc.backend.opencl.target", "CudaTarget"),
}

# Front ends for `diffc-opt FILE.ext`: extension -> factory of `parse(text, filename) -> ModuleOp`.
FRONTENDS: dict[str, Callable[[], Any]] = {
    "slang": _lazy("diffc.frontend", "parse_slang"),
}

# Ops of MLIR's arith that xDSL lacks (arith.remf): xdsl-opt imports this module through the
# universe entry point before it parses anything, so adding them here reaches it too.
extend_arith_dialect()

# The universe stock `xdsl-opt` discovers through the `xdsl.universe` entry point.
DIFFC_UNIVERSE = Universe(all_dialects=DIALECTS, all_passes=PASSES, all_targets=TARGETS)


class PluginRegistry:
    """What a plugin sees: it adds dialects, passes and derivative rules through this."""

    def add_dialect(self, name: str, factory: Callable[[], Dialect]) -> None:
        DIALECTS[name] = factory

    def add_pass(self, pass_type: type[ModulePass]) -> None:
        PASSES[pass_type.name] = lambda: pass_type

    def add_rule(self, op_type: type, partials: Callable[..., Any] | None = None, *,
                 jvp: Callable[..., Any] | None = None, vjp: Callable[..., Any] | None = None) -> None:
        """A partial-derivative rule (and/or jvp / vjp hooks), as the built-in arith rules."""
        from diffc.ad.partials import register_rule

        register_rule(op_type, partials, jvp=jvp, vjp=vjp)

    def add_derivative_rule(self, op_type: type, rule: Any) -> None:
        """A full diffc.ad.interface.DerivativeRule (activity, jvp_op, primal_op, vjp_op), as
        the built-in control-flow rules: an op with regions, say."""
        from diffc.ad.interface import register

        register(op_type, rule)


_plugins_loaded = False


def load_installed_plugins() -> None:
    """Runs every `diffc.plugins` entry point once."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    registry = PluginRegistry()
    for ep in entry_points(group="diffc.plugins"):
        try:
            ep.load()(registry)
        except Exception as e:  # a broken plugin: name it, no traceback
            from diffc.diagnostics import DiffcError

            raise DiffcError(
                f"error: plugin '{ep.name}' ({ep.value}, entry point group diffc.plugins) "
                f"failed to load: {type(e).__name__}: {e}"
            ) from None


def pass_description(pass_type: type) -> str:
    """One line saying what a pass does (`diffc-opt --help`): its `description` attribute, else
    the first sentence of its class docstring, else of its module's docstring (whose first
    words, by this repository's habit, are the pass's name and a colon)."""
    import re
    import sys

    text = getattr(pass_type, "description", None)
    if not isinstance(text, str) or not text.strip():
        text = pass_type.__dict__.get("__doc__") or ""
        if text.startswith(f"{pass_type.__name__}("):  # (what @dataclass writes where there is none)
            text = ""
    if not text.strip():
        text = getattr(sys.modules.get(pass_type.__module__), "__doc__", None) or ""
    first = " ".join(text.strip().split("\n\n")[0].split())
    first = re.sub(rf"^{re.escape(getattr(pass_type, 'name', ''))}:\s*", "", first)
    m = re.search(r"(?<=[^.]\.)\s+(?=[A-Z`(])", first)  # the first sentence ("e.g. x", "..." go on)
    first = first[: m.start()] if m else first
    return first[0].upper() + first[1:] if first else "(no description)"
