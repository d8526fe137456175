"""The differentiation pipeline: the passes that turn `diff.fwd_diff` / `diff.bwd_diff` into plain
func/arith/math/scf/memref. Defined here only, in a module that imports nothing, so the module
cache can key on it without loading xDSL; diffc.compiler runs it."""

# forward-handle-results (a mutating method of a struct holding a buffer returns the buffer it was
# given: no result) first, so no loop carries a buffer handle that reverse mode would tape, and
# again on the generated derivatives
AD_PIPELINE: tuple[str, ...] = ("forward-handle-results", "diff-fwd", "diff-rev", "diff-checkpoint", "diff-lower",
                                "forward-handle-results", "canonicalize", "cse")
AD_PIPELINE_SPEC = ",".join(AD_PIPELINE)
