"""`Ref<T>` and `ConstRef<T>` parameters (frontend/features/ref_params.py): a Ref is the caller's
variable (its writes are seen), a ConstRef a read-only value; derivatives through a Ref
parameter against float64 central differences in both modes."""

from __future__ import annotations

import pytest
from slang_helpers import central_difference, expect_error, run

SRC = """
struct Acc { float total; int count; };
void add(Ref<Acc> a, float v) { a.total += v; a.count += 1; }
float scaled(ConstRef<Acc> a, float k) { return a.total * k; }
float twice(float x) { Acc a = {0.0, 0}; add(a, x); add(a, 2.0 * x); return scaled(a, 10.0) + float(a.count); }

[Differentiable] void grow(Ref<float> y, float x) { y = y * x + sin(x); }
[Differentiable] float g(float x) { float y = x; grow(y, x); return y; }
float fwd(float x) { return fwd_diff(g)(diffPair(x, 1.0)).d; }
float bwd(float x) { var p = diffPair(x); bwd_diff(g)(p, 1.0); return p.d; }
"""


def test_writes_through_a_ref_reach_the_caller():
    assert run(SRC, "twice", 0.5)[0] == pytest.approx((0.5 + 1.0) * 10.0 + 2.0)


@pytest.mark.parametrize("x", [0.4, -2.1])
def test_derivatives_through_a_ref(x):
    import math

    def value(v):
        return v * v + math.sin(v)

    want = central_difference(value, [x], 0)
    assert run(SRC, "g", x)[0] == pytest.approx(value(x), rel=1e-12)
    assert run(SRC, "fwd", x)[0] == pytest.approx(want, rel=1e-6)
    assert run(SRC, "bwd", x)[0] == pytest.approx(want, rel=1e-6)


def test_a_ref_with_a_direction_is_located():
    expect_error("void f(inout Ref<float> y) { y = 1.0; }", "E0005", 1, 14, "Ref<T>")
