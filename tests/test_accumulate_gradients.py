"""accumulate-gradients on PoCL (passes/accumulate_gradients.py, runtime/accumulate.py): an entry
point's gradient adds, run through a grid-stride loop with private sums and one transposed
reduction per group, give the sums a float64 numpy reference gives, whatever the count (last
group partly inactive, fewer or more virtual groups than launched ones); deterministic mode
gives the same bits run after run."""

from __future__ import annotations

import numpy as np
import pytest

import diffc
from diffc import kernel_settings
from diffc.runtime.device import device
from diffc.runtime.dispatch import entry_program
from diffc.runtime.module import load_module_from_string
from rounding import accumulated_half_adds, assert_sum_within, half_accumulation_error

# Four float sums (three in a loop of constant bound, one in a branch only some work-items take)
# and a half sum in a callee through a pointer, behind `if (tid >= count) return;`.
LEARN = """
RWStructuredBuffer<Atomic<float>> sums;

void addHalf(half* p, half v)
{
    half original;
    InterlockedAddF16Emulated(p, v, original);
}

[shader("compute")]
[numthreads(64, 1, 1)]
void learn(uint32_t tid : SV_DispatchThreadID, uniform float* values, uniform half* halfSum, uniform uint32_t count)
{
    if (tid >= count) return;
    float v = values[tid];
    for (int i = 0; i < 3; i++)
        sums[i] += v * float(i + 1);
    if (v > 0.5)
        sums[3] += v * v;
    addHalf(halfSum + 1, half(v));
}
"""


@pytest.fixture(scope="module")
def learn():
    return load_module_from_string(LEARN, "accumulate.slang")


def reference(v: np.ndarray) -> tuple[np.ndarray, float]:
    v = v.astype(np.float64)
    return np.array([v.sum(), 2 * v.sum(), 3 * v.sum(), (v * v)[v > 0.5].sum()]), v.astype(np.float16).astype(np.float64).sum()


def assert_float_sums_within_rounding(sums: np.ndarray, v: np.ndarray, copies: int = 1) -> None:
    """LEARN's four float sums (each term one product, one rounding), `copies` times over."""
    v = np.tile(v.astype(np.float64), copies)
    want, _ = reference(v)
    for got, exact, terms in zip(sums, want, [v, 2 * v, 3 * v, (v * v)[v > 0.5]]):
        assert_sum_within(got, exact, terms, roundings_per_term=1)


def half_sum_bound(h: np.ndarray, half_adds: int) -> float:
    """LEARN's half sum of h (the values rounded to half, exact in float32)."""
    return float(half_accumulation_error(h, half_adds))


def half_adds(m, n: int, deterministic: bool) -> int:
    return accumulated_half_adds(m, "learn", n, deterministic)


def run(m, values: np.ndarray, **kw) -> tuple[np.ndarray, np.ndarray]:
    sums = diffc.Tensor.zeros(4, np.float32)
    half_sum = diffc.Tensor.zeros(2, np.float16)
    n = len(values)
    m.learn.dispatch(thread_count=n, sums=sums, values=diffc.Tensor.from_numpy(values.astype(np.float32)),
                     halfSum=half_sum, count=n, **kw)
    return sums.to_numpy(), half_sum.to_numpy()


def test_the_pass_rewrites_the_entry_point(learn):
    prog = entry_program(learn)
    acc = prog.accumulated["learn"]
    # the group size is the device's choice (one work-item on a CPU: no barrier, so PoCL keeps
    # the private sums in registers), whatever the entry point's 64
    assert acc.slots == 5 and acc.group == kernel_settings.work_group(device().cl_device) and acc.entry_group == 64
    assert "learn__accum(" in prog.source and "learn__accum_finish(" in prog.source


