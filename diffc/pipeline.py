"""The pipelines, defined here only, in a module that imports nothing beyond the standard library,
so the module cache can key on them without loading xDSL; diffc.compiler runs them.

* The differentiation pipeline: the passes that turn `diff.fwd_diff` / `diff.bwd_diff` into plain
  func/arith/math/scf/memref.
* The kernel pipelines: what turns a differentiated module into kernels, for one
  `KernelSettings` (which also keys every cache of built kernels). A kernel pass is one module
  in passes/ and one `KernelStep` line below: its name, where its class is, the setting that
  turns it on, and its options from the settings.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

# forward-handle-results (a mutating method of a struct holding a buffer returns the buffer it was
# given: no result) first, so no loop carries a buffer handle that reverse mode would tape, and
# again on the generated derivatives; cached-canonicalize is xDSL's canonicalize, the same rewrites
# with each op type's traits looked up once and later walks over the ops a rewrite touched only;
# linear-cse is xDSL's cse, the same IR in time linear in the module
AD_PIPELINE: tuple[str, ...] = ("forward-handle-results", "diff-fwd", "diff-rev", "diff-checkpoint", "diff-lower",
                                "forward-handle-results", "cached-canonicalize", "linear-cse")
AD_PIPELINE_SPEC = ",".join(AD_PIPELINE)


@dataclass(frozen=True)
class KernelSettings:
    """Everything the kernels built from a module depend on besides the module: the kernel
    pipeline reads its passes' switches and options here, the OpenCL emitter its options. Equal
    settings build equal kernels, so the settings are the key of the module cache's kernels.

    The defaults are a device without float atomics and a GPU's group sizes (`diffc compile`
    without --device); `diffc.kernel_settings.for_device` gives a device's (what dispatch, `diffc
    run` and `diffc compile --device` use), each with the DIFFC_* variables below applied. How a
    launch sums (`dispatch(deterministic=...)`) is an argument of the same kernels, not a setting.
    """

    # the device: how the OpenCL C is printed (backend/opencl/options.py's EmitOptions)
    atomics: str = "cmpxchg"  # float atomic adds: cmpxchg, ext or ptx
    index_type: str = "long"
    unroll: int = 0  # `#pragma unroll` for constant loops up to this many iterations (CPUs)
    reassociate: bool = False  # matrix operations' dot products summed in any order (CPUs: vectorized)
    # checks
    sanitize: bool = False  # nan-check on derivative code, uninit-check on entry points (DIFFC_CHECK)
    bounds_check: bool = True  # DIFFC_BOUNDS_CHECK
    bounds_proofs: bool = True  # unchecked __inbounds variants where a launch proves them (DIFFC_BOUNDS_PROOFS)
    # gradient accumulation (passes/accumulate_gradients.py): on, and the sizes it fits the device
    accumulate: bool = True  # DIFFC_ACCUMULATE
    accumulate_work_group: int = 64  # work-items per group of @K__accum (DIFFC_ACCUM_WORK_GROUP)
    accumulate_finish_group: int = 256  # of @K__accum_finish's groups (DIFFC_ACCUM_FINISH_GROUP)
    # local memory for its reduction (DIFFC_ACCUM_LOCAL_BYTES): OpenCL's least 32 KiB, less 4 KiB
    accumulate_local_bytes: int = 28672
    accumulate_local_sums: bool = False  # DIFFC_ACCUM_LOCAL_SUMS
    merge_calls: bool = True  # DIFFC_MERGE_CALLS
    cooperative: bool = True  # cooperative-layers: outer products summed over the group (DIFFC_COOPERATIVE)
    cooperative_local_bytes: int = 16384  # its local memory for the group's rows (DIFFC_COOP_LOCAL_BYTES)
    # coopVecMatMul as tiles of the group's product too (DIFFC_COOP_MATVEC); off: slower than each
    # work-item's own product on an H100 (float tiles without tensor cores)
    cooperative_matvec: bool = False
    # coopVecMatMul as the group's product on the tensor cores (mma.sync, DIFFC_COOP_MMA; on NVIDIA
    # only where the OpenCL builds the inline PTX, kernel_settings.mma_builds; elsewhere plain sums).
    # Off: on an H200 the CoopVec step took 6.98 ms at 2^18 with it against 5.22 without
    cooperative_mma: bool = False
    cooperative_mma_local_bytes: int = 40960  # its local memory: vectors, weights, products (DIFFC_COOP_MMA_LOCAL_BYTES)
    # coopVecMatMul's transposed products as `for k: for i: sums[i] += ...` (interchange-matvec):
    # rows read contiguously, the same sums (DIFFC_INTERCHANGE_MATVEC; on for CPUs)
    interchange_matvec: bool = False
    reduce_atomics: bool = True  # DIFFC_REDUCE_ATOMICS

    def changed(self, **changes: Any) -> KernelSettings:
        """These settings with some fields replaced (a field name that does not exist is a TypeError)."""
        return replace(self, **changes) if changes else self

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


