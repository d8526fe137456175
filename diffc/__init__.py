"""diffc: Slang-style automatic differentiation on xDSL IR, lowered to OpenCL C.

The runtime API is imported lazily, so `import diffc` stays cheap for tools that only compile:

    m = diffc.load_module("poly.mlir")
    x = diffc.Tensor.from_numpy(a).with_grads(zero=True)
    diffc.device()
    print(diffc.check(m).table())     # derivatives against finite differences (diffc.gradcheck)
"""

__version__ = "0.1.0"

_LAZY = {
    "load_module": ("diffc.runtime.module", "load_module"),
    "Module": ("diffc.runtime.module", "Module"),
    "Tensor": ("diffc.runtime.tensor", "Tensor"),
    "device": ("diffc.runtime.device", "device"),
    "synchronize": ("diffc.runtime.device", "synchronize"),
    "capture": ("diffc.runtime.capture", "capture"),
    "check": ("diffc.gradcheck", "check"),  # a function; the module is diffc.gradcheck
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'diffc' has no attribute '{name}'")
    import importlib

    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_LAZY})
