"""Struct methods (implicit `this`, static, [mutating], custom derivatives naming a sibling),
static const fields, typealias, Slang's spellings (uint32_t, half2, visibility modifiers, 0.f),
array parameters and results, init-list returns, and derivatives through methods."""

from __future__ import annotations

import pytest

from slang_helpers import central_difference, expect_error, floats, front, funcs, lowered, run

from diffc.dialects import diff

COUNTER = """
typealias Real = float;
public struct Counter
{
    typealias Step = float;
    public Real total;
    internal Step step;
    private static const Real scale = 2.0;

    public Real scaled() { return total * scale + this.step; }
    [mutating] public void bump() { total += step; }
    public static Counter make(Real start) { return { start, 0.5f }; }
}
"""


def test_instance_static_and_mutating_methods():
    src = COUNTER + """
float f(float start)
{
    var c = Counter::make(start);
    c.bump();
    c.bump();
    return c.scaled() + 10.0 * Counter::scale + 100.0 * Counter.scale;
}
"""
    m = front(src)
    assert {"Counter_scaled", "Counter_bump", "Counter_make"} <= set(funcs(m))
    bump = funcs(m)["Counter_bump"]
    assert len(bump.function_type.outputs) == 2  # `this` is inout: its two fields come back
    assert run(src, "f", 1.0) == pytest.approx(((1.0 + 0.5 + 0.5) * 2.0 + 0.5 + 20.0 + 200.0,))


def test_method_calls_through_pointers():
    src = """
struct Acc
{
    float* data;
    float get(int i) { return data[i]; }
}
struct Pt
{
    float x; float y;
    float norm1() { return abs(x) + abs(y); }
}
float f(Acc* a, Pt* p) { return a->get(1) + p->norm1() + p[1].norm1(); }
"""
    (r,) = run(src, "f", floats([5, 6, 7]), 0, floats([1, -2, 3, 4]), 0)
    assert r == pytest.approx(6 + 3 + 7)


def test_assigning_a_field_in_a_non_mutating_method_is_an_error():
    expect_error("struct S { float v; void set(float x) { v = x; } }\n", "E0003", 1, 41, "cannot assign to 'this'")


def test_unknown_method_and_static_call_of_instance_method():
    expect_error("struct S { float v; float g() { return v; } }\nfloat f(S s) { return s.h(); }\n",
                 "E0004", 2, 25, "has no method 'h'")
    expect_error("struct S { float v; float g() { return v; } }\nfloat f() { return S::g(); }\n",
                 "E0003", 2, 23, "is not static")


DIFF_STRUCT = """
struct Quad : IDifferentiable
{
    float a;
    float b;
    [Differentiable]
    float eval(float x) { return a * x * x + sin(b * x); }
}

[Differentiable]
float f(Quad q, float x) { return q.eval(x) * q.a; }

float3 grad(float a, float b, float x)
{
    var dq = diffPair(Quad(a, b));
    var dx = diffPair(x);
    bwd_diff(f)(dq, dx, 1.0);
    return float3(dq.d.a, dq.d.b, dx.d);
}
"""


def test_this_of_a_differentiable_struct_carries_a_derivative():
    m = front(DIFF_STRUCT)
    ev = funcs(m)["Quad_eval"]
    assert diff.arg_is_differentiable(ev, 0) and diff.arg_is_differentiable(ev, 1)
    low = lowered(DIFF_STRUCT)
    args = [0.7, 1.3, 0.4]

    def fval(a, b, x):
        return run(low, "f", a, b, x)[0]

    (g,) = run(low, "grad", *args)
    fd = [central_difference(fval, args, i) for i in range(3)]
    assert list(g) == pytest.approx(fd, rel=1e-5)


CUSTOM = """
struct Layer
{
    float* grads;
    float eval(float x) { return x * x; }

    [BackwardDerivativeOf(eval)]
    void evalBwd(inout DifferentialPair<float> x, float dResult)
    {
        grads[0] += dResult;            // records what reached the layer
        x = {x.p, 10.0 * dResult};     // deliberately not 2x: shows this derivative is the one used
    }
}

[Differentiable]
float f(Layer* layer, float x) { return 3.0 * layer->eval(x); }

float grad(Layer* layer, float x)
{
    var dx = diffPair(x);
    bwd_diff(f)(layer, dx, 1.0);
    return dx.d;
}
"""


def test_custom_backward_derivative_naming_a_sibling_method():
    m = front(CUSTOM)
    assert m is not None
    ev = funcs(m)["Layer_eval"]
    assert ev.attributes[diff.BWD_DERIVATIVE].root_reference.data == "Layer_evalBwd"
    g = floats([0.0])
    assert run(CUSTOM, "grad", g, 0, 2.0) == pytest.approx((30.0,))
    assert g.data == [3.0]


