"""A `while` past its [MaxIters] in a backward pass on a device (PoCL) raises LoopOverrunError
naming the loop's source line and the iterations reached, through calls over tensors, dispatch
and `diffc run`; grow_tape / --grow-tape reruns with a larger tape and gets the right numbers
(float64 central differences of the primal, computed here in Python)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

import diffc
from diffc.runtime.errors import CallError
from diffc.runtime.module import load_module_from_string
from diffc.runtime.status import LoopOverrunError

os.environ.setdefault("DIFFC_DEVICE", "cpu")
ROOT = Path(__file__).resolve().parents[1]

GROW = """
[Differentiable]
float grow(float x, float s) {
    float a = x;
    [MaxIters(4)]
    while (a < 100.0) {
        a = a * s;
    }
    return a;
}
"""
LOOP_LINE = 5  # the line of [MaxIters(4)] in GROW


def grow(x: float, s: float) -> float:
    a, k = x, 0
    while a < 100.0:
        a, k = a * s, k + 1
    return a


def iterations(x: float, s: float) -> int:
    a, k = x, 0
    while a < 100.0:
        a, k = a * s, k + 1
    return k


def fd(x: float, s: float, h: float = 1e-6) -> tuple[float, float]:
    return ((grow(x + h, s) - grow(x - h, s)) / (2 * h), (grow(x, s + h) - grow(x, s - h)) / (2 * h))


def _bwds(m, xs, ss):
    x = diffc.Tensor.from_numpy(np.array(xs, np.float32)).with_grads(zero=True)
    s = diffc.Tensor.from_numpy(np.array(ss, np.float32)).with_grads(zero=True)
    r = diffc.Tensor.from_numpy(np.zeros(len(xs), np.float32)).with_grads()
    r.grad.copy_from_numpy(np.ones(len(xs), np.float32))
    return x, s, r


XS, SS = [30.0, 1.5, 0.5], [2.0, 2.0, 2.0]  # 2, 7 and 8 iterations


def test_within_bound_no_error_and_right_numbers():
    m = load_module_from_string(GROW, "grow.slang")
    x, s, r = _bwds(m, XS[:1], SS[:1])
    assert iterations(XS[0], SS[0]) <= 4
    m.grow.bwds(x=x, s=s, _result=r)
    assert [x.grad.to_numpy()[0], s.grad.to_numpy()[0]] == pytest.approx(fd(XS[0], SS[0]), rel=1e-4)


def test_bwds_overrun_names_the_loop_and_the_count():
    m = load_module_from_string(GROW, "grow.slang")
    x, s, r = _bwds(m, XS, SS)
    with pytest.raises(LoopOverrunError) as e:
        m.grow.bwds(x=x, s=s, _result=r)
    # derivative code stops the loop one iteration past its bound (8 would run): 5, and says so
    assert max(iterations(a, b) for a, b in zip(XS, SS)) == 8
    assert e.value.count == 5 and e.value.max_iters == 4
    assert f"grow.slang:{LOOP_LINE}:" in str(e.value) and "stopped it after 5 iterations" in str(e.value)
    assert "[MaxIters(4)]" in str(e.value)
    g = x.grad.to_numpy()  # the stated state: the overlong elements NaN, the others right
    assert g[0] == pytest.approx(fd(XS[0], SS[0])[0], rel=1e-4) and np.isnan(g[1:]).all()


def test_grow_tape_reruns_with_right_numbers():
    m = load_module_from_string(GROW, "grow.slang")
    m.grow_tape = True
    x, s, r = _bwds(m, XS, SS)
    m.grow.bwds(x=x, s=s, _result=r)
    for i, (a, b) in enumerate(zip(XS, SS)):
        assert [x.grad.to_numpy()[i], s.grad.to_numpy()[i]] == pytest.approx(fd(a, b), rel=1e-4), i


ENTRY = GROW + """
[shader("compute")]
[numthreads(4, 1, 1)]
void computeMain(uint3 tid: SV_DispatchThreadID, float* xs, float* out, int n) {
    if (tid.x >= n) return;
    var p = diffPair(xs[tid.x], 0.0);
    var q = diffPair(2.0, 0.0);
    bwd_diff(grow)(p, q, 1.0);
    out[tid.x] = p.d;
}
"""


def test_dispatch_overrun_raises():
    m = load_module_from_string(ENTRY, "entry.slang")
    xs = diffc.Tensor.from_numpy(np.array(XS, np.float32))
    out = diffc.Tensor.from_numpy(np.zeros(3, np.float32))
    m.computeMain.dispatch(thread_count=1, xs=xs, out=out, n=1)  # 2 iterations: fine
    assert out.to_numpy()[0] == pytest.approx(fd(XS[0], 2.0)[0], rel=1e-4)
    with pytest.raises(LoopOverrunError, match=rf"entry.slang:{LOOP_LINE}:.*stopped it after 5 iterations"):
        m.computeMain.dispatch(thread_count=3, xs=xs, out=out, n=3)
        out.to_numpy()
    with pytest.raises(CallError, match="unknown argument 'diffc_status_0'"):
        m.computeMain.dispatch(thread_count=3, xs=xs, out=out, n=3, diffc_status_0=out)


RUN = """//TEST_INPUT: set xs = ubuffer(data=[30.0 1.5 0.5 2.0], stride=4)
//TEST_INPUT: set out = out ubuffer(data=[0 0 0 0], stride=4)
RWStructuredBuffer<float> xs;
RWStructuredBuffer<float> out;
""" + GROW + """
[shader("compute")]
[numthreads(4, 1, 1)]
void computeMain(uint3 tid: SV_DispatchThreadID) {
    var p = diffPair(xs[tid.x], 0.0);
    var q = diffPair(2.0, 0.0);
    bwd_diff(grow)(p, q, 1.0);
    out[tid.x] = p.d;
}
"""


def test_diffc_run_overrun_and_grow_tape(tmp_path, diffc_cli):
    f = tmp_path / "run.slang"
    f.write_text(RUN)
    cmd = ["run", str(f), "--device", "cpu"]
    p = diffc_cli(*cmd, cwd=ROOT)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert f"run.slang:{LOOP_LINE + 4}:" in p.stderr and "stopped it after 5 iterations" in p.stderr
    p = diffc_cli(*cmd, "--grow-tape", cwd=ROOT)
    assert p.returncode == 0, p.stderr
    got = [float(v) for v in p.stdout.split()[2:]]
    assert got == pytest.approx([fd(x, 2.0)[0] for x in (30.0, 1.5, 0.5, 2.0)], rel=1e-4)


# A counted loop whose count is known only at run time: [MaxIters] bounds its tape as it bounds a
# while's. A run past it must not write past the tape: the same NaN gradient and the same error.
COUNTED = """
[Differentiable]
float powsum(float x, int n) {
    float a = x;
    [MaxIters(4)]
    for (int i = 0; i < n; i++) {
        a = a * x + 0.5;
    }
    return a;
}
"""
COUNTED_LINE = 5


def powsum(x: float, n: int) -> float:
    a = x
    for _ in range(n):
        a = a * x + 0.5
    return a


def _counted(m, xs, ns):
    x = diffc.Tensor.from_numpy(np.array(xs, np.float32)).with_grads(zero=True)
    n = diffc.Tensor.from_numpy(np.array(ns, np.int32))
    r = diffc.Tensor.from_numpy(np.zeros(len(xs), np.float32)).with_grads()
    r.grad.copy_from_numpy(np.ones(len(xs), np.float32))
    return x, n, r


def fd_counted(x: float, n: int, h: float = 1e-6) -> float:
    return (powsum(x + h, n) - powsum(x - h, n)) / (2 * h)


def test_counted_loop_overrun_is_nan_and_named_never_out_of_the_tape():
    m = load_module_from_string(COUNTED, "counted.slang")
    xs, ns = [0.7, 0.9, 0.8], [3, 4, 7]
    x, n, r = _counted(m, xs, ns)
    with pytest.raises(LoopOverrunError) as e:
        m.powsum.bwds(x=x, n=n, _result=r)
    assert e.value.count == 7 and e.value.max_iters == 4
    assert f"counted.slang:{COUNTED_LINE}:" in str(e.value) and "ran 7 iterations" in str(e.value)
    g = x.grad.to_numpy()
    assert g[:2] == pytest.approx([fd_counted(a, k) for a, k in zip(xs[:2], ns[:2])], rel=1e-4)
    assert np.isnan(g[2])
    m.grow_tape = True  # and a larger tape gets every element right
    x, n, r = _counted(m, xs, ns)
    m.powsum.bwds(x=x, n=n, _result=r)
    assert x.grad.to_numpy() == pytest.approx([fd_counted(a, k) for a, k in zip(xs, ns)], rel=1e-4)


def test_counted_loop_overrun_in_the_interpreter_is_nan():
    sys.path.insert(0, str(ROOT / "tests"))
    from slang_harness import Compiled

    c = Compiled(COUNTED, "powsum")
    c.check_derivatives([0.7, 4])  # within the bound: finite differences, both modes
    got = c.compare([0.7, 7])
    assert got.prim[0] == pytest.approx(powsum(0.7, 7), rel=1e-6)  # the primal runs every iteration
    assert np.isnan(got.jtu).all()  # the gradient of an overlong run: NaN, not a wrong number
