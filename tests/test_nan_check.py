"""The sanitizer mode (check=True, DIFFC_CHECK=1, diffc run --check) on PoCL: derivative code
that makes a NaN or an infinity out of finite operands raises NonFiniteError naming the kernel
and the op's Slang line, through bwds, fwds, dispatch and `diffc run`; the checked path still
gives the right numbers (float64 central differences computed here in Python)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

import diffc
from diffc.runtime.module import load_module_from_string
from diffc.runtime.status import NonFiniteError

os.environ.setdefault("DIFFC_DEVICE", "cpu")

SRC = """
[Differentiable]
float f(float x, float y) {
    float a = log(x);
    float b = a * y;
    return b / y;
}
"""
LOG_LINE = 4  # float a = log(x);
DIV_LINE = 6  # return b / y;


def f64(x: float, y: float) -> float:
    return math.log(x) * y / y


def fd(x: float, y: float, h: float = 1e-6) -> tuple[float, float]:
    return ((f64(x + h, y) - f64(x - h, y)) / (2 * h), (f64(x, y + h) - f64(x, y - h)) / (2 * h))


def _tensors(xs, ys):
    x = diffc.Tensor.from_numpy(np.array(xs, np.float32)).with_grads(zero=True)
    y = diffc.Tensor.from_numpy(np.array(ys, np.float32)).with_grads(zero=True)
    r = diffc.Tensor.from_numpy(np.zeros(len(xs), np.float32)).with_grads()
    r.grad.copy_from_numpy(np.ones(len(xs), np.float32))
    return x, y, r


def test_checked_bwds_gives_the_right_numbers():
    m = load_module_from_string(SRC, "nan.slang", check=True)
    xs, ys = [0.5, 2.0, 3.0], [1.5, -2.0, 0.25]
    x, y, r = _tensors(xs, ys)
    m.f.bwds(x=x, y=y, _result=r)
    for i, (a, b) in enumerate(zip(xs, ys)):
        assert [x.grad.to_numpy()[i], y.grad.to_numpy()[i]] == pytest.approx(fd(a, b), rel=1e-3, abs=1e-4)
    # forward mode agrees with reverse mode: <u, J v> = <J^T u, v> with u = 1, v = (1, 0)
    x2, y2, _ = _tensors(xs, ys)
    x2.grad.copy_from_numpy(np.ones(3, np.float32))
    t = m.f.fwds(x=x2, y=y2)
    assert t.grad.to_numpy() == pytest.approx(x.grad.to_numpy(), rel=1e-5)


def test_bwds_names_the_first_op_and_the_kernel():
    m = load_module_from_string(SRC, "nan.slang", check=True)
    x, y, r = _tensors([2.0, 0.0], [1.0, 1.0])  # log(0) = -inf
    with pytest.raises(NonFiniteError) as e:
        m.f.bwds(x=x, y=y, _result=r)
    assert e.value.where.startswith("nan.slang:") and e.value.where.split(":")[1] == str(LOG_LINE)
    assert e.value.op == "math.log" and e.value.value == "Inf"
    text = str(e.value)
    assert f"nan.slang:{LOG_LINE}:" in text and "error[E0012]" in text and "kernel 'diffc_bwds_f'" in text
    assert "float a = log(x);" in text  # the source line, with a caret
    # the stated state of the outputs: the launch ran; the good element is right
    assert x.grad.to_numpy()[0] == pytest.approx(fd(2.0, 1.0)[0], rel=1e-3)


def test_a_nan_made_later_is_reported_where_it_is_made():
    m = load_module_from_string(SRC, "nan.slang", check=True)
    x, y, r = _tensors([2.0], [0.0])  # b / y = 0 / 0: a NaN made by the division
    with pytest.raises(NonFiniteError) as e:
        m.f.bwds(x=x, y=y, _result=r)
    assert e.value.where.split(":")[1] == str(DIV_LINE) and e.value.value == "NaN"


def test_fwds_reports_too():
    m = load_module_from_string(SRC, "nan.slang", check=True)
    x, y, _ = _tensors([0.0], [1.0])
    x.grad.copy_from_numpy(np.ones(1, np.float32))
    with pytest.raises(NonFiniteError, match=rf"nan.slang:{LOG_LINE}:.*kernel 'diffc_fwds_f'"):
        m.f.fwds(x=x, y=y)


def test_without_check_no_error(monkeypatch):
    monkeypatch.delenv("DIFFC_CHECK", raising=False)
    m = load_module_from_string(SRC, "nan.slang")
    assert not m.check
    x, y, r = _tensors([0.0], [1.0])
    m.f.bwds(x=x, y=y, _result=r)
    assert not np.isfinite(x.grad.to_numpy()[0])


def test_environment_turns_it_on(monkeypatch):
    monkeypatch.setenv("DIFFC_CHECK", "1")
    m = load_module_from_string(SRC, "nan.slang")
    assert m.check
    x, y, r = _tensors([0.0], [1.0])
    with pytest.raises(NonFiniteError):
        m.f.bwds(x=x, y=y, _result=r)


CUSTOM = """
float g(float x) { return x * x; }

