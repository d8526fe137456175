"""diffc: Slang-style automatic differentiation on xDSL IR, lowered to OpenCL C."""

__version__ = "0.1.0"
