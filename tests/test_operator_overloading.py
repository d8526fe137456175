"""Operator overloading (diffc/frontend/features/operators.py): `operator<op>` functions called by binary,
unary and compound-assignment expressions on structs, resolved like overloaded calls, and
differentiated like calls (fwd and bwd against finite differences and each other); built-in
arithmetic unchanged; located errors for no match, ambiguity and unsupported forms."""

from __future__ import annotations

import numpy as np
import pytest
from slang_harness import Compiled
from slang_helpers import expect_error, front, funcs, ops_named, run

VEC = """
struct V : IDifferentiable { float x; float y; };
[Differentiable] V operator+(V a, V b) { V r; r.x = a.x + b.x; r.y = a.y + b.y; return r; }
[Differentiable] V operator*(V a, V b) { V r; r.x = a.x * b.x; r.y = a.y * b.y; return r; }
[Differentiable] V operator*(float s, V b) { V r; r.x = s * b.x; r.y = s * b.y; return r; }
[Differentiable] V operator-(V a) { V r; r.x = -a.x; r.y = -a.y; return r; }
[Differentiable] V operator-(V a, V b) { V r; r.x = a.x - b.x; r.y = a.y - b.y; return r; }
[Differentiable] bool operator<(V a, V b) { return a.x * a.x + a.y * a.y < b.x * b.x + b.y * b.y; }
"""


def _v_expr(a: float, b: float) -> float:
    """f below, written out in Python: the primal the overloads must compute."""
    u, w = np.array([a, b]), np.array([a * b, np.sin(b)])
    z = u + a * (w * u) - (-w)
    z = z + u
    z = z * z if np.dot(u, u) < np.dot(z, z) else z
    return float(z[0] * z[1])


F_BODY = """
[Differentiable]
float f(float a, float b)
{
    V u = { a, b };
    V w = { a * b, sin(b) };
    V z = u + a * (w * u) - -w;
    z += u;
    if (u < z)
        z *= z;
    return z.x * z.y;
}
"""


@pytest.mark.parametrize("a,b", [(0.7, -1.3), (1.86, -0.39)])  # `u < z` true, then false
def test_struct_operators_compute_and_differentiate(a, b):
    src = VEC + F_BODY
    assert run(src, "f", a, b)[0] == pytest.approx(_v_expr(a, b), rel=1e-6)
    Compiled(src, "f").check_derivatives([a, b])


def test_each_operator_is_a_call_of_its_overload():
    m = front(VEC + F_BODY)
    called = {o.callee.root_reference.data for o in ops_named(funcs(m)["f"], "func.call")}
    # binary and unary minus are distinct functions; `*` picks (V, V) or (float, V) by the operands
    assert {"__op_add", "__op_sub", "__op_neg", "__op_lt", "__op_mul"} <= called
    assert any(n.startswith("__op_mul__") for n in called)


GENERIC = """
interface IRing { static This radd(This a, This b); static This rmul(This a, This b); }
struct C : IRing, IDifferentiable
{
    float re; float im;
    [Differentiable] static C radd(C a, C b) { C r; r.re = a.re + b.re; r.im = a.im + b.im; return r; }
    [Differentiable] static C rmul(C a, C b)
    {
        C r; r.re = a.re * b.re - a.im * b.im; r.im = a.re * b.im + a.im * b.re; return r;
    }
};
[Differentiable]
T operator +<T>(T a, T b) where T : IRing, IDifferentiable { return T.radd(a, b); }
__generic<T : IRing & IDifferentiable>
[Differentiable]
T operator *(T a, T b) { return T.rmul(a, b); }

[Differentiable]
G cube_plus<G : IRing & IDifferentiable>(G x) { return x * x * x + x; }

[Differentiable]
float f(float a, float b)
{
    C z = { a, b };
    C w = cube_plus(z);
    return w.re + 2.0 * w.im;
}
"""


def test_generic_operators_on_a_struct():
    a, b = 0.6, -0.8
    z = complex(a, b)
    w = z ** 3 + z
    assert run(GENERIC, "f", a, b)[0] == pytest.approx(w.real + 2 * w.imag, rel=1e-6)
    Compiled(GENERIC, "f").check_derivatives([a, b])
    names = set(funcs(front(GENERIC)))
    assert {"__op_add__g1_C", "__op_mul__g1_C"} <= names  # one instance per generic operator


