"""diffc: Slang-style automatic differentiation on xDSL IR, lowered to OpenCL C.

The runtime API is imported lazily, so `import diffc` stays cheap for tools that only compile:

    m = diffc.load_module("poly.mlir")
    x = diffc.Tensor.from_numpy(a).with_grads(zero=True)
    diffc.device()
    print(diffc.check(m).table())     # derivatives against finite differences (diffc.gradcheck)
"""

__version__ = "0.1.0"


def _map_source_folders() -> None:
    """Make `diffc.dialects`, `diffc.passes` and `diffc.tools` importable from a source checkout.

    The repository keeps those packages at its top level; an install maps them under `diffc`.
    Run from the checkout itself (or with it first on PYTHONPATH), `diffc` is this folder and the
    mapping must come from here, ahead of any installed mapping that points at another tree.
    """
    import importlib.abc
    import importlib.util
    import os
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    folders = {}
    for name in ("dialects", "passes", "tools"):
        init = os.path.join(root, name, "__init__.py")
        installed = os.path.join(os.path.dirname(os.path.abspath(__file__)), name, "__init__.py")
        if os.path.isfile(init) and not os.path.isfile(installed):
            folders[f"diffc.{name}"] = os.path.join(root, name)
    if not folders:
        return

    class _SourceFolders(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            folder = folders.get(fullname)
            if folder is None:
                return None
            return importlib.util.spec_from_file_location(
                fullname, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder]
            )

    sys.meta_path.insert(0, _SourceFolders())


_map_source_folders()

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
