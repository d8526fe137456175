"""SlangPy's Python API over diffc: a SlangPy program runs with `import diffc.slangpy as spy`.

    device = spy.create_device(include_paths=[...])
    m = spy.Module.load_from_file(device, "splat.slang")        # `import slangpy;` in it: diffc's
    t = spy.Tensor.from_numpy(device, x).with_grads()
    y = m.f(t, spy.grid(shape=(64, 64)), 0.5)                    # one thread per element
    m.loss.bwds(out, spy.call_id(), t)                           # gradients into t.grad

Code that imports `slangpy` itself (a library package) runs after `as_slangpy.install()`.
Reflection: `m.layout` (reflection.py). The package's modules: module.py (devices, modules,
function handles), calls.py (a call's kernel), specialize.py (generic functions, methods,
constructors), program.py (the checked program), reflection.py, tensor.py, values.py,
commands.py (command encoders), images.py, torch_calls.py, as_slangpy.py.
What differs from SlangPy is listed in docs/frontend.md ("SlangPy programs").
"""

from diffc.slangpy import values as math  # noqa: F401 (spy.math.cross)
from diffc.slangpy import types  # noqa: F401 (from slangpy.types import call_id)
from diffc.slangpy.module import (  # noqa: F401
    SHADER_PATH,
    Device,
    DeviceType,
    FunctionHandle,
    Module,
    StructType,
    create_device,
    create_torch_device,
)
from diffc.slangpy.tensor import Format, Tensor, Texture, TextureUsage  # noqa: F401
from diffc.slangpy.values import (  # noqa: F401
    ElementType,
    call_id,
    cross,
    float1,
    float2,
    float3,
    float4,
    grid,
    int1,
    int2,
    int3,
    int4,
    uint1,
    uint2,
    uint3,
    uint4,
    wang_hash,
)
from diffc.slangpy.module import Feature, InstanceList, Sampler, Struct, TextureLoader  # noqa: F401


class _Tev:
    """SlangPy's tev viewer client: diffc shows nothing; `show_async` keeps the last image per name."""

    def __init__(self):
        self.images: dict = {}

    def show_async(self, image, name: str = "image", **_options) -> None:
        self.images[name] = image

    show = show_async


tev = _Tev()