[BackwardDerivativeOf(g)]
void gBwd(inout DifferentialPair<float> x, float d) {
    x = diffPair(x.p, d * 2.0 / x.p);
}

[Differentiable]
float h(float x) { return g(x) + 1.0; }
"""


def test_a_custom_derivative_is_checked():
    m = load_module_from_string(CUSTOM, "custom.slang", check=True)
    x = diffc.Tensor.from_numpy(np.array([1.0, 0.0], np.float32)).with_grads(zero=True)
    r = diffc.Tensor.from_numpy(np.zeros(2, np.float32)).with_grads()
    r.grad.copy_from_numpy(np.ones(2, np.float32))
    with pytest.raises(NonFiniteError) as e:
        m.h.bwds(x=x, _result=r)
    assert e.value.where.startswith("custom.slang:6:") and e.value.function == "gBwd"


ENTRY = SRC + """
[shader("compute")]
[numthreads(4, 1, 1)]
void computeMain(uint3 tid: SV_DispatchThreadID, float* xs, float* out, int n) {
    if (tid.x >= n) return;
    var p = diffPair(xs[tid.x], 0.0);
    var q = diffPair(2.0, 0.0);
    bwd_diff(f)(p, q, 1.0);
    out[tid.x] = p.d;
}
"""


def test_dispatch_reports_and_checked_numbers_are_right():
    m = load_module_from_string(ENTRY, "entry.slang", check=True)
    xs = diffc.Tensor.from_numpy(np.array([0.5, 4.0, 0.0], np.float32))
    out = diffc.Tensor.from_numpy(np.zeros(3, np.float32))
    m.computeMain.dispatch(thread_count=2, xs=xs, out=out, n=2)
    assert out.to_numpy()[:2] == pytest.approx([fd(0.5, 2.0)[0], fd(4.0, 2.0)[0]], rel=1e-3)
    with pytest.raises(NonFiniteError, match=rf"entry.slang:{LOG_LINE}:.*kernel 'computeMain'") as e:
        m.computeMain.dispatch(thread_count=3, xs=xs, out=out, n=3)
        out.to_numpy()  # the error comes with the next read of values (runtime/pending.py)
    assert e.value.kernel == "computeMain"


RUN = """//TEST_INPUT:ubuffer(data=[1.0 0.0 4.0 2.0], stride=4):name=xs
RWStructuredBuffer<float> xs;
//TEST_INPUT:ubuffer(data=[0 0 0 0], stride=4):out,name=grads
RWStructuredBuffer<float> grads;

[Differentiable]
float f(float x) {
    return x * log(x);
}