def test_group_size_is_chosen_by_device_type(monkeypatch):
    """One work-item per group on CPUs, 64 (or the device's most) on GPUs, for the accumulated
    kernel and (1 / 256) its finish kernel; DIFFC_ACCUM_WORK_GROUP and DIFFC_ACCUM_FINISH_GROUP
    override them."""
    import pyopencl as cl

    class Device:
        def __init__(self, kind, most):
            self.type, self.max_work_group_size, self.local_mem_size = kind, most, 65536

    cpu, gpu, small_gpu = Device(cl.device_type.CPU, 4096), Device(cl.device_type.GPU, 1024), Device(cl.device_type.GPU, 48)
    assert [kernel_settings.work_group(d) for d in (cpu, gpu, small_gpu)] == [1, 64, 48]
    # the finish kernel's groups: a power of two, one work-item on CPUs
    assert [kernel_settings.finish_group(d) for d in (cpu, gpu, small_gpu)] == [1, 256, 32]
    # sizes asked for (DIFFC_ACCUM_WORK_GROUP=8, DIFFC_ACCUM_FINISH_GROUP=16)
    assert [kernel_settings.work_group(d, 8) for d in (cpu, gpu, Device(cl.device_type.GPU, 4))] == [8, 8, 4]
    assert [kernel_settings.finish_group(d, 16) for d in (cpu, gpu, Device(cl.device_type.GPU, 4))] == [16, 16, 4]
    monkeypatch.setenv("DIFFC_ACCUM_WORK_GROUP", "8")
    monkeypatch.setenv("DIFFC_ACCUM_FINISH_GROUP", "16")
    s = kernel_settings.for_device(gpu)
    assert (s.accumulate_work_group, s.accumulate_finish_group) == (8, 16)


@pytest.mark.parametrize("count", [1, 63, 64, 65, 1000, 20000])
@pytest.mark.parametrize("deterministic", [False, True])
def test_sums_match_float64(learn, count, deterministic):
    rng = np.random.default_rng(count)
    values = rng.uniform(0, 1, count).astype(np.float32)
    sums, half_sum = run(learn, values, deterministic=deterministic)
    _, want_half = reference(values)
    assert_float_sums_within_rounding(sums, values)
    h = values.astype(np.float16).astype(np.float64)
    assert abs(float(half_sum[1]) - want_half) <= half_sum_bound(h, half_adds(learn, count, deterministic)), (
        half_sum, want_half)
    assert half_sum[0] == 0


def test_deterministic_mode_gives_the_same_bits(learn):
    rng = np.random.default_rng(7)
    # magnitudes over five decades, so that a different order of additions changes the bits
    values = (rng.uniform(0, 1, 50000) * 10.0 ** rng.integers(-5, 0, 50000)).astype(np.float32)
    first, first_half = run(learn, values, deterministic=True)
    for _ in range(3):
        again, again_half = run(learn, values, deterministic=True)
        assert first.tobytes() == again.tobytes() and first_half.tobytes() == again_half.tobytes()
    _, want_half = reference(values)
    assert_float_sums_within_rounding(first, values)
    assert abs(float(first_half[1]) - want_half) <= half_sum_bound(values.astype(np.float16).astype(np.float64), 1)


def test_multi_dimensional_dispatch_runs_the_original_kernel(learn):
    # the accumulated kernel is 1-D; a (x, y, z) dispatch with y > 1 takes the kernel as written,
    # where each (x, y) work-item adds once: y copies of every sum
    values = np.linspace(0, 1, 100).astype(np.float32)
    sums = diffc.Tensor.zeros(4, np.float32)
    half_sum = diffc.Tensor.zeros(2, np.float16)
    learn.learn.dispatch(thread_count=(100, 2, 1), sums=sums, values=diffc.Tensor.from_numpy(values),
                         halfSum=half_sum, count=100)
    assert_float_sums_within_rounding(sums.to_numpy(), values, copies=2)


def test_report_says_why_a_kernel_is_left_alone(tmp_path, capsys):
    from diffc.cli import main

    src = tmp_path / "hist.slang"
    src.write_text("""
RWStructuredBuffer<Atomic<float>> bins;

[shader("compute")]
[numthreads(64, 1, 1)]
void hist(uint32_t tid : SV_DispatchThreadID, uniform float* values, uniform uint32_t count)
{
    if (tid >= count) return;
    float v = values[tid];
    bins[int(v)] += v;
}
""")
    assert main(["compile", "--report", str(src)]) == 0
    out = capsys.readouterr().out
    assert "@hist: left to reduce-atomics: an add whose address depends on the work-item" in out
    src.write_text(LEARN)
    assert main(["compile", "--report", str(src)]) == 0
    assert "@learn: rewritten: 5 gradient slots" in capsys.readouterr().out


