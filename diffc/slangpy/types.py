"""`from slangpy.types import call_id, grid, Tensor`, as SlangPy's drivers write it."""

from diffc.slangpy.tensor import Tensor  # noqa: F401
from diffc.slangpy.values import call_id, grid  # noqa: F401
