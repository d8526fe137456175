"""diffc's kernels as CUDA C (the emitter's CUDA target) compiled by NVRTC, and the launch path of
calls with torch CUDA tensors (runtime/cuda_kernels.py) up to the launch.

NVRTC needs no GPU: these run wherever libnvrtc is installed (torch's CUDA packages bring it), and
skip with the reason elsewhere. They compile a representative set of kernels (the MLP tutorial's
learnGradient with its bounds-checked and accumulated variants; atomics, halves, vectors,
group-shared memory with barriers, printf; the element-wise kernels of calls, forward, backward
and the broadcast reduction) and assert NVRTC accepts them. Without a GPU the launch itself is a
fake that records what cuLaunchKernel would get: the arguments each kernel parameter receives.
What the kernels compute on a GPU is gpu/cuda_kernels.sh's business."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from diffc.runtime import nvrtc

ROOT = Path(__file__).resolve().parents[1]
WHY = nvrtc.unavailable()
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"NVRTC unavailable: {WHY}")
ARCH = "compute_90"  # PTX: the front end and the optimizer run, the GPU's assembler does not


@pytest.fixture(autouse=True)
def no_binary_cache(monkeypatch):
    """Every compile here is NVRTC's, not a binary kept from an earlier run."""
    monkeypatch.setenv("DIFFC_CACHE_DIR", "off")
    nvrtc._memory.clear()


def _compiles(source: str) -> bytes:
    ptx = nvrtc.compile_cuda(source, ARCH)
    assert b".entry" in ptx  # PTX with at least one kernel
    return ptx


def _entry_cuda(path: Path, entry: str) -> str:
    from diffc.backend.opencl import emit_cuda
    from diffc.cli import lowered  # (what `diffc compile --emit cuda` prints)
    from diffc.compiler import emit_options

    got = lowered(str(path), entry)
    return emit_cuda(got.module, emit_options(got.settings))


def test_the_mlp_tutorials_learn_gradient_compiles_with_every_variant():
    source = _entry_cuda(ROOT / "examples/mlp/mlp.slang", "learnGradient")
    kernels = re.findall(r'extern "C" __global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(', source)
    # the plain kernel, its bounds-checked and proven-in-bounds forms, and the accumulated ones
    assert any(k.endswith("__accum") for k in kernels) and any(k.endswith("__accum_finish") for k in kernels)
    assert len(kernels) >= 4
    ptx = _compiles(source)
    for k in kernels:
        assert f".entry {k}(".encode() in ptx  # extern "C": the launch finds each by its own name


FEATURES = """
//TEST_INPUT:ubuffer(data=[0 0 0 0 0 0 0 0], stride=4):name=input
RWStructuredBuffer<float> input;
//TEST_INPUT:ubuffer(data=[0 0 0 0], stride=4):out,name=output
RWStructuredBuffer<float> output;
//TEST_INPUT:ubuffer(data=[0 0], stride=4):name=counts
RWStructuredBuffer<int> counts;
RWStructuredBuffer<half> halves;
groupshared float partial[64];
groupshared float3 shared3[64];

[numthreads(64, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID, uint3 gtid : SV_GroupThreadID, uint3 gid : SV_GroupID) {
    float x = input[tid.x];
    float3 v = float3(x, 2.0 * x, sin(x));
    shared3[gtid.x] = normalize(v + float3(1.0, 0.0, 0.0)) * max(x, 0.5);
    partial[gtid.x] = dot(v, v) + float(halves[tid.x]);
    GroupMemoryBarrierWithGroupSync();
    for (uint stride = 32; stride > 0; stride >>= 1) {
        if (gtid.x < stride)
            partial[gtid.x] += partial[gtid.x + stride] + shared3[gtid.x + stride].y;
        GroupMemoryBarrierWithGroupSync();
    }
    halves[tid.x] = half(partial[gtid.x] * 0.5);
    int before;
    InterlockedAdd(counts[0], 1, before);
    InterlockedMax(counts[1], int(tid.x));
    if (gtid.x == 0) {
        output[gid.x] = partial[0];
        printf("group %d: %f %f\\n", int(gid.x), partial[0], v.z);
    }
}
"""