GENERIC_SHAPES = """
struct MV<T : __BuiltinFloatingPointType, let N : int> : IDifferentiable { T values[N]; };
[Differentiable]
__generic<T : __BuiltinFloatingPointType, let N : int>
MV<T, N> operator +(MV<T, N> a, MV<T, N> b)
{
    MV<T, N> r;
    [ForceUnroll] for (int i = 0; i < N; i++) r.values[i] = a.values[i] + b.values[i];
    return r;
}
[Differentiable]
__generic<T : __BuiltinFloatingPointType, let N : int>
MV<T, N> operator *(MV<T, N> a, MV<T, N> b)
{
    MV<T, N> r;
    [ForceUnroll] for (int i = 0; i < N; i++) r.values[i] = a.values[i] * b.values[i];
    return r;
}
[Differentiable]
__generic<T : __BuiltinFloatingPointType, let N : int>
MV<T, N> operator *(T s, MV<T, N> b)
{
    MV<T, N> r;
    [ForceUnroll] for (int i = 0; i < N; i++) r.values[i] = s * b.values[i];
    return r;
}
[Differentiable]
MV<float, 2> operator *(MV<float, 2> a, MV<float, 2> b)  // beats the generic one for these
{
    MV<float, 2> r = { { a.values[0] * b.values[1], a.values[1] * b.values[0] } };
    return r;
}
[Differentiable]
float f(float a, float b)
{
    MV<float, 3> u = { { a, b, a * b } };
    MV<float, 3> w = u * u + 2.0 * u;
    MV<float, 2> p = { { a, b } };
    MV<float, 2> q = p * p;
    return w.values[0] + w.values[1] * w.values[2] + q.values[1] * a;
}
"""


def test_generic_operators_with_int_parameters_and_two_generic_overloads():
    """Two generic `*` (shape by shape, scalar by shape) coexist and are told apart by the
    operands; a plain overload beats a generic one that takes the same operands."""
    a, b = 0.7, -0.4
    w = [x * x + 2 * x for x in (a, b, a * b)]
    assert run(GENERIC_SHAPES, "f", a, b)[0] == pytest.approx(w[0] + w[1] * w[2] + b * a * a, rel=1e-6)
    names = set(funcs(front(GENERIC_SHAPES)))
    assert {"__op_mul__g1_float_3", "__op_mul__g2_float_3", "__op_add__g1_float_3"} <= names
    assert "__op_mul__g1_float_2" not in names
    Compiled(GENERIC_SHAPES, "f").check_derivatives([a, b])


CUSTOM = """
struct P : IDifferentiable { float v; };
P scale_by_sq(P a, float s) { P r; r.v = a.v * s * s; return r; }
void scale_bwd(inout DifferentialPair<P> a, inout DifferentialPair<float> s, P.Differential d)
{
    P.Differential da; da.v = d.v * s.p * s.p;
    a = diffPair(a.p, da);
    s = diffPair(s.p, d.v * 2.0 * a.p.v * s.p);
}
DifferentialPair<P> scale_fwd(DifferentialPair<P> a, DifferentialPair<float> s)
{
    P r; r.v = a.p.v * s.p * s.p;
    P.Differential dr; dr.v = a.d.v * s.p * s.p + 2.0 * a.p.v * s.p * s.d;
    return diffPair(r, dr);
}
[ForwardDerivative(scale_fwd)]
[BackwardDerivative(scale_bwd)]
P operator*(P a, float s) { return scale_by_sq(a, s); }

[Differentiable]
float f(float x, float s)
{
    P p = { x };
    P q = p * s;
    q *= x;
    return q.v;
}
"""


def test_custom_derivatives_on_an_operator():
    """The overload's own [ForwardDerivative] / [BackwardDerivative] are used: its body calls a
    non-differentiable function, so without them it could not be differentiated at all."""
    x, s = 0.9, 1.7
    assert run(CUSTOM, "f", x, s)[0] == pytest.approx(x * s * s * x * x)
    Compiled(CUSTOM, "f").check_derivatives([x, s])


def test_fwd_and_bwd_diff_of_a_function_using_operators():
    src = VEC + F_BODY + """
float2 both(float a, float b)
{
    DifferentialPair<float> pa = diffPair(a, 1.0);
    DifferentialPair<float> pb = diffPair(b, 0.0);
    float dfa = fwd_diff(f)(pa, pb).d;
    bwd_diff(f)(pa, pb, 1.0);
    return float2(dfa, pa.d);
}
"""
    a, b, h = 0.7, -1.3, 1e-6
    fd = (_v_expr(a + h, b) - _v_expr(a - h, b)) / (2 * h)
    got = run(src, "both", a, b)[0]
    np.testing.assert_allclose(np.asarray(got, dtype=float), [fd, fd], rtol=1e-4)