# DIFFC_* variable -> the setting it sets (booleans: "0" is off; sizes: 0 lets the device choose)
ENVIRONMENT = {
    "DIFFC_CHECK": "sanitize",
    "DIFFC_BOUNDS_CHECK": "bounds_check",
    "DIFFC_BOUNDS_PROOFS": "bounds_proofs",
    "DIFFC_ACCUMULATE": "accumulate",
    "DIFFC_ACCUM_WORK_GROUP": "accumulate_work_group",
    "DIFFC_ACCUM_FINISH_GROUP": "accumulate_finish_group",
    "DIFFC_ACCUM_LOCAL_BYTES": "accumulate_local_bytes",
    "DIFFC_ACCUM_LOCAL_SUMS": "accumulate_local_sums",
    "DIFFC_MERGE_CALLS": "merge_calls",
    "DIFFC_COOPERATIVE": "cooperative",
    "DIFFC_COOP_LOCAL_BYTES": "cooperative_local_bytes",
    "DIFFC_COOP_MATVEC": "cooperative_matvec",
    "DIFFC_COOP_MMA": "cooperative_mma",
    "DIFFC_COOP_MMA_LOCAL_BYTES": "cooperative_mma_local_bytes",
    "DIFFC_INTERCHANGE_MATVEC": "interchange_matvec",
    "DIFFC_REDUCE_ATOMICS": "reduce_atomics",
}


def environment_settings(env: dict[str, str] | None = None) -> dict[str, Any]:
    """The settings the DIFFC_* variables of `env` (default: os.environ) set."""
    env = os.environ if env is None else env
    defaults = KernelSettings()
    out: dict[str, Any] = {}
    for var, name in ENVIRONMENT.items():
        text = env.get(var, "").strip()
        if not text:
            continue
        if isinstance(getattr(defaults, name), bool):
            out[name] = text != "0"
        elif text.isdigit() and int(text) > 0:
            out[name] = int(text)
    return out


@dataclass(frozen=True)
class KernelBuild:
    """What a kernel step's options may depend on besides the settings."""

    entry: str | None  # the one entry point to lower (diffc run / compile), or None: every compute entry point
    derivative_functions: tuple[str, ...]  # the functions the differentiation made, and custom derivatives
    report: bool = False  # passes that can say what they did print it (`diffc compile --report`)


@dataclass(frozen=True)
class KernelStep:
    """One pass of a kernel pipeline: `name` (as diffc-opt knows it), `where` its ModulePass
    class is ("module.Class" under diffc.passes), `when` the setting that turns it on (None:
    always), `options` its options from the settings (None from it: nothing to do here)."""

    name: str
    where: str
    when: str | None = None
    options: Callable[[KernelSettings, KernelBuild], dict[str, Any] | None] = lambda settings, build: {}


def _accumulate_options(s: KernelSettings, b: KernelBuild) -> dict[str, Any]:
    return {"local_bytes": s.accumulate_local_bytes, "work_group": s.accumulate_work_group,
            "finish_group": s.accumulate_finish_group, "local_sums": s.accumulate_local_sums, "report": b.report}


def _nan_check_options(s: KernelSettings, b: KernelBuild) -> dict[str, Any] | None:
    return {"functions": ",".join(b.derivative_functions)} if b.derivative_functions else None


# Compute entry points -> kernels, after the differentiation pipeline (dispatch, diffc run,
# diffc compile). Order matters: nan-check's status global is threaded by lower-entry-points;
# accumulate-gradients reads @K before reduce-atomics rewrites its adds, and cooperative-layers
# leaves it the kernels it rewrote; bounds-check guards
# every access the passes before it made; uninit-check's accesses sit under bounds-check's guards.
KERNEL_PIPELINE: tuple[KernelStep, ...] = (
    KernelStep("nan-check", "nan_check.NanCheckPass", "sanitize", _nan_check_options),
    KernelStep("lower-entry-points", "lower_entry_points.LowerEntryPointsPass", None,
               lambda s, b: {"entry": b.entry} if b.entry else {}),
    KernelStep("accumulate-gradients", "accumulate_gradients.AccumulateGradientsPass", "accumulate", _accumulate_options),
    KernelStep("cooperative-layers", "cooperative_layers.CooperativeLayersPass", "cooperative",
               lambda s, b: {"local_bytes": s.cooperative_local_bytes, "matvec": s.cooperative_matvec,
                                "mma": s.cooperative_mma,
                                "mma_local_bytes": s.cooperative_mma_local_bytes, "report": b.report}),
    KernelStep("interchange-matvec", "interchange_matvec.InterchangeMatVecPass", "interchange_matvec"),
    KernelStep("merge-calls", "merge_calls.MergeCallsPass", "merge_calls"),
    KernelStep("reduce-atomics", "reduce_atomics.ReduceAtomicsPass", "reduce_atomics"),
    KernelStep("bounds-check", "bounds_check.BoundsCheckPass", "bounds_check", lambda s, b: {"prove": s.bounds_proofs}),
    KernelStep("uninit-check", "uninit_check.UninitCheckPass", "sanitize"),
)

# The element-wise kernels of calls over tensors (runtime/kernels.py builds them), after the
# differentiation pipeline; their status globals then become trailing parameters.
CALL_KERNEL_PIPELINE: tuple[KernelStep, ...] = (
    KernelStep("nan-check", "nan_check.NanCheckPass", "sanitize", _nan_check_options),
)