def test_atomics_halves_vectors_group_shared_memory_barriers_and_printf_compile(tmp_path):
    path = tmp_path / "features.slang"
    path.write_text(FEATURES)
    source = _entry_cuda(path, "computeMain")
    for piece in ("__shared__ float", "__syncthreads", "printf(", "half*", "float3", "atomic_max", "red.global.add"):
        assert piece in source, piece
    _compiles(source)


# -- calls over tensors ---------------------------------------------------------------------------

CALLS = """
[Differentiable]
float wave(float a, float x, float y) { return a * sin(x) * y + exp(0.5 * x) - y * y / (1.0 + x * x); }

[Differentiable]
double wave64(double a, double x, double y) { return a * sin(x) * y + exp(0.5 * x) - y * y / (1.0 + x * x); }

[Differentiable]
float steps(float x, int n) {
    float s = 0.0;
    [MaxIters(8)]
    while (s < x && n > 0) { s += 0.5 * x + 0.1; n -= 1; }
    return s * x;
}
"""


@pytest.fixture
def calls(tmp_path):
    import diffc

    path = tmp_path / "calls.slang"
    path.write_text(CALLS)
    return diffc.load_module(path)


class FakeDriver:
    """cuda_kernels._Driver without a GPU: NVRTC compiles for real; the launch records the grid,
    the block and the values the argument cells hold."""

    def __init__(self, torch):
        self.torch, self.nvrtc = torch, nvrtc
        self.success = 0
        self.launches: list = []
        self.current_device = lambda: 0
        self.stream = lambda index: 0
        self.threads = SimpleNamespace(index=0)  # (device 0's context counts as current on every thread)

    def arch(self, index):
        return ARCH

    def multiprocessors(self, index):
        return 132

    def function(self, index, image, key, name):
        assert f".entry {name}(".encode() in image
        return name

    def launch(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        launch = self.current
        values = [c.value for c in launch.cells]
        pointers = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        assert [pointers[k] for k in range(len(values))] == [ctypes.addressof(c) for c in launch.cells]
        self.launches.append((f, gx, bx, values))
        return (0,)


@pytest.fixture
def fake(monkeypatch):
    torch = pytest.importorskip("torch")
    from diffc.runtime import cuda_kernels

    drv = FakeDriver(torch)
    monkeypatch.setattr(cuda_kernels, "_state", [drv])
    real_run = cuda_kernels.Launch.run

    def run(self, *args, **kwargs):
        drv.current = self
        return real_run(self, *args, **kwargs)

    monkeypatch.setattr(cuda_kernels.Launch, "run", run)
    monkeypatch.setattr(cuda_kernels, "FALLBACKS", {})
    return drv


def _params(source: str, kernel: str) -> list[str]:
    head = re.search(rf'__global__ void (?:__launch_bounds__\(\d+\) )?{kernel}\(([^)]*)\)', source)
    assert head, kernel
    return [p.strip() for p in head.group(1).split(",")]


def test_a_calls_forward_and_backward_kernels_compile_and_get_their_arguments_in_order(calls, fake):
    import torch

    from diffc.runtime import cuda_kernels

    fn = calls.wave
    x, y = torch.linspace(-1, 1, 1000), torch.linspace(0, 2, 1000)
    out = cuda_kernels.forward(fn, [1.5, x, y], [1, 2], [x, y])
    assert out is not None and out.shape == (1000,) and out.dtype == torch.float32, cuda_kernels.FALLBACKS
    f, grid, block, values = fake.launches[-1]
    launch = fake.current
    params = _params(launch.source, f)
    assert len(params) == len(values)
    by_name = dict(zip([p.split()[-1] for p in params], values))
    assert by_name["x"] == x.data_ptr() and by_name["y"] == y.data_ptr() and by_name["out"] == out.data_ptr()
    assert by_name["a"] == 1.5 and by_name["n"] == 1000
    assert grid * block >= 1000 and block == cuda_kernels.WORK_GROUP

    gy = torch.ones(1000)
    grads = cuda_kernels.backward(fn, [1.5, x, y], [1, 2], [x, y], [True, False], gy)
    assert grads is not None and grads[0].shape == (1000,) and grads[1] is None
    f, grid, block, values = fake.launches[-1]
    params = [p.split()[-1] for p in _params(fake.current.source, f)]
    by_name = dict(zip(params, values))
    assert by_name["x_grad"] == grads[0].data_ptr() and by_name["out_grad"] == gy.data_ptr()
    assert "y_grad" not in by_name


def test_a_broadcast_gradient_is_summed_by_the_reduce_form(calls, fake):
    import torch

    from diffc.runtime import cuda_kernels

    fn = calls.wave
    a = torch.tensor([2.0])  # broadcast over x's 4096 elements: its gradient is the group sums' sum
    x, y = torch.linspace(-1, 1, 4096), torch.linspace(0, 2, 4096)
    grads = cuda_kernels.backward(fn, [a, x, y], [0, 1, 2], [a, x, y], [True, True, False], torch.ones(4096))
    assert grads is not None and grads[0].shape == (1,), cuda_kernels.FALLBACKS
    f, grid, block, values = fake.launches[-1]
    assert fake.current.spec.reduces and block == fake.current.spec.group
    assert "__shared__" in fake.current.source  # the group's sums in shared memory


def test_double_calls_and_loop_overrun_checks_compile(calls, fake):
    import torch

    from diffc.runtime import cuda_kernels

    x = torch.linspace(0, 1, 64, dtype=torch.float64)
    assert cuda_kernels.forward(calls.wave64, [1.0, x, x], [1, 2], [x, x]) is not None, cuda_kernels.FALLBACKS
    assert "double" in fake.current.source
    s = torch.linspace(0, 3, 64)
    n = 5
    grads = cuda_kernels.backward(calls.steps, [s, n], [0], [s], [True], torch.ones(64))
    assert grads is not None, cuda_kernels.FALLBACKS
    launch = fake.current
    assert launch.slots  # the loop's overrun status: a buffer after the kernel's own arguments
    assert len(_params(launch.source, launch.spec.kernel_name)) == len(launch.cells)


def test_what_the_cuda_path_cannot_run_falls_back_with_its_reason(calls, fake, monkeypatch):
    import torch

    from diffc.runtime import cuda_kernels

    x = torch.linspace(0, 1, 8)
    calls.check = True
    try:
        assert "sanitizer" in cuda_kernels.why_not(calls.wave, [1.0, x, x], [1, 2], [x, x])
    finally:
        calls.check = False
    monkeypatch.setattr(cuda_kernels.Launch, "__init__", lambda *a: (_ for _ in ()).throw(RuntimeError("refused")))
    with pytest.warns(RuntimeWarning, match="refused"):
        assert cuda_kernels.forward(calls.wave, [1.0, x, x], [1, 2], [x, x]) is None
    assert "refused" in cuda_kernels.FALLBACKS[("wave", "call")]


def test_diffc_compile_emit_cuda_prints_what_nvrtc_compiles(tmp_path, capsys):
    from diffc import cli

    path = tmp_path / "k.slang"
    path.write_text("""
RWStructuredBuffer<float> values;
[shader("compute")]
[numthreads(32, 1, 1)]
void scale(uint3 tid : SV_DispatchThreadID, uniform float s) { values[tid.x] = values[tid.x] * s; }
""")
    assert cli.main(["compile", str(path), "--emit", "cuda"]) == 0
    source = capsys.readouterr().out
    assert source.startswith("// CUDA C generated by diffc")
    assert re.search(r'extern "C" __global__ void (__launch_bounds__\(32\) )?scale', source)
    _compiles(source)


def test_the_autograd_node_of_a_cuda_call_hands_its_backward_on(calls, fake):
    # The forward's launch is the fake's (its result is not computed), the node is _CudaCall's;
    # its backward sees CPU tensors, which the CUDA path refuses, and takes the host path: the
    # gradient is a real one, against float64 central differences.
    import torch

    from diffc.runtime import torch_bridge

    x = torch.linspace(-1, 1, 50).requires_grad_(True)
    y = torch.linspace(0, 2, 50)
    out = torch_bridge._cuda_call(torch, calls.wave, [1.5, x, y], [1, 2], [x, y], True)
    assert type(out.grad_fn).__name__.startswith("_CudaCall")
    w = torch.linspace(-0.5, 0.5, 50)
    (out * w).sum().backward()

    def wave(xx):
        yy = y.double().numpy()
        return 1.5 * np.sin(xx) * yy + np.exp(0.5 * xx) - yy * yy / (1.0 + xx * xx)

    xd, h = x.detach().double().numpy(), 1e-6
    want = (wave(xd + h) - wave(xd - h)) / (2 * h) * w.double().numpy()
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-4, atol=1e-5)