COMPOUND = """
struct A : IDifferentiable { float v; };
[Differentiable] void operator+=(inout A a, A b) { a.v = a.v + b.v * b.v; }
[Differentiable] A operator+(A a, A b) { A r; r.v = a.v + b.v; return r; }
[Differentiable]
float f(float x, float y)
{
    A a = { x };
    A b = { y };
    A arr[2] = { a, b };
    a += b;            // operator+= (inout), not operator+
    arr[1] += a;       // also on an element
    int i = 0;
    arr[i] = arr[i] + arr[1];
    return a.v * arr[1].v + arr[0].v;
}
"""


def test_compound_assignment_prefers_the_compound_operator():
    x, y = 0.8, -0.6
    a = x + y * y
    arr1 = y + a * a
    arr0 = x + arr1
    assert run(COMPOUND, "f", x, y)[0] == pytest.approx(a * arr1 + arr0, rel=1e-6)
    Compiled(COMPOUND, "f").check_derivatives([x, y])


def test_compound_assignment_through_the_binary_operator():
    """Without an `operator-=`, `a -= b` is `a = a - b` with the overloaded `-`."""
    src = VEC + """
[Differentiable]
float f(float a, float b)
{
    V u = { a, b };
    V arr[2] = { u, u };
    arr[1] -= a * u;
    return arr[1].x * arr[0].y + arr[1].y;
}
"""
    a, b = 0.3, 1.1
    assert run(src, "f", a, b)[0] == pytest.approx((a - a * a) * b + (b - a * b))
    Compiled(src, "f").check_derivatives([a, b])


def test_builtin_arithmetic_is_unchanged_by_overloads():
    """The same function's IR with and without operator overloads in the program."""
    body = "float g(float a, float3 v, float2x2 m) { return a * v.x - -a + (v * a).y + (m * a)[0][1] + a % 2.0; }\n"
    plain = funcs(front(body))["g"]
    with_ops = funcs(front(VEC + body))["g"]
    assert str(plain) == str(with_ops)
    assert not ops_named(with_ops, "func.call")


def test_an_exact_overload_on_builtin_types_beats_the_builtin_operator():
    src = """
float2 operator*(float2 a, float2 b) { return float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
float2 f(float2 a, float2 b) { return a * b; }
float2 g(float2 a, float3 b) { return a * b.xy * 2.0; }
"""
    got = run(src, "f", np.array([1.0, 2.0], np.float32), np.array([3.0, -1.0], np.float32))[0]
    np.testing.assert_allclose(np.asarray(got), [5.0, 5.0])  # (1+2i)(3-i)
    # float2 * float is no exact match: built-in, lane by lane after the complex product
    got = run(src, "g", np.array([1.0, 2.0], np.float32), np.array([3.0, -1.0, 7.0], np.float32))[0]
    np.testing.assert_allclose(np.asarray(got), [10.0, 10.0])


REFUSED = "struct S { float v; };\nstruct R { float v; };\nS operator+(S a, S b) { return a; }\n"


@pytest.mark.parametrize("body,code,line,col,words", [
    ("float f(S s) { return (s + 1.0).v; }", "E0003", 4, 24, "no overload of operator '+' takes (S, float)"),
    ("float f(S s) { return (s - s).v; }", "E0003", 4, 24, "operator '-' cannot combine S and S"),
    # operands other than structs and built-in values are left to the built-in rules
    ("float f(float a[2]) { float b[2] = a + a; return b[0]; }", "E0003", 4, 36,
     "operator '+' cannot combine float[2] and float[2]"),
    ("R operator+(S a, R b) { return b; }\nR operator+(R a, S b) { return a; }\nR operator+(S a, S b, S c) { return b; }\n",
     "E0005", 6, 11, "operator '+' takes 1 or 2 parameters, got 3"),
    ("S operator++(S a) { return a; }", "E0008", 4, 3, "overloading operator '++' is not supported"),
    ("bool operator&&(S a, S b) { return true; }", "E0008", 4, 6, "overloading operator '&&' is not supported"),
    ("struct Q { Q operator*(Q o) { return o; } };", "E0008", 4, 14, "operator overloading in a struct"),
    ("interface I { static This operator+(This a, This b); };", "E0008", 4, 27,
     "operator overloading in a struct or interface ('operator+')"),
    ("struct Q { float v; };\nextension Q { static Q operator-(Q a) { return a; } };", "E0008", 5, 24,
     "operator overloading in a struct or interface ('operator-')"),
    ("S pick(inout S s[2], int i) { s[i] += s[0]; return s[0]; }\n"
     "float f(S s[2]) { int i = 0; s[i++] += s[1]; return s[0].v; }",
     "E0008", 5, 30, "'+=' through an overloaded operator on a target that calls a function or assigns"),
])
def test_refusals_are_located(body, code, line, col, words):
    expect_error(REFUSED + body, code, line, col, words)


