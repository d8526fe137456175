"""bounds-check on PoCL: a dispatch or `diffc run` that would read or write outside a buffer
raises BoundsError (kernel, buffer, index, length, Slang line) instead of corrupting memory;
what is in bounds still runs and gives the right numbers."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

import diffc
from diffc.runtime.bounds import BoundsError
from diffc.runtime.module import load_module_from_string

os.environ.setdefault("DIFFC_DEVICE", "cpu")
ROOT = Path(__file__).resolve().parents[1]

SRC = """
float twice(float* src, int i) {
    return src[i] * 2.0;
}

[shader("compute")]
[numthreads(64, 1, 1)]
void computeMain(uint3 tid: SV_DispatchThreadID, float* buf, float* src, int shift) {
    buf[tid.x] = twice(src, int(tid.x) + shift);
}
"""


def _t(a):
    return diffc.Tensor.from_numpy(np.asarray(a, np.float32))


def test_in_bounds_runs_and_is_right():
    m = load_module_from_string(SRC, "b.slang")
    src = np.arange(128, dtype=np.float32)
    buf = _t(np.zeros(64))
    m.computeMain.dispatch(thread_count=64, buf=buf, src=_t(src), shift=3)
    np.testing.assert_array_equal(buf.to_numpy(), 2 * src[3:67])


def test_thousand_threads_over_ten_elements_is_an_error_not_corruption():
    m = load_module_from_string(SRC, "b.slang")
    buf = _t(np.full(10, -1.0))
    src = np.arange(2000, dtype=np.float32)
    m.computeMain.dispatch(thread_count=1000, buf=buf, src=_t(src), shift=0)  # no wait for the status
    with pytest.raises(BoundsError) as e:
        buf.to_numpy()  # the next read of values on the host raises first
    err = e.value
    assert (err.kernel, err.buffer, err.length) == ("computeMain", "buf", 10)
    assert err.index == 1023  # 1000 rounded up to whole groups of 64: the last work-item
    assert "b.slang:9:5" in str(err) and "buf[tid.x]" in str(err) and "outside its 10 elements" in str(err)
    # the stated state: every in-bounds store ran, the others were dropped
    np.testing.assert_array_equal(buf.to_numpy(), 2 * src[:10])


def test_read_past_the_end_in_a_callee_names_it():
    m = load_module_from_string(SRC, "b.slang")
    with pytest.raises(BoundsError) as e:
        m.computeMain.dispatch(thread_count=64, buf=_t(np.zeros(64)), src=_t(np.zeros(40)), shift=0)
        diffc.synchronize()
    assert (e.value.buffer, e.value.index, e.value.length) == ("src", 63, 40)
    assert "in function 'twice'" in str(e.value) and "b.slang:3:12" in str(e.value)


def test_negative_index_and_offsets():
    m = load_module_from_string(SRC, "b.slang")
    with pytest.raises(BoundsError, match="a negative index"):
        m.computeMain.dispatch(thread_count=64, buf=_t(np.zeros(64)), src=_t(np.zeros(100)), shift=-5)
        diffc.synchronize()
    # a pointer into the middle of a tensor: index = offset + i, against the whole tensor
    big = _t(np.zeros(100))
    with pytest.raises(BoundsError) as e:
        m.computeMain.dispatch(thread_count=64, buf=big.at(50), src=_t(np.zeros(64)), shift=0)
        big.to_numpy()
    assert (e.value.buffer, e.value.index, e.value.length) == ("buf", 113, 100)


def test_the_error_comes_at_the_next_read_of_any_tensor_once():
    m = load_module_from_string(SRC, "b.slang")
    bad, other = _t(np.zeros(10)), _t(np.arange(3))
    m.computeMain.dispatch(thread_count=64, buf=bad, src=_t(np.zeros(64)), shift=0)
    m.computeMain.dispatch(thread_count=64, buf=_t(np.zeros(64)), src=_t(np.zeros(64)), shift=0)  # a fine one
    assert "values withheld" in repr(bad)  # a repr shows no values and leaves the error pending
    with pytest.raises(BoundsError, match="buf"):
        other.to_numpy()  # not a tensor of the launch: still no host read before the error
    np.testing.assert_array_equal(other.to_numpy(), np.arange(3))  # raised once
    diffc.synchronize()


def test_blocking_reads_on_request(monkeypatch):
    from diffc.runtime import pending

    monkeypatch.setattr(pending, "LAZY", False)
    m = load_module_from_string(SRC, "b.slang")
    with pytest.raises(BoundsError):
        m.computeMain.dispatch(thread_count=64, buf=_t(np.zeros(10)), src=_t(np.zeros(64)), shift=0)


def test_many_clean_launches_do_not_pile_up():
    from diffc.runtime import pending

    m = load_module_from_string(SRC, "b.slang")
    buf, src = _t(np.zeros(64)), _t(np.zeros(64))
    for _ in range(pending.MAX_PENDING + 40):
        m.computeMain.dispatch(thread_count=64, buf=buf, src=src, shift=0)
    assert len(pending.AT_SYNC.reads.items) <= pending.MAX_PENDING + 1
    diffc.synchronize()
    assert not pending.AT_SYNC.reads.items


def test_disabled_by_environment_builds_no_checks(monkeypatch):
    from diffc.runtime.dispatch import entry_program

    for flag, want in (("0", False), ("1", True)):
        monkeypatch.setenv("DIFFC_BOUNDS_CHECK", flag)
        assert ("diffc_bounds" in entry_program(load_module_from_string(SRC, "b.slang")).source) == want, flag


RUN = """//TEST_INPUT: set xs = ubuffer(data=[1.0 2.0], stride=4)
//TEST_INPUT: set out = out ubuffer(data=[0 0 0 0], stride=4)
RWStructuredBuffer<float> xs;
RWStructuredBuffer<float> out;

