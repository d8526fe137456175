"""diffc.distributed: sharding, the ordered sum, a one-rank process group (no round trip), the host
transport's gloo group, every rank's values gathered exactly through the gradients' collective
(tests/distributed_gather_worker.py), and examples/mlp/train.py --distributed under torchrun with
two gloo processes on this machine's OpenCL device, against one process.

torch is an optional extra (diffc[torch]), which CI installs with the test extra; the tests
that need it skip without it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import diffc
from diffc.distributed import shard, sum_in_rank_order
from rounding import U16, accumulated_half_adds, gamma, half_accumulation_error

MLP = Path(__file__).resolve().parent.parent / "examples" / "mlp"
sys.path.insert(0, str(MLP))
from mlp_rounding import kernel_sample_gradients  # noqa: E402
from train import Adam, batch_gradient, network_of, next_batch, optimizer_step, start, train  # noqa: E402

sys.path.remove(str(MLP))


def _torch_distributed():
    torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install diffc[torch])")
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("this torch has no gloo backend")
    return torch


@pytest.mark.parametrize("n, world", [(64, 2), (7, 3), (2, 4), (0, 2), (10, 1)])
def test_shards_cover_the_batch_in_order(n, world):
    rows = [shard(n, r, world) for r in range(world)]
    assert [i for s in rows for i in range(n)[s]] == list(range(n))
    sizes = [len(range(n)[s]) for s in rows]
    assert max(sizes) - min(sizes) <= 1


def test_sum_in_rank_order_adds_left_to_right_in_float32():
    a, b, c = np.float16(2048), np.float16(1), np.float16(1)
    # In float16, (2048 + 1) + 1 rounds to 2048 twice; in float32 the sum is exact.
    got = sum_in_rank_order([np.array([a]), np.array([b]), np.array([c])])
    assert got.dtype == np.float32 and got[0] == 2050
    x = np.array([1e8], np.float32)
    assert sum_in_rank_order([x, np.array([1.0], np.float32), -x])[0] == 0.0  # 1e8 + 1 rounds to 1e8
    assert sum_in_rank_order([x, -x, np.array([1.0], np.float32)])[0] == 1.0


def test_nccl_only_where_every_local_rank_has_a_cuda_device():
    from diffc.distributed import default_backend

    assert default_backend(2, 2) == "nccl" and default_backend(1, 8) == "nccl"
    assert default_backend(2, 1) == "gloo"  # two ranks would share a GPU, which NCCL refuses
    assert default_backend(1, 0) == "gloo"


def test_device_index_starts_the_candidates_at_that_device(monkeypatch):
    from diffc.runtime.device import _rotated
    from diffc.runtime.errors import DeviceError

    monkeypatch.setenv("DIFFC_DEVICE_INDEX", "1")
    assert _rotated(["a", "b", "c"]) == ["b", "c", "a"]
    monkeypatch.setenv("DIFFC_DEVICE_INDEX", "4")  # more ranks than devices: they share
    assert _rotated(["a", "b", "c"]) == ["b", "c", "a"]
    monkeypatch.setenv("DIFFC_DEVICE_INDEX", "x")
    with pytest.raises(DeviceError, match="DIFFC_DEVICE_INDEX"):
        _rotated(["a"])


def test_one_rank_keeps_values_without_a_round_trip(tmp_path):
    torch = _torch_distributed()
    import torch.distributed as dist

    import diffc
    from diffc.distributed import PHASES, DataParallel

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    try:
        half = diffc.Tensor.from_numpy(np.array([1.5, -0.25, 3.0], np.float16))
        single = diffc.Tensor.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3) / 7)
        want = single.to_numpy()
        dp = DataParallel([half, single])
        assert dp.world == 1 and dp.shard(5) == slice(0, 5)
        dp.all_reduce()
        assert half.to_numpy().tolist() == [1.5, -0.25, 3.0] and half.dtype == np.float16
        np.testing.assert_array_equal(single.to_numpy(), want)
        # one rank: the gradients already are the sums, so nothing makes the host round trip
        assert set(dp.timings) == set(PHASES) and dp.timings["kernel"] > 0
        assert dp.timings["download"] == dp.timings["upload"] == dp.timings["collective"] == 0
        assert "host round trip" in dp.report() and dp.calls == 1
        ordered = DataParallel([single], ordered=True, mean=True, profile=True)
        ordered.all_reduce()
        np.testing.assert_array_equal(single.to_numpy(), want)
        assert dp.max(2.5) == 2.5 and dp.same_on_every_rank(single)
        np.testing.assert_array_equal(dp.all_reduce(gather=[2.5, -1.0]), [[2.5, -1.0]])
        np.testing.assert_array_equal(single.to_numpy(), want)
        with pytest.raises(TypeError, match="float32 Tensor"):
            dp.all_reduce(gather=diffc.Tensor.zeros(1, np.uint32))
        assert torch.distributed.get_world_size() == 1
    finally:
        dist.destroy_process_group()


def test_gathered_values_and_sums_are_exact_in_every_mode_over_two_gloo_processes():
    """Each rank's values come back exactly through the gradients' sum (the loss-in-buffer max
    is the true max), over repeated calls, ordered or not, device or host transport."""
    _torch_distributed()
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
           str(Path(__file__).resolve().parent / "distributed_gather_worker.py")]
    run = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count("ok: ") == 2 * 11 and "equals one process's" in run.stdout


def test_tensor_view_reads_the_same_bits_as_another_dtype():
    import diffc
    from diffc.runtime.errors import CallError

    bits = diffc.Tensor.from_numpy(np.array([1.5, -2.0], np.float32).view(np.uint32))
    as_float = bits.view(np.float32)
    assert as_float.to_numpy().tolist() == [1.5, -2.0] and as_float.dtype == np.float32
    as_float.fill(0.25)  # the same storage
    assert bits.to_numpy().view(np.float32).tolist() == [0.25, 0.25]
    with pytest.raises(CallError, match="element sizes differ"):
        bits.view(np.float16)


def test_host_group_is_a_gloo_group_made_once_per_process_group(tmp_path, monkeypatch):
    """Where the group is not gloo (NCCL on GPUs; here pretended), transport="host" makes one
    gloo group over the same ranks and reuses it; a gloo group is its own host group."""
    _torch_distributed()
    import torch.distributed as dist

    from diffc.distributed import host_group

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    try:
        assert host_group() is None  # the default group, already gloo
        real = dist.get_backend
        monkeypatch.setattr(dist, "get_backend", lambda group=None: "nccl" if group is None else real(group))
        made = host_group()
        assert made is not None and real(made) == "gloo" and dist.get_world_size(made) == 1
        assert host_group() is made
    finally:
        dist.destroy_process_group()


def test_shared_gradients_are_summed_where_they_are_and_refused_elsewhere(tmp_path):
    """shared_zeros: a diffc Tensor whose memory torch sees (here host memory the OpenCL buffer
    uses): kernels' writes show in the torch view and the view's in the Tensor; "auto" takes the
    shared transport for such gradients; one rank keeps them and returns the gathered values
    (wait=False: through a handle); plain Tensors, mixed or ordered, are refused with a reason."""
    torch = _torch_distributed()
    import torch.distributed as dist

    from diffc.distributed import DataParallel, shared_view, shared_zeros

    g = shared_zeros((2, 3), np.float16)
    view = shared_view(g)
    if view is None:  # (a GPU whose memory torch cannot share here: cuda_shared.unavailable() says why)
        pytest.skip("no memory diffc shares with torch on this device")
    backend = "nccl" if view.is_cuda else "gloo"
    dist.init_process_group(backend, init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    try:
        diffc.synchronize()
        assert view.numel() == 6 and not view.any()
        g.copy_from_numpy(np.arange(6, dtype=np.float16).reshape(2, 3))
        diffc.synchronize()
        assert view.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # the same memory, no copy
        view[0] = 7.0
        if view.is_cuda:
            torch.cuda.synchronize()
        assert g.to_numpy()[0, 0] == 7.0
        assert shared_view(diffc.Tensor.zeros(3)) is None
        dp = DataParallel([g, g.detach()])
        assert dp.transport == "shared"
        got = dp.all_reduce(gather=[1.5, -2.0], wait=False)
        np.testing.assert_array_equal(got.result(), [[1.5, -2.0]])
        np.testing.assert_array_equal(dp.all_reduce(gather=diffc.Tensor.from_numpy(np.float32([3.25]))), [[3.25]])
        assert g.to_numpy().ravel().tolist() == [7.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        assert DataParallel([g, diffc.Tensor.zeros(2)]).transport != "shared"
        with pytest.raises(ValueError, match=r"gradient tensors \[1\] are not in shared memory.*shared_zeros"):
            DataParallel([g, diffc.Tensor.zeros(2)], transport="shared")
        with pytest.raises(ValueError, match="ordered=True is for the device and host transports"):
            DataParallel([g], transport="shared", ordered=True)
    finally:
        dist.destroy_process_group()


def test_auto_transport_takes_the_host_for_small_gradients_only(tmp_path, monkeypatch):
    """transport="auto" (the default): the host for at most 64 KiB of gradients (as float32),
    the group's device above that; NCCL is pretended, as above."""
    _torch_distributed()
    import torch.distributed as dist

    from diffc.distributed import HOST_TRANSPORT_BYTES, DataParallel

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    try:
        real = dist.get_backend
        monkeypatch.setattr(dist, "get_backend", lambda group=None: "nccl" if group is None else real(group))
        monkeypatch.setattr("torch.cuda.current_device", lambda: 0)
        small = [diffc.Tensor.zeros(148, np.float16), diffc.Tensor.zeros(HOST_TRANSPORT_BYTES // 4 - 148, np.float32)]
        assert DataParallel(small).transport == "host"
        large = [*small, diffc.Tensor.zeros(1, np.float16)]
        assert DataParallel(large).transport == "device"
        assert DataParallel(small, transport="device").transport == "device"
        # the collective: gathering (ordered) for small gradients on the host, unless asked otherwise
        assert DataParallel(small).ordered and not DataParallel(small, ordered=False).ordered
        assert not DataParallel(large).ordered and not DataParallel(small, transport="device").ordered
        assert DataParallel(large, ordered=True).ordered
    finally:
        dist.destroy_process_group()


def _half_adds(m, n: int, deterministic: bool) -> int:
    try:
        return accumulated_half_adds(m, "learnGradient", n, deterministic)
    except LookupError:
        pytest.skip("accumulate-gradients is off here: the bound counts its adds")


def _one_step_bound(p0: np.ndarray, xy: np.ndarray, deterministic: bool) -> tuple[np.ndarray, np.ndarray]:
    """(bound, movement): per parameter, how far one SGD step of two shards added on the host
    and one step over the whole batch, from the same parameters, may be apart; and the step's
    own size. Both runs add the same per-sample half gradients (computed identically), so only
    the accumulations differ: the whole batch's (rounding.half_accumulation_error), each
    shard's, plus the ranks' float32 sum and its rounding to half (two roundings at most 2^-11 each). The
    update p - g * lr in half (lr = 0.01h) rounds the product (2^-11 of lr |g|) and the result
    (half an ulp each side). p0: the parameters before the step, xy: its batch."""
    batch = len(xy)
    signed = kernel_sample_gradients(p0, xy)
    m = diffc.load_module(MLP / "mlp.slang")
    g = np.abs(signed)
    halves = [g[shard(batch, k, 2)] for k in range(2)]
    whole = half_accumulation_error(g, _half_adds(m, batch, deterministic))
    parts = sum(half_accumulation_error(h, _half_adds(m, len(h), deterministic)) for h in halves)
    total = g.sum(axis=0)
    ranks = parts + gamma(2, U16) * (total + parts)
    lr = float(np.float16(0.01))
    largest = np.abs(p0.astype(np.float64)) + lr * (total + whole + ranks) * (1 + U16)
    ulp = np.spacing(largest.astype(np.float16)).astype(np.float64)
    bound = lr * (whole + ranks) + U16 * lr * 2 * (total + whole + ranks) + ulp
    return bound, lr * np.abs(signed.sum(axis=0))


def _first_step(seed: int, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """The parameters before train(seed)'s first step, and that step's batch."""
    p0, _, rng = start(seed)
    return p0, next_batch(rng, batch)


def _assert_one_step_within_rounding(got: np.ndarray, want: np.ndarray, p0: np.ndarray, xy: np.ndarray,
                                     deterministic: bool):
    bound, movement = _one_step_bound(p0, xy, deterministic)
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    assert (diff <= bound).all(), (int(np.argmax(diff - bound)), float((diff / bound).max()))
    # the bound can catch a rank's gradient lost: for some parameters it is far below a step
    assert (bound < movement / 4).sum() >= 10, np.sort(movement / bound)[-10:]


def _torchrun(tmp_path, steps: int, batch: int, seed: int, *flags: str) -> tuple[np.ndarray, str]:
    """examples/mlp/train.py --distributed in two gloo processes; the final parameters and stdout."""
    out = tmp_path / "params.npy"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
           str(MLP / "train.py"), "--distributed", *flags, "--steps", str(steps), "--batch", str(batch),
           "--every", str(steps), "--seed", str(seed), "--save", str(out), "--no-progress"]
    run = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"),
                         cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "parameters identical on all 2 ranks" in run.stdout and "host round trip" in run.stdout
    return np.load(out), run.stdout


def test_two_gloo_processes_match_one_process_bit_for_bit_in_ordered_deterministic_mode(tmp_path):
    _torch_distributed()
    steps, batch, seed = 12, 64, 3
    distributed, _ = _torchrun(tmp_path, steps, batch, seed, "--deterministic", "--ordered")

    # One process computing the same two shards in turn and adding them in rank order: the same bits.
    emulated, _ = train(steps, batch, steps, seed, log=lambda line: None, shards=2, deterministic=True)
    assert distributed.dtype == np.float16
    np.testing.assert_array_equal(distributed.view(np.uint16), emulated.view(np.uint16))

    # One process over the whole batch, one step from the same parameters: the same step up to
    # the rounding of the gradient sums. (Over several steps the differences compound through
    # the training's own dynamics, which no rounding argument bounds.)
    one, _ = train(1, batch, 1, seed, log=lambda line: None, shards=2, deterministic=True)
    whole, _ = train(1, batch, 1, seed, log=lambda line: None, deterministic=True)
    _assert_one_step_within_rounding(one, whole, *_first_step(seed, batch), deterministic=True)


def _whole_batch_step(p: np.ndarray, xy: np.ndarray, deterministic: bool) -> np.ndarray:
    """One SGD step of the MLP from parameters p over the whole batch xy, in one process."""
    m = diffc.load_module(MLP / "mlp.slang")
    params = diffc.Tensor.from_numpy(p)
    grads = diffc.Tensor.zeros(p.size, np.float16)
    batch_gradient(m, network_of(params, grads), grads, xy, deterministic=deterministic)
    optimizer_step(m, params, grads, "sgd", Adam())()
    return params.to_numpy()


def test_every_step_of_a_two_rank_run_is_a_whole_batch_step_within_rounding():
    """Over N steps: the two-process run is bit for bit one process computing the two shards in
    turn (the test above), and each of that run's steps, from its own parameters, is one
    whole-batch step from the same parameters up to the rounding of the gradient sums. (The
    end points of N steps cannot be compared by a rounding bound: the training's own dynamics
    compound any difference.)"""
    steps, batch, seed = 8, 64, 5
    record: list[tuple[np.ndarray, np.ndarray]] = []
    train(steps, batch, steps, seed, log=lambda line: None, shards=2, deterministic=True,
          on_step=lambda step, xy, params, moments: record.append((xy, params)))
    before = start(seed)[0]
    assert len(record) == steps
    for xy, after in record:
        whole = _whole_batch_step(before, xy, deterministic=True)
        _assert_one_step_within_rounding(after, whole, before, xy, deterministic=True)
        before = after


def test_two_gloo_processes_by_default_match_one_process_within_rounding(tmp_path):
    """Atomic accumulation and DataParallel's default collective (an odd batch: the shards differ in size):
    one step from the same parameters, within the rounding of the gradient sums."""
    _torch_distributed()
    batch, seed = 63, 4
    distributed, _ = _torchrun(tmp_path, 1, batch, seed)
    whole, _ = train(1, batch, 1, seed, log=lambda line: None)
    _assert_one_step_within_rounding(distributed, whole, *_first_step(seed, batch), deterministic=False)


def test_bench_wide_model_is_the_tutorial_network_with_four_layers():
    sys.path.insert(0, str(MLP.parent.parent / "bench"))
    try:
        from bench_distributed import MODELS, wide_source
    finally:
        sys.path.pop(0)
    text = wide_source(MODELS["wide"])
    assert "public FeedForwardLayer<4, 64> layer1;" in text and "public FeedForwardLayer<64, 4> layer4;" in text
    assert "return layer4.eval(layer3.eval(layer2.eval(layer1.eval(input))));" in text
    assert "FeedForwardLayer<16, 4>" not in text