# An add inside a loop that carries a value (unrolled with the value passed from trip to trip),
# and one after it that uses the loop's result.
CARRIED = """
RWStructuredBuffer<Atomic<float>> sums;

[shader("compute")]
[numthreads(32, 1, 1)]
void carried(uint32_t tid : SV_DispatchThreadID, uniform float* values, uniform uint32_t count)
{
    if (tid >= count) return;
    float v = values[tid];
    float running = 0.0;
    for (int i = 0; i < 3; i++)
    {
        running += v;
        sums[i] += running;
    }
    sums[3] += running * running;
}
"""


def test_adds_in_a_loop_carrying_values():
    m = load_module_from_string(CARRIED, "carried.slang")
    assert entry_program(m).accumulated["carried"].slots == 4
    values = np.random.default_rng(3).uniform(-1, 1, 777).astype(np.float32)
    sums = diffc.Tensor.zeros(4, np.float32)
    m.carried.dispatch(thread_count=len(values), sums=sums, values=diffc.Tensor.from_numpy(values), count=len(values))
    v = values.astype(np.float64)
    # the terms: v, v + v (exact), 2v + v (one rounding), (3v)^2 (two): at most three roundings
    for got, exact in zip(sums.to_numpy(), [v, 2 * v, 3 * v, 9 * v * v]):
        assert_sum_within(got, exact.sum(), exact, roundings_per_term=3)


@pytest.mark.parametrize("deterministic", [False, True])
def test_accumulated_kernels_are_bounds_checked_too(learn, deterministic):
    """The accumulated kernels take the entry point's arguments by name, bounds-check's lengths
    and status included: reading past a too-short `values` is a BoundsError, not a wrong sum."""
    from diffc.runtime.bounds import BoundsError

    if not entry_program(learn).accumulated:
        pytest.skip("accumulate-gradients is off here")
    values = np.linspace(0.0, 1.0, 100).astype(np.float32)
    with pytest.raises(BoundsError, match="values"):
        learn.learn.dispatch(thread_count=100, sums=diffc.Tensor.zeros(4, np.float32),
                             values=diffc.Tensor.from_numpy(values[:10]), halfSum=diffc.Tensor.zeros(2, np.float16),
                             count=100, deterministic=deterministic)
        diffc.synchronize()  # the status is read at the next synchronizing point
    sums, _ = run(learn, values, deterministic=deterministic)  # and the right sums when in bounds
    assert_float_sums_within_rounding(sums, values)


# Forty slots from a loop, in groups of 256 work-items: the accumulated kernel's own groups of 16
# take each group's work-items in turns (grid-stride), reduce in chunks (local memory for about
# 12 rows of 17 floats) and each of its work-items sums up to one row per pass.
MANY = """
RWStructuredBuffer<Atomic<float>> sums;

[shader("compute")]
[numthreads(256, 1, 1)]
void many(uint32_t tid : SV_DispatchThreadID, uniform float* values, uniform uint32_t count)
{
    if (tid >= count) return;
    float v = values[tid];
    for (int i = 0; i < 40; i++)
        sums[i] += v * float(i % 7 - 3) + float(tid % 5);
}
"""


def assert_many_sums_within_rounding(sums: np.ndarray, values: np.ndarray) -> None:
    """MANY's 40 sums; each term v * c + tid % 5 rounds twice (the product, the add)."""
    v, tid = values.astype(np.float64), np.arange(len(values))
    for i, got in enumerate(sums):
        c = i % 7 - 3
        assert_sum_within(got, (v * c + tid % 5).sum(), np.abs(v * c) + tid % 5, roundings_per_term=2)