[shader("compute")]
[numthreads(4, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID) {
    var p = diffPair(xs[tid.x], 0.0);
    bwd_diff(f)(p, 1.0);
    grads[tid.x] = p.d;
}
"""


def test_diffc_run_check(tmp_path: Path, diffc_cli, monkeypatch):
    path = tmp_path / "run.slang"
    path.write_text(RUN)
    monkeypatch.setenv("DIFFC_CHECK", "0")
    plain = diffc_cli("run", str(path))
    assert plain.returncode == 0 and "nan" in plain.stdout
    for args, check in ((["--check"], "0"), ([], "1")):
        monkeypatch.setenv("DIFFC_CHECK", check)
        r = diffc_cli("run", *args, str(path))
        assert r.returncode != 0 and "Traceback" not in r.stderr + r.stdout
        assert f"{path}:8:16: error[E0012]" in r.stderr and "kernel 'computeMain'" in r.stderr


VECTOR = """
[Differentiable]
float g(float3 v, float s) { float3 w = v / s; return dot(w, w); }

[shader("compute")]
[numthreads(4, 1, 1)]
void computeMain(uint3 tid: SV_DispatchThreadID, float* ss, float* out, int n) {
    if (tid.x >= n) return;
    var p = diffPair(float3(1.0, 2.0, 3.0), float3(0.0));
    var q = diffPair(ss[tid.x], 0.0);
    bwd_diff(g)(p, q, 1.0);
    out[tid.x] = q.d;
}
"""


def test_vector_values_are_checked_lane_by_lane():
    m = load_module_from_string(VECTOR, "v.slang", check=True)
    out = diffc.Tensor.zeros(2, np.float32)
    s = np.array([2.0, 0.5])
    m.computeMain.dispatch(thread_count=2, ss=diffc.Tensor.from_numpy(s.astype(np.float32)), out=out, n=2)
    h = 1e-6  # d/ds of |v/s|^2 = 14 / s^2, by central differences
    want = [(14 / (a + h) ** 2 - 14 / (a - h) ** 2) / (2 * h) for a in s]
    assert out.to_numpy() == pytest.approx(want, rel=1e-4)
    m.computeMain.dispatch(thread_count=2, ss=diffc.Tensor.from_numpy(np.array([2.0, 0.0], np.float32)), out=out, n=2)
    with pytest.raises(NonFiniteError, match=r"v.slang:3:41: .*'arith.divf'"):
        diffc.synchronize()


MIXED = """
[Differentiable]
float mixed(float x, float y) {
    float a = log(x) * y;
    float b = a / (x - y);
    return b + sqrt(x * y) + exp(y * 40.0);
}
"""


@pytest.fixture(scope="module")
def mixed_modules():
    return (load_module_from_string(MIXED, "mixed.slang", check=True),
            load_module_from_string(MIXED, "mixed.slang", check=False))


from hypothesis import given, settings, strategies as st  # noqa: E402

EDGES = st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.0, -2.5, 1e-30, 1e30])


@given(xs=st.lists(st.tuples(EDGES, EDGES), min_size=1, max_size=5))
@settings(max_examples=40, deadline=None, derandomize=True, database=None)
def test_sanitizer_reports_exactly_when_a_gradient_is_not_finite(mixed_modules, xs):
    """Finite inputs: the checked bwds raises NonFiniteError whenever the unchecked one gives a
    non-finite gradient, and when it does not raise, its gradients are the unchecked ones, all
    finite. (It may also report a NaN made and then dropped, e.g. 0 x inf in a zero adjoint.)"""
    checked, plain = mixed_modules
    grads = []
    raised = None
    for m in (plain, checked):
        x, y, r = _tensors([a for a, _ in xs], [b for _, b in xs])
        try:
            m.mixed.bwds(x=x, y=y, _result=r)
        except NonFiniteError as e:
            raised = e
        grads.append(np.concatenate([x.grad.to_numpy(), y.grad.to_numpy()]))
    if not np.isfinite(grads[0]).all():
        assert raised is not None and raised.where.startswith("mixed.slang:")
    if raised is None:
        assert np.isfinite(grads[1]).all()
        np.testing.assert_array_equal(grads[0], grads[1])