def test_ambiguity_names_the_operator_and_the_candidates():
    src = REFUSED + ("S operator*(S a, float b) { return a; }\nS operator*(float a, S b) { return b; }\n"
                     "S operator*(S a, double b) { return a; }\n"
                     "float f(S s, int k) { return (s * k).v; }\n")
    head = expect_error(src, "E0003", 7, 31, "ambiguous operator '*' on (S, int)")
    assert "operator*(S, float)" in head and "operator*(S, double)" in head  # int -> either costs the same
    assert "operator*(float, S)" not in head  # (it does not take an S first)


def test_a_non_differentiable_operator_is_named_as_written():
    """Without its custom derivatives the operator (whose body calls a plain function) cannot
    take a derivative-carrying operand; the error names `operator*`, not its IR symbol."""
    src = CUSTOM.replace("[ForwardDerivative(scale_fwd)]\n[BackwardDerivative(scale_bwd)]\n", "")
    expect_error(src, "E0006", 22, 11, "'operator*' is not differentiable but gets a derivative-carrying value")


KERNEL = """\
//TEST_INPUT:ubuffer(data=[0.5 -1.25 2.0], stride=4):name=inp
RWStructuredBuffer<float> inp;
//TEST_INPUT:ubuffer(data=[0 0 0 0 0 0 0 0 0], stride=4):out,name=outp
RWStructuredBuffer<float> outp;
struct V : IDifferentiable { float x; float y; };
[Differentiable] V operator+(V a, V b) { V r; r.x = a.x + b.x; r.y = a.y + b.y; return r; }
[Differentiable] V operator*(float s, V b) { V r; r.x = s * b.x; r.y = s * b.y; return r; }
[Differentiable] V operator-(V a) { V r; r.x = -a.x; r.y = -a.y; return r; }
[Differentiable] float f(float a) { V u = { a, a * a }; V z = u + a * u; z += -u; return z.x + z.y; }
[numthreads(3, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID)
{
    int i = int(tid.x);
    outp[i] = f(inp[i]);
    outp[3 + i] = fwd_diff(f)(diffPair(inp[i], 1.0)).d;
    var p = diffPair(inp[i]);
    bwd_diff(f)(p, 1.0);
    outp[6 + i] = p.d;
}
"""


def test_a_kernel_with_operators_runs_on_opencl(tmp_path, capsys, monkeypatch):
    """The overloads' functions reach OpenCL C under their symbols and run: f(a) = a^2 + a^3."""
    from diffc import cli

    monkeypatch.setenv("DIFFC_DEVICE", "cpu")
    path = tmp_path / "ops.slang"
    path.write_text(KERNEL)
    assert cli.main(["run", str(path)]) == 0
    out = capsys.readouterr().out
    got = [float(x) for x in out.split() if x.replace(".", "").replace("-", "").isdigit()]
    a = np.array([0.5, -1.25, 2.0])
    np.testing.assert_allclose(got, np.concatenate([a**2 + a**3, 2 * a + 3 * a**2, 2 * a + 3 * a**2]), rtol=1e-5)


MATRIX = """
struct MyMat : IDifferentiable { float2x3 m; };
[Differentiable] float2 operator*(MyMat a, float3 v) { return mul(a.m, v); }
[Differentiable] float3x2 operator-(MyMat a) { return -transpose(a.m); }
[Differentiable]
float f(float s, float3 v)
{
    MyMat a = { float2x3(s, 1.0, v.x, v.y * s, 2.0, 0.5) };
    float2 r = a * v;
    float3x2 t = -a;
    return r.x * r.y + t[2][0] * v.z;
}
"""


def test_operators_mixing_a_struct_with_vectors_and_matrices():
    s, v = 0.8, np.array([0.3, -1.2, 0.7])
    m = np.array([[s, 1.0, v[0]], [v[1] * s, 2.0, 0.5]])
    r = m @ v
    assert run(MATRIX, "f", s, v.astype(np.float32))[0] == pytest.approx(r[0] * r[1] - m[0, 2] * v[2], rel=1e-5)
    Compiled(MATRIX, "f").check_derivatives([s, v])


def test_a_generic_operator_applies_only_where_its_constraints_hold():
    """`where T : IRing, IDifferentiable` asks for both: C conforms, D (only IDifferentiable) does not."""
    src = GENERIC + ("struct D : IDifferentiable { float v; };\n"
                     "float h(D d) { return (d + d).v; }\n")
    head = expect_error(src, "E0003", 29, 24, "no overload of operator '+' takes (D, D)")
    assert "ambiguous" not in head