MLVEC = """
struct MLVec<int N> : IDifferentiable
{
    half data[N];
    [Differentiable]
    static MLVec<N> fromArray(half[N] values) { MLVec<N> r; r.data = values; return r; }
    [Differentiable]
    half[N] toArray() { return data; }
}

struct Scale<int N>
{
    half factor;
    MLVec<N> eval(MLVec<N> v)
    {
        MLVec<N> r;
        for (int i = 0; i < N; i++)
            r.data[i] = v.data[i] * factor;
        return r;
    }
    [BackwardDerivativeOf(eval)]
    void evalBwd(inout DifferentialPair<MLVec<N>> x, MLVec<N> dResult)
    {
        for (int i = 0; i < N; i++)
            dResult.data[i] *= factor;  // an in-parameter is a mutable local
        x = {x.p, dResult};
    }
}

[Differentiable]
half total(Scale<2> s, MLVec<2> v)
{
    let out = s.eval(v).toArray();
    return out[0] + 3.0h * out[1];
}

half2 grad(half f, half a, half b)
{
    Scale<2> s = { f };
    var dv = diffPair(MLVec<2>::fromArray({ a, b }));
    bwd_diff(total)(s, dv, 1.0h);
    return half2(dv.d.data[0], dv.d.data[1]);
}
"""


def test_differentiable_generic_struct_with_custom_method_derivative():
    m = front(MLVEC)
    assert {"MLVec_2_fromArray", "MLVec_2_toArray", "Scale_2_eval", "Scale_2_evalBwd"} <= set(funcs(m))
    (g,) = run(MLVEC, "grad", 0.5, 1.0, 2.0)
    assert list(g) == pytest.approx([0.5, 1.5])


def test_slang_spellings_literals_casts_and_init_list_returns():
    src = """
struct P { float x; int k; };
P makeP(float x) { return { x, 3 }; }
float[3] arr(float x) { return { x, .5, 0.f }; }
half2 toHalf(float2 v) { return (half2)v; }
static const float32_t offset = 1.0;
float f(float x)
{
    uint32_t u = 2u;
    int32_t i = -1;
    half h = 1.0h;
    let p = makeP(x);
    let a = arr(x);
    let hv = toHalf(float2(x, 2.0));
    return p.x * float(p.k) + a[1] + a[2] + float(u) + float(i) + float(h) + float(hv.y) + offset;
}
"""
    assert run(src, "f", 2.0) == pytest.approx((6.0 + 0.5 + 0.0 + 2 - 1 + 1 + 2 + 1,))


def test_no_diff_call_forms():
    src = """
float target(float x) { return x * x; }
[Differentiable]
float loss(float x)
{
    let gt = no_diff target(x);
    return (x - gt) * (x - no_diff target(x));
}
float grad(float x) { var p = diffPair(x); bwd_diff(loss)(p, 1.0); return p.d; }
"""
    # target(x) is a constant for the derivative: d/dx (x - c)^2 = 2 (x - c)
    assert run(src, "grad", 3.0) == pytest.approx((2 * (3.0 - 9.0),))


def test_the_derivative_of_a_method_of_a_value_differentiates_its_arguments_only():
    from slang_harness import run_function, run_pipeline

    from diffc.frontend import compile_slang

    src = """
struct P : IDifferentiable { float k; [Differentiable] float sq(float x) { return k * x * x; } }
struct Q { float k; [Differentiable] float cube(float x) { return k * x * x * x; } [Differentiable] static float two(float x) { return 2.0 * x; } }
float f(float x) {
    P p = { 3.0 };
    Q q = { 5.0 };
    return fwd_diff(p.sq)(diffPair(x, 1.0)).d + q.cube.fwd_diff(diffPair(x, 1.0)).d * 100.0 + fwd_diff(q.two)(diffPair(x, 1.0)).d * 10000.0;
}
"""
    module = compile_slang(src, "test.slang")
    run_pipeline(module)
    (value,) = run_function(module, "f", 0.5)
    assert float(value) == pytest.approx(2 * 3.0 * 0.5 + 3 * 5.0 * 0.25 * 100.0 + 2.0 * 10000.0)


def test_bwd_diff_of_a_method_of_a_differentiable_value_is_refused_located():
    src = """
struct P : IDifferentiable { float k; [Differentiable] float sq(float x) { return k * x * x; } }
void g() { P p = { 3.0 }; var dx = diffPair(1.0); bwd_diff(p.sq)(dx, 1.0); }
"""
    expect_error(src, "E0008", 3, 60, "bwd_diff of method 'sq' of a value is not supported")
