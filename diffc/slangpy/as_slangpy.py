"""Lets code written against SlangPy's module names run on diffc unchanged: after
`diffc.slangpy.as_slangpy.install()`, `import slangpy`, `from slangpy.reflection import
SlangType`, `from slangpy.types import Tensor`, `from slangpy.core.function import FunctionNode`
and `from slangpy.core.native import Shape` give diffc's modules and classes (a library package
that imports `slangpy` in each of its files need not be edited). `install()` refuses when a
different `slangpy` was imported already."""

from __future__ import annotations

import sys
import types

import numpy as np


class DataType:
    """sgl's scalar data types, as numpy dtypes."""

    float16 = np.dtype(np.float16)
    float32 = np.dtype(np.float32)
    float64 = np.dtype(np.float64)
    int32 = np.dtype(np.int32)
    uint32 = np.dtype(np.uint32)


class CoopVecMatrixLayout:
    """Named for completeness: diffc's devices have no cooperative vectors (Device.features)."""

    row_major = "row_major"
    column_major = "column_major"
    inferencing_optimal = "inferencing_optimal"
    training_optimal = "training_optimal"


def pack(module, value):
    """SlangPy's `pack(module, value)`: a value to pass to many calls. diffc binds a call's
    arguments from the Python values each time, so the packed value is the value itself."""
    return value


def _module(name: str, **attrs) -> types.ModuleType:
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    return m


def install() -> types.ModuleType:
    """Registers diffc's SlangPy API under SlangPy's module names; returns the `slangpy` module."""
    import diffc.slangpy as spy
    from diffc.slangpy import module as spy_module
    from diffc.slangpy import reflection, types as spy_types
    from diffc.runtime.tensor import Tensor as Storage  # (a tensor's `.storage`: SlangPy's Buffer)
    from diffc.slangpy.commands import CommandBuffer, CommandEncoder

    found = sys.modules.get("slangpy")
    if found is not None:
        if getattr(found, "__diffc__", False):
            return found
        raise ImportError("diffc.slangpy.as_slangpy.install(): another 'slangpy' is imported already")
    top = _module("slangpy", __diffc__=True, __path__=[])
    top.__dict__.update({k: v for k, v in vars(spy).items() if not k.startswith("_")})
    top.__dict__.update(
        TypeReflection=reflection.TypeReflection, DataType=DataType, CoopVecMatrixLayout=CoopVecMatrixLayout,
        Struct=spy_module.StructType, Buffer=Storage, CommandEncoder=CommandEncoder, CommandBuffer=CommandBuffer,
        TextureLoader=spy_module.TextureLoader, Feature=spy_module.Feature, Sampler=spy_module.Sampler,
        pack=pack, reflection=reflection, types=spy_types)
    core = _module("slangpy.core", __path__=[])
    function = _module("slangpy.core.function", FunctionNode=spy_module.FunctionHandle)
    native = _module("slangpy.core.native", Shape=reflection.Shape)
    core.function, core.native = function, native
    top.core = core
    sys.modules.update({"slangpy": top, "slangpy.reflection": reflection, "slangpy.types": spy_types,
                        "slangpy.core": core, "slangpy.core.function": function, "slangpy.core.native": native})
    return top
