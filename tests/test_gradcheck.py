"""`diffc check` / diffc.check: derivatives against float64 finite differences of the primal.
A planted wrong custom derivative must be caught; every example must pass."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from diffc import gradcheck
from diffc.runtime.module import load_module_from_string

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").rglob("*.slang"))

CUSTOM = """
float square(float x, float y) {{ return x * x + y * y; }}

[ForwardDerivativeOf(square)]
DifferentialPair<float> squareFwd(DifferentialPair<float> x, DifferentialPair<float> y) {{
    return diffPair(square(x.p, y.p), {fwd_scale} * (x.p * x.d + y.p * y.d));
}}

[BackwardDerivativeOf(square)]
void squareBwd(inout DifferentialPair<float> x, inout DifferentialPair<float> y, float dOut) {{
    x.d += {bwd_scale} * x.p * dOut;
    y.d += 2.0f * y.p * dOut;
}}
"""


def _check(src: str, **kw) -> gradcheck.CheckReport:
    return gradcheck.check(load_module_from_string(src, "t.slang"), **kw)


def _fn(report, name):
    return next(f for f in report.functions if f.name == name)


def test_right_custom_derivatives_pass():
    r = _check(CUSTOM.format(fwd_scale="2.0f", bwd_scale="2.0f"))
    f = _fn(r, "square")
    assert r.ok and f.status == "ok" and f.samples == gradcheck.DEFAULT_SAMPLES
    assert set(f.errors) == {"fwd vs fd", "fwd primal", "bwd vs fd", "<u,Jv>=<J'u,v>"}


def test_wrong_custom_backward_derivative_is_caught():
    r = _check(CUSTOM.format(fwd_scale="2.0f", bwd_scale="3.0f"))
    f = _fn(r, "square")
    assert not r.ok and f.status == "FAIL"
    assert f.errors["fwd vs fd"] < 1e-8
    assert f.errors["bwd vs fd"] > 0.1 and f.errors["<u,Jv>=<J'u,v>"] > 1e-3
    assert "<-- mismatch" in r.table()


def test_wrong_custom_forward_derivative_is_caught():
    f = _fn(_check(CUSTOM.format(fwd_scale="1.0f", bwd_scale="2.0f")), "square")
    assert f.status == "FAIL" and f.errors["fwd vs fd"] > 0.1 and f.errors["bwd vs fd"] < 1e-8


def test_domain_falls_back_to_positive_inputs():
    src = "[Differentiable] float f(float x) { return log(x) * sqrt(x); }"
    f = _fn(_check(src), "f")
    assert f.status == "ok" and "positive inputs" in f.reason and f.domain[0] > 0
    f = _fn(_check(src, domain=(2.0, 3.0)), "f")
    assert f.status == "ok" and not f.reason
    assert all(2.0 <= w[0] <= 3.0 for w in f.worst.values())


def test_vectors_ints_and_pointers():
    src = """
    [Differentiable] float3 g(float3 v, int k, no_diff float s) { return v * float(k + 1) * s + sin(v); }
    [Differentiable] float h(float* p, float x) { return x * p[0]; }
    float plain(float x) { return x; }
    """
    r = _check(src)
    assert [f.name for f in r.functions] == ["g", "h"]
    assert _fn(r, "g").status == "ok"
    h = _fn(r, "h")
    assert h.status == "skipped" and "pointer" in h.reason and r.ok


def test_on_device_catches_a_wrong_custom_derivative():
    os.environ.setdefault("DIFFC_DEVICE", "cpu")
    f = _fn(_check(CUSTOM.format(fwd_scale="2.0f", bwd_scale="2.0f"), device=True), "square")
    assert f.status == "ok" and {"device primal", "device fwd", "device bwd"} <= set(f.errors)
    assert f.errors["device bwd"] < gradcheck.DEVICE_TOL
    f = _fn(_check(CUSTOM.format(fwd_scale="2.0f", bwd_scale="2.5f"), device=True), "square")
    assert f.status == "FAIL" and f.errors["device bwd"] > 0.1 and f.errors["device fwd"] < gradcheck.DEVICE_TOL


@pytest.mark.parametrize("path", EXAMPLES)
def test_every_example_passes(path):
    r = gradcheck.check(ROOT / path)
    assert r.ok, r.table()


@pytest.fixture
def diffc_check(diffc_cli):
    """`diffc check ARGS` from the checkout (conftest: in this process)."""
    return lambda *args: diffc_cli("check", *args, cwd=ROOT)


def test_cli_exit_codes(tmp_path, diffc_check):
    p = diffc_check("examples/poly.slang", "--domain", "-2,2", "--samples", "2")
    assert p.returncode == 0, p.stderr
    assert "@polynomial: ok  [2 inputs in [-2, 2]]" in p.stdout and "bwd vs fd" in p.stdout
    bad = tmp_path / "bad.slang"
    bad.write_text(CUSTOM.format(fwd_scale="2.0f", bwd_scale="3.0f"))
    p = diffc_check(str(bad))
    assert p.returncode == 1 and "@square: FAIL" in p.stdout and "<-- mismatch" in p.stdout
    p = diffc_check("examples/poly.slang", "--domain", "1,0")
    assert p.returncode == 2 and "LO < HI" in p.stderr and "Traceback" not in p.stderr
    p = diffc_check(str(tmp_path / "missing.slang"))
    assert p.returncode == 1 and "no such file" in p.stderr and "Traceback" not in p.stderr


PHONG = """
[Differentiable]
float phong(float3 r, float3 v, float shininess) {
    return pow(max(dot(r, v), 0.0), shininess);
}
"""


def test_a_parameter_takes_its_own_domain():
    """A Phong term passes in the default domain (pow's partial is 0 where it is not finite, as
    Slang's: where max clamps to 0 the chain rule's 0 * inf is no NaN); the exponent also takes its
    own range [1, 64], the other parameters keeping the default."""
    m = load_module_from_string(PHONG, "phong.slang")
    assert gradcheck.check(m).ok
    for key in ("shininess", "phong.shininess"):
        r = gradcheck.check(m, domains={key: (1.0, 64.0)}, samples=5)
        f = _fn(r, "phong")
        assert r.ok and f.status == "ok" and f.samples == 5, r.table()
        assert all(1.0 <= args[2] <= 64.0 for args in f.worst.values())  # the exponent's own range
        assert all(np.all(np.abs(args[0]) <= 1.0) for args in f.worst.values())  # the others: the default
        assert "shininess in [1, 64], the others in [-1, 1]" in r.table()


def test_a_domain_for_no_parameter_is_refused():
    m = load_module_from_string(PHONG, "phong.slang")
    with pytest.raises(ValueError, match="no function checked has a parameter 'shine'.*r, shininess, v"):
        gradcheck.check(m, domains={"shine": (1.0, 64.0)})
    with pytest.raises(ValueError, match="lo < hi"):
        gradcheck.check(m, domains={"shininess": (64.0, 1.0)})


def test_a_failure_names_its_sample_and_why_it_may_be_infinite():
    # a backward derivative that is infinite where y <= 0
    src = CUSTOM.replace("y.d += 2.0f * y.p * dOut;", "y.d += (y.p > 0.0f ? 2.0f * y.p : 1.0f / (y.p - y.p)) * dOut;")
    r = _check(src.format(fwd_scale="2.0f", bwd_scale="2.0f"), domains={"y": (-1.0, -0.5)})
    f = _fn(r, "square")
    assert f.status == "FAIL"
    k = f.worst_sample["bwd vs fd"]
    assert 1 <= k <= f.samples
    row = next(ln for ln in r.table().splitlines() if ln.lstrip().startswith("bwd vs fd"))
    assert f"#{k}: " in row and "<-- mismatch" in row
    assert f"at sample #{k} the derivative is NaN or infinite" in r.table()


@pytest.mark.parametrize("seed", [2, 5])  # seeds whose inputs make inf - inf in the finite differences
def test_numpy_warnings_stay_off_stderr(seed):
    m = load_module_from_string(PHONG, "phong.slang")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        gradcheck.check(m, seed=seed)
    assert not [w for w in seen if issubclass(w.category, RuntimeWarning)]


def test_cli_domain_per_parameter(tmp_path, diffc_cli):
    f = tmp_path / "phong.slang"
    f.write_text(PHONG)

    def check(*args):
        return diffc_cli("check", str(f), *args)

    with warnings.catch_warnings(record=True) as seen:  # (in this process: a warning is not printed but kept)
        warnings.simplefilter("always")
        quiet = check("--seed", "2")  # (inf - inf in its finite differences: no numpy warning)
    assert not [w for w in seen if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in seen]
    assert quiet.stderr == "" and "@phong" in quiet.stdout
    good = check("--domain", "shininess=1,64", "--domain", "-0.5,0.5")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "shininess in [1, 64], the others in [-0.5, 0.5]" in good.stdout
    typo = check("--domain", "shine=1,64")
    assert typo.returncode == 1 and "no function checked has a parameter 'shine'" in typo.stderr
    assert "Traceback" not in typo.stderr
    malformed = check("--domain", "shi-ne=1,64")
    assert malformed.returncode == 2 and "NAME=LO,HI" in malformed.stderr