# (local_bytes, local_sums): chunks of private sums; one chunk; sums kept in local memory
@pytest.mark.parametrize("local", [(800, False), (0, False), (0, True)])
@pytest.mark.parametrize("deterministic", [False, True])
def test_small_work_groups_chunks_and_several_rows_per_work_item(monkeypatch, deterministic, local):
    from diffc.runtime.device import SETTINGS

    monkeypatch.setitem(SETTINGS, "accumulate_work_group", 16)
    if local[0]:  # (0: the device's local memory)
        monkeypatch.setitem(SETTINGS, "accumulate_local_bytes", local[0])
    monkeypatch.setitem(SETTINGS, "accumulate_local_sums", local[1])
    m = load_module_from_string(MANY, "many.slang")
    acc = entry_program(m).accumulated["many"]
    assert (acc.slots, acc.group, acc.entry_group) == (40, 16, 256)
    for n in (1, 255, 257, 5000):
        values = np.random.default_rng(n).uniform(-1, 1, n).astype(np.float32)
        sums = diffc.Tensor.zeros(40, np.float32)
        m.many.dispatch(thread_count=n, sums=sums, values=diffc.Tensor.from_numpy(values), count=n,
                        deterministic=deterministic)
        assert_many_sums_within_rounding(sums.to_numpy(), values)


def test_reduce_atomics_alone_sums_a_loop_of_adds_behind_a_guard(monkeypatch):
    """Without accumulate-gradients, reduce-atomics predicates the loop's ops on the guard
    (it had failed on the op after which it inserted)."""
    from diffc.runtime.device import SETTINGS

    monkeypatch.setitem(SETTINGS, "accumulate", False)
    m = load_module_from_string(MANY, "many.slang")
    assert not entry_program(m).accumulated
    n = 700
    values = np.random.default_rng(n).uniform(-1, 1, n).astype(np.float32)
    sums = diffc.Tensor.zeros(40, np.float32)
    m.many.dispatch(thread_count=n, sums=sums, values=diffc.Tensor.from_numpy(values), count=n)
    assert_many_sums_within_rounding(sums.to_numpy(), values)


# Gradient sums next to a batch's largest value (an atomic max on one address, as the MLP's loss
# buffer) and a count of the samples past a threshold (an integer add): each becomes a private
# slot too, combined per group and issued once per group, in both modes.
EXACT = """
RWStructuredBuffer<Atomic<float>> sums;

[shader("compute")]
[numthreads(128, 1, 1)]
void stats(uint32_t tid : SV_DispatchThreadID, uniform float* values, uniform Atomic<uint32_t>* largest,
           uniform Atomic<int>* counts, uniform uint32_t count)
{
    if (tid >= count) return;
    float v = values[tid];
    sums[0] += v;
    largest.max(bit_cast<uint32_t>(v * v));
    if (v > 0.25)
        counts[1] += 1;
}
"""


@pytest.mark.parametrize("local_sums", [False, True])
@pytest.mark.parametrize("deterministic", [False, True])
def test_max_and_counter_become_private_slots(capsys, tmp_path, monkeypatch, deterministic, local_sums):
    from diffc.runtime.device import SETTINGS

    monkeypatch.setitem(SETTINGS, "accumulate_local_sums", local_sums)
    from diffc.cli import main

    src = tmp_path / "stats.slang"
    src.write_text(EXACT)
    assert main(["compile", "--report", str(src)]) == 0
    assert "@stats: rewritten: 1 gradient slots and 2 integer (addi, maxu)" in capsys.readouterr().out
    m = load_module_from_string(EXACT, "stats.slang")
    for n in (1, 127, 129, 30000):
        # multiples of 2^-8 in [-1, 1]: every partial sum of at most 2^16 of them is a multiple
        # of 2^-8 below 2^16 in size, exact in float32, so the sum is exact in any order
        values = (np.random.default_rng(n).integers(-256, 257, n) / 256).astype(np.float32)
        sums, largest, counts = (diffc.Tensor.zeros(1, np.float32), diffc.Tensor.zeros(1, np.uint32),
                                 diffc.Tensor.from_numpy(np.array([5, 7], np.int32)))
        m.stats.dispatch(thread_count=n, sums=sums, values=diffc.Tensor.from_numpy(values), largest=largest,
                         counts=counts, count=n, deterministic=deterministic)
        assert largest.to_numpy()[0] == (values * values).max().view(np.uint32)
        assert list(counts.to_numpy()) == [5, 7 + int((values > 0.25).sum())]
        assert sums.to_numpy()[0] == values.astype(np.float64).sum()
