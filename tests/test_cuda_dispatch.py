"""`entry.dispatch(...)` with torch CUDA tensors (runtime/cuda_dispatch.py): the entry points'
kernels as CUDA C through NVRTC, and the launches a dispatch makes, up to cuLaunchKernel.

NVRTC needs no GPU. Without one, the launch is a fake that decodes the argument array
cuLaunchKernel would read, by the C types of the kernel's own parameters (parsed from the CUDA
source), and the tensors are CPU tensors standing in for CUDA ones (their data_ptr()s are what
the kernel must get). What the kernels compute is gpu/cuda_kernels.sh's business."""

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
ARCH = "compute_90"

STRUCTS = """
struct Layer
{
    float* weights;
    float* biases;
};

struct Net
{
    Layer first;
    Layer second;
};

[shader("compute")]
[numthreads(64, 1, 1)]
void scaleInto(uint32_t tid : SV_DispatchThreadID, uniform Net* net, uniform float* out, uniform float scale,
               uniform uint32_t count)
{
    if (tid >= count) return;
    out[tid] = net->first.weights[tid] * scale + net->second.biases[tid % 3] + net->first.biases[0]
               - net->second.weights[1];
}
"""


class FakeDriver:
    """cuda_kernels._Driver without a GPU: NVRTC compiles for real; each launch is recorded with
    its kernel's name, grid, block and the argument array's address."""

    def __init__(self, torch):
        self.torch, self.nvrtc = torch, nvrtc
        self.success = 0
        self.launches: list = []
        self.current_device = lambda: 0
        self.stream = lambda index: 0
        self.threads = SimpleNamespace(index=0)
        self.images: list = []

    def arch(self, index):
        return ARCH

    def multiprocessors(self, index):
        return 132

    def function(self, index, image, key, name):
        assert f".entry {name}(".encode() in image, name
        self.images.append(image)
        return name

    def launch(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        # decoded now: cuLaunchKernel reads the argument cells during the call, not after
        self.launches.append((f, (gx, gy, gz), (bx, by, bz), _decode(self.source, f, params)))
        return (0,)


@pytest.fixture
def fake(monkeypatch):
    torch = pytest.importorskip("torch")
    from diffc.runtime import cuda_dispatch, cuda_kernels

    drv = FakeDriver(torch)
    monkeypatch.setattr(cuda_kernels, "_state", [drv])
    monkeypatch.setattr(cuda_kernels, "FALLBACKS", {})
    monkeypatch.setattr(cuda_dispatch, "_why_not_tensors", lambda leaves: None)  # (CPU tensors stand in)
    monkeypatch.setattr(cuda_dispatch, "PATHS", {})
    reads: list = []
    monkeypatch.setattr(cuda_dispatch.BoundsReader, "launched", lambda self, *a: reads.append((self, a)))
    drv.bounds_reads = reads
    return drv


def _kernel_params(source: str, kernel: str) -> list[tuple[str, str]]:
    """(C type, name) of each parameter of `kernel` in the CUDA source."""
    head = re.search(rf'__global__ void (?:__launch_bounds__\(\d+\) )?{kernel}\(([^)]*)\)', source)
    assert head, kernel
    out = []
    for p in head.group(1).split(","):
        m = re.match(r"(.*?)(\w+)$", p.strip())
        out.append((m.group(1).strip(), m.group(2)))
    return out


_C_SCALARS = {"float": ctypes.c_float, "double": ctypes.c_double, "int": ctypes.c_int32, "uint": ctypes.c_uint32,
              "long": ctypes.c_int64, "ulong": ctypes.c_uint64, "unsigned int": ctypes.c_uint32}


def _decode(source: str, kernel: str, params: int) -> dict:
    """What cuLaunchKernel would pass each parameter of `kernel`, by name: an address for a
    pointer, the value for a scalar."""
    decl = _kernel_params(source, kernel)
    pointers = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
    got = {}
    for k, (ctype, name) in enumerate(decl):
        base = re.sub(r"\b(const|__restrict__|__global|__local|restrict)\b", "", ctype).strip()
        if base.endswith("*"):
            got[name] = ctypes.cast(pointers[k], ctypes.POINTER(ctypes.c_uint64))[0]
        else:
            got[name] = ctypes.cast(pointers[k], ctypes.POINTER(_C_SCALARS[base]))[0]
    return got


def test_the_mlp_tutorials_entry_points_compile_for_the_cuda_dispatch():
    import diffc
    from diffc.runtime import cuda_dispatch

    m = diffc.load_module(ROOT / "examples/mlp/mlp.slang")
    prog = cuda_dispatch.cuda_program(m)
    ptx = nvrtc.compile_cuda(prog.source, ARCH)
    for entry in ("learnGradient", "adjustParameters"):
        info = prog.kernels[entry]
        names = [info.c_name] + ([info.inbounds] if info.inbounds else [])
        acc = prog.accumulated.get(entry)
        if acc is not None:
            names += [acc.c_name, acc.finish_c_name] + [n for n in (acc.inbounds, acc.finish_inbounds) if n]
        for n in names:
            assert f".entry {n}(".encode() in ptx, n
    assert "learnGradient" in prog.accumulated  # its gradients are accumulated: kernel and finish kernel
    assert 'extern "C" __global__' in prog.source and "__kernel" not in prog.source


def test_a_dispatch_with_struct_of_tensor_arguments_launches_with_them_in_order(tmp_path, fake):
    import torch

    import diffc
    from diffc.runtime import cuda_dispatch

    path = tmp_path / "structs.slang"
    path.write_text(STRUCTS)
    m = diffc.load_module(path)
    fake.source = cuda_dispatch.cuda_program(m).source
    w1, b1 = torch.arange(100, dtype=torch.float32), torch.zeros(1)
    w2, b2 = torch.ones(5), torch.ones(3)
    out = torch.empty(100)
    net = {"first": {"weights": w1, "biases": b1}, "second": {"weights": w2, "biases": b2}}
    assert m.scaleInto.dispatch(thread_count=100, net=net, out=out, scale=2.5, count=100) is None
    from diffc.runtime import cuda_kernels

    assert not cuda_kernels.FALLBACKS, cuda_kernels.FALLBACKS
    (name, grid, block, got), = fake.launches
    prog = cuda_dispatch.cuda_program(m)
    info = prog.kernels["scaleInto"]
    assert name in (info.c_name, info.inbounds)
    assert grid == (2, 1, 1) and block == (64, 1, 1)  # 100 threads in whole groups of [numthreads(64)]
    want_ptrs = {"net_first_weights": w1, "net_first_biases": b1, "net_second_weights": w2,
                 "net_second_biases": b2, "out": out}
    decl = [n for _, n in _kernel_params(prog.source, name)]
    for leaf, t in want_ptrs.items():
        hits = [n for n in decl if n == leaf or n.endswith("_" + leaf) and not n.startswith("diffc_len")]
        assert hits, (leaf, decl)
        assert got[hits[0]] == t.data_ptr(), leaf
        lengths = [n for n in decl if n.startswith("diffc_len") and n.endswith(leaf)]
        for n in lengths:  # bounds-check's lengths: the tensors' elements
            assert got[n] == t.numel(), n
    scalars = {n: v for n, v in got.items() if n in ("scale", "count")}
    assert scalars == {"scale": 2.5, "count": 100}
    # the parameters in the kernel's order: the struct's leaves first, as the entry point declares
    order = [decl.index(next(n for n in decl if n == leaf or n.endswith("_" + leaf)))
             for leaf in ("net_first_weights", "net_first_biases", "net_second_weights", "net_second_biases",
                          "out", "scale", "count")]
    assert order == sorted(order)
    if info.bounds_sites is not None:
        assert len(fake.bounds_reads) == 1  # its status is read later, without a wait


def test_the_mlp_learn_gradient_dispatch_launches_the_accumulated_and_finish_kernels(fake):
    import torch

    import diffc
    from diffc.runtime import cuda_dispatch, cuda_kernels

    m = diffc.load_module(ROOT / "examples/mlp/mlp.slang")
    fake.source = cuda_dispatch.cuda_program(m).source
    # the tutorial's layout: layer1 4->16 then layer2 16->4, each weights then biases
    sizes = [("layer1", 64, 16), ("layer2", 64, 4)]
    params, grads = torch.zeros(148, dtype=torch.float16), torch.zeros(148, dtype=torch.float16)
    network, at = {}, 0
    for name, w, b in sizes:
        network[name] = {"weights": params[at:at + w], "weightsGrad": grads[at:at + w],
                         "biases": params[at + w:at + w + b], "biasesGrad": grads[at + w:at + w + b]}
        at += w + b
    n = 1000
    inputs = torch.zeros(2 * n)
    loss = torch.zeros(1, dtype=torch.int32)
    m.learnGradient.dispatch(thread_count=n, network=network, lossBuffer=loss, inputs=inputs, count=n,
                             deterministic=True)
    assert not cuda_kernels.FALLBACKS, cuda_kernels.FALLBACKS
    prog = cuda_dispatch.cuda_program(m)
    acc = prog.accumulated["learnGradient"]
    (main, mgrid, mblock, got_main), (finish, fgrid, fblock, got_finish) = fake.launches
    assert main in (acc.c_name, acc.inbounds) and finish in (acc.finish_c_name, acc.finish_inbounds)
    assert mblock == (acc.group, 1, 1) and fblock == (acc.finish_group, 1, 1)
    groups = min(-(-n // acc.group), 132 * cuda_dispatch.ACCUM_GROUPS_PER_SM)
    assert mgrid == (groups, 1, 1) and fgrid == (acc.slots, 1, 1)  # one finish group per slot
    partials = m.__dict__["_cuda_partials"][("learnGradient", 0)]
    assert got_main[acc.partials_param] == got_finish[acc.partials_param] == partials.data_ptr()
    assert got_main[acc.groups_param] == -(-n // 256)  # the entry point's own group count (virtual groups)
    assert got_finish[acc.groups_param] == groups  # the groups launched, whose partial sums it adds
    assert got_main[acc.mode_param] == 1
    leaf = next(k for k in got_main if k.endswith("layer2_weightsGrad"))
    assert got_main[leaf] == grads[80:144].data_ptr()
    assert got_main[next(k for k in got_main if k.endswith("inputs"))] == inputs.data_ptr()


def test_a_dispatch_the_cuda_path_cannot_take_runs_on_opencl_over_copies(tmp_path, monkeypatch):
    """Torch tensors the CUDA path does not take (here CPU tensors) run on the OpenCL path over
    copies, every buffer copied back: the right numbers, and the reason in FALLBACKS."""
    torch = pytest.importorskip("torch")
    import diffc
    from diffc.runtime import cuda_kernels

    monkeypatch.setattr(cuda_kernels, "FALLBACKS", {})
    path = tmp_path / "structs.slang"
    path.write_text(STRUCTS)
    m = diffc.load_module(path)
    rng = np.random.default_rng(3)
    w1, b1, w2, b2 = (torch.from_numpy(rng.normal(size=k).astype(np.float32)) for k in (50, 1, 5, 3))
    out = torch.full((50,), 7.0)
    net = {"first": {"weights": w1, "biases": b1}, "second": {"weights": w2, "biases": b2}}
    m.scaleInto.dispatch(thread_count=40, net=net, out=out, scale=-1.5, count=40)
    want = np.full(50, 7.0)
    tid = np.arange(40)
    want[:40] = (w1.numpy()[:40].astype(np.float64) * -1.5 + b2.numpy()[tid % 3] + b1.numpy()[0] - w2.numpy()[1])
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6, atol=1e-6)
    assert ("scaleInto", "dispatch") in cuda_kernels.FALLBACKS


def test_a_repeated_dispatch_launches_its_plan_again_and_a_changed_one_binds_anew(tmp_path, fake, monkeypatch):
    import torch

    import diffc
    from diffc.runtime import cuda_dispatch
    from diffc.runtime import dispatch as opencl_dispatch

    path = tmp_path / "structs.slang"
    path.write_text(STRUCTS)
    m = diffc.load_module(path)
    fake.source = cuda_dispatch.cuda_program(m).source
    binds = []
    real_bind = opencl_dispatch.bind
    monkeypatch.setattr(opencl_dispatch, "bind", lambda *a, **k: binds.append(1) or real_bind(*a, **k))
    w1, b1, w2, b2, out = torch.ones(64), torch.ones(1), torch.ones(2), torch.ones(3), torch.empty(64)
    net = {"first": {"weights": w1, "biases": b1}, "second": {"weights": w2, "biases": b2}}
    for _ in range(3):
        m.scaleInto.dispatch(thread_count=64, net=net, out=out, scale=2.0, count=64)
    assert len(binds) == 1 and len(fake.launches) == 3
    assert cuda_dispatch.PATHS.get(("scaleInto", "cuda")) == 3 and ("scaleInto", "fallback") not in cuda_dispatch.PATHS
    assert fake.launches[0][3] == fake.launches[2][3]  # the same arguments each time
    m.scaleInto.dispatch(thread_count=64, net=net, out=out, scale=-2.0, count=64)  # another number
    out2 = torch.empty(64)
    m.scaleInto.dispatch(thread_count=64, net=net, out=out2, scale=2.0, count=64)  # another tensor
    net["second"]["biases"] = b3 = torch.ones(3)
    m.scaleInto.dispatch(thread_count=64, net=net, out=out2, scale=2.0, count=64)  # a field replaced
    assert len(binds) == 4
    assert fake.launches[3][3]["scale"] == -2.0
    assert out2.data_ptr() in fake.launches[4][3].values() and out.data_ptr() not in fake.launches[4][3].values()
    assert b3.data_ptr() in fake.launches[5][3].values() and b2.data_ptr() not in fake.launches[5][3].values()


def test_bounds_flags_are_read_without_a_wait_and_raised_by_a_later_dispatch(tmp_path):
    """BoundsReader: a launch enqueues a copy of the status and an event; nothing is read until
    the event says the copy is done; then what the kernel flagged is raised (E0011, the buffer,
    the index) and the status zeroed. Torch's CUDA event is replaced by one the test completes."""
    torch = pytest.importorskip("torch")
    import diffc
    from diffc.runtime import cuda_dispatch
    from diffc.runtime.bounds import BoundsError

    path = tmp_path / "structs.slang"
    path.write_text(STRUCTS)
    m = diffc.load_module(path)
    sites = cuda_dispatch.cuda_program(m).kernels["scaleInto"].bounds_sites
    assert sites

    class Event:
        made: list = []

        def __init__(self):
            self.done = False
            Event.made.append(self)

        def record(self):
            pass

        def query(self):
            return self.done

        def synchronize(self):
            self.done = True

    shim = SimpleNamespace(zeros=torch.zeros, empty=torch.empty, int32=torch.int32, cuda=SimpleNamespace(Event=Event))
    reader = cuda_dispatch.BoundsReader(sites, shim, torch.device("cpu"))
    reader.launched("scaleInto", "scaleInto.dispatch", m.sources)
    reader.status[0:3] = torch.tensor([1, 70, 64], dtype=torch.int32)  # the kernel flags site 0 after that copy
    reader.poll()  # the read is not done: nothing read, nothing raised
    reader.launched("scaleInto", "scaleInto.dispatch", m.sources)  # a read in flight: no second one
    assert len(Event.made) == 1
    Event.made[0].done = True
    reader.poll()  # the read was of the status before the flag: nothing to raise
    reader.launched("scaleInto", "scaleInto.dispatch", m.sources)  # the next launch reads the flag
    Event.made[1].done = True
    with pytest.raises(BoundsError) as e:
        reader.poll()
    assert "E0011" in str(e.value) and "index 70" in str(e.value) and e.value.site == sites[0]
    assert int(reader.status.abs().sum()) == 0  # raised once, then zeroed
