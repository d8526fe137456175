"""Not a pass: the name diffc/runtime/accumulate.py still imports from here, whose home is
diffc/kernel_support/bounds_proofs.py (remove once the runtime imports it from there)."""

from diffc.kernel_support.bounds_proofs import INBOUNDS_SUFFIX

__all__ = ["INBOUNDS_SUFFIX"]