[shader("compute")]
[numthreads(4, 1, 1)]
void computeMain(uint3 tid: SV_DispatchThreadID) {
    out[tid.x] = xs[tid.x] + 1.0;
}
"""


def test_diffc_run_short_test_input(tmp_path, capfd, monkeypatch):
    """`diffc run` (its main, in this process) of a kernel that reads past a TEST_INPUT buffer:
    exit 1 with the located check; with the buffer long enough, the values."""
    from diffc import cli

    monkeypatch.chdir(ROOT)
    f = tmp_path / "short.slang"
    f.write_text(RUN)
    assert cli.main(["run", str(f), "--device", "cpu"]) == 1
    err = capfd.readouterr().err
    assert "short.slang:9:18: error[E0011]" in err
    assert "buffer 'xs' at index 3, outside its 2 elements" in err
    f.write_text(RUN.replace("data=[1.0 2.0]", "data=[1.0 2.0 3.0 4.0]"))
    assert cli.main(["run", str(f), "--device", "cpu"]) == 0, capfd.readouterr().err
    assert [float(v) for v in capfd.readouterr().out.split()[2:]] == [2.0, 3.0, 4.0, 5.0]


def test_a_launch_proven_in_bounds_runs_the_variant_without_its_checks():
    from diffc.runtime.dispatch import entry_program

    m = load_module_from_string(SRC, "b.slang")
    prog = entry_program(m)
    kernel = prog.kernels["computeMain"]
    assert [(p.buffer, p.offset, p.dim) for p in kernel.proofs] == [("buf", "buf_off", 0)]
    # the kernel and its variant call one body, with the flag off and on; under the flag the
    # body's own store is unguarded, the callee's load (an index it cannot prove) is not
    def text_of(name):  # a function's definition (not its prototype), less its first line
        at = re.search(rf"^.* {name}\(.*\) {{$", prog.source, re.M).end()
        return prog.source[at: prog.source.index("\n}\n", at)]

    assert "computeMain__body(buf, buf_off, src, src_off, shift, false," in text_of(kernel.c_name)
    assert "computeMain__body(buf, buf_off, src, src_off, shift, true," in text_of(kernel.inbounds)
    body = text_of("computeMain__body")
    assert "if (diffc_inbounds | ((ulong)v_3 < (ulong)diffc_len_buf)) {" in body
    assert "if ((ulong)v < (ulong)diffc_len_src) {" in text_of("twice")
    big = _t(np.zeros(100))
    src = np.arange(128, dtype=np.float32)
    m.computeMain.dispatch(thread_count=64, buf=big.at(36), src=_t(src), shift=1)  # 36 + 64 <= 100
    assert prog.plans["computeMain"][0].launches[0][0].function_name == kernel.inbounds
    np.testing.assert_array_equal(big.to_numpy()[36:], 2 * src[1:65])
    # proven for buf, not for src: the callee's check still reports
    with pytest.raises(BoundsError, match="src"):
        m.computeMain.dispatch(thread_count=64, buf=_t(np.zeros(64)), src=_t(np.zeros(40)), shift=0)
        diffc.synchronize()


GUARDED = """
[shader("compute")]
[numthreads(64, 1, 1)]
void fill(uint3 tid: SV_DispatchThreadID, float* buf, uint n) {
    if (tid.x >= n) return;
    buf[tid.x] = float(tid.x) + 0.5;
}
"""


def test_a_count_guard_proves_a_rounded_up_launch():
    from diffc.runtime.dispatch import entry_program

    m = load_module_from_string(GUARDED, "g.slang")
    prog = entry_program(m)
    kernel = prog.kernels["fill"]
    assert [(p.buffer, p.count) for p in kernel.proofs] == [("buf", "n")]
    buf = _t(np.full(10, -1.0))
    m.fill.dispatch(thread_count=10, buf=buf, n=10)  # 64 work-items, 10 of them past the guard
    assert prog.plans["fill"][0].launches[0][0].function_name == kernel.inbounds
    np.testing.assert_array_equal(buf.to_numpy(), np.arange(10) + 0.5)
    with pytest.raises(BoundsError, match="index 10"):  # n past the buffer: the checked kernel
        m.fill.dispatch(thread_count=11, buf=buf, n=11)
        buf.to_numpy()
    assert prog.plans["fill"][0].launches[0][0].function_name == kernel.c_name  # the checked kernel ran


STRIDED = """
[shader("compute")]
[numthreads(4, 1, 1)]
void spread(uint3 tid: SV_DispatchThreadID, float* xyz, float* src) {
    xyz[3 * tid.x] = src[tid.x];
    xyz[3 * tid.x + 1] = src[tid.x] + 1.0;
    xyz[3 * tid.x + 2] = src[tid.x] + 2.0;
}
"""


def test_strided_thread_indices_are_proven_at_launch():
    from diffc.runtime.dispatch import entry_program

    m = load_module_from_string(STRIDED, "s.slang")
    prog = entry_program(m)
    kernel = prog.kernels["spread"]
    # one proof per buffer and stride, with the largest extra
    assert {(p.buffer, p.scale, p.extra) for p in kernel.proofs} == {("src", 1, 0), ("xyz", 3, 2)}
    src = np.arange(8, dtype=np.float32)
    xyz = _t(np.zeros(24))
    m.spread.dispatch(thread_count=8, xyz=xyz, src=_t(src))
    assert prog.plans["spread"][0].launches[0][0].function_name == kernel.inbounds  # 3 x 7 + 2 < 24: no checks
    np.testing.assert_array_equal(xyz.to_numpy(), (src[:, None] + np.arange(3)).ravel())
    short = _t(np.zeros(23))  # the last work-item's third store is one past the end
    with pytest.raises(BoundsError, match="index 23"):
        m.spread.dispatch(thread_count=8, xyz=short, src=_t(src))
        short.to_numpy()
    np.testing.assert_array_equal(short.to_numpy(), (src[:, None] + np.arange(3)).ravel()[:23])
