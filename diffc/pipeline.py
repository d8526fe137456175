"""The differentiation pipeline: the passes that turn `diff.fwd_diff` / `diff.bwd_diff` into plain
func/arith/math/scf/memref. Defined here only, in a module that imports nothing, so the module
cache can key on it without loading xDSL; diffc.compiler runs it."""

AD_PIPELINE: tuple[str, ...] = ("diff-fwd", "diff-rev", "diff-checkpoint", "diff-lower", "canonicalize", "cse")
AD_PIPELINE_SPEC = ",".join(AD_PIPELINE)
