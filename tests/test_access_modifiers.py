"""Access modifiers `public`, `internal`, `private` (frontend/features/access_modifiers.py):
accepted wherever Slang takes them, among attributes and other modifiers, and without effect on
what the program computes."""

from __future__ import annotations

import pytest
from slang_helpers import central_difference, expect_error, run

SRC = """
public typealias Real = float;
internal typedef float Scalar;
private typealias Pair2 = vector<Real, 2>;
public enum Mode { Square, Cube };
public static const Real SCALE = 2.0;

public interface IShape
{
    public Real area(Real s);
}

public struct Square : IShape, IDifferentiable
{
    public Real side;
    internal typealias Side = Real;
    private static const Real HALF = 0.5;
    public [Differentiable] Real area(Real s) { return side * side * s * HALF; }
    [Differentiable] public __init(Real x) { side = x; }
}

public extension Square
{
    [Differentiable] public Real perimeter() { return 4.0 * side; }
}

public [Differentiable] Real f(Real x)
{
    Square q = Square(x);
    return q.area(SCALE) + q.perimeter();
}

[Differentiable] public Scalar g(Scalar x) { return x * x * x; }

private __generic<T : __BuiltinFloatingPointType> T twice(T x) { return x + x; }

public Real use(Real x) { Pair2 p = Pair2(x, 1.0); return twice(p.x) + p.y + Real(int(Mode.Cube)); }

public float fwd_f(float x, float dx) { return fwd_diff(f)(diffPair(x, dx)).d; }
public float bwd_f(float x, float dout)
{
    var dx = diffPair(x, 0.0);
    bwd_diff(f)(dx, dout);
    return dx.d;
}
"""


def f(x: float) -> float:
    return x * x * 2.0 * 0.5 + 4.0 * x


def test_modified_declarations_compute_as_without_modifiers():
    assert run(SRC, "f", 1.5)[0] == pytest.approx(f(1.5))
    assert run(SRC, "g", 2.0)[0] == pytest.approx(8.0)
    assert run(SRC, "use", 3.0)[0] == pytest.approx(6.0 + 1.0 + 1.0)


@pytest.mark.parametrize("x", [0.7, -2.1])
def test_derivatives_of_a_public_differentiable_function_match_central_differences(x):
    fd = central_difference(f, [x], 0)
    assert run(SRC, "fwd_f", x, 1.0)[0] == pytest.approx(fd, rel=1e-6)
    assert run(SRC, "bwd_f", x, 1.0)[0] == pytest.approx(fd, rel=1e-6)


def test_a_modifier_that_is_no_declaration_start_is_still_an_error():
    expect_error("float f(public float x) { return x; }", "E0002", 1, 9, "unknown type 'public'")


def test_modifiers_after_a_generic_prefix_and_before_a_struct_field_initializer():
    src = """
    __generic<T : __BuiltinFloatingPointType> public T half_of(T x) { return x * T(0.5); }
    public struct Box { public static const float K = 3.0; internal float v; };
    public float f(float x) { Box b; b.v = x; return half_of(b.v) * Box.K; }
    """
    assert run(src, "f", 4.0)[0] == pytest.approx(6.0)
