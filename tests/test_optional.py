"""Optional<T>, none, if (let x = opt), nullptr, and is/as (frontend/features/optional.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from slang_harness import Compiled
from slang_helpers import expect_error, run

OPTIONAL_FUNCS = """
[Differentiable]
Optional<float> wave(Optional<float> a, float k)
{
    if (let x = a)
        return sin(x) * k + x * x;
    return none;
}

[Differentiable]
float total(Optional<float2> a, Optional<float> b, float w)
{
    float s = w * w;
    if (a.hasValue)
        s += dot(a.value, a.value) * w;
    if (let y = b)
        s += exp(y) * w;
    else
        s -= w;
    return s;
}

[Differentiable]
float chain(float x, bool give)
{
    Optional<float> o = none;
    if (give)
        o = x * 2.0;
    let r = wave(o, x);
    return r.hasValue ? r.value : x * 3.0;
}
"""


@pytest.mark.parametrize("present", [1, 0])
def test_optional_result_derivatives_present_and_absent(present):
    """An Optional parameter and result: its value carries the derivative (both modes against
    finite differences); an absent one returns none and no derivative."""
    c = Compiled(OPTIONAL_FUNCS, "wave")
    a, k = 0.7, 1.3
    has, value = c.primal([present, a, k])
    assert bool(has) == bool(present)
    assert value == pytest.approx(math.sin(a) * k + a * a if present else 0.0)
    c.check_derivatives([present, a, k])


@pytest.mark.parametrize("args", [
    [1, np.array([0.3, -0.4]), 1, 0.5, 1.7],
    [0, np.array([0.0, 0.0]), 1, 0.5, 1.7],
    [1, np.array([0.3, -0.4]), 0, 0.0, 1.7],
])
def test_optional_parameters_derivatives(args):
    c = Compiled(OPTIONAL_FUNCS, "total")
    ha, va, hb, vb, w = args
    want = w * w + (float(va @ va) * w if ha else 0.0) + (math.exp(vb) * w if hb else -w)
    assert c.primal(args)[0] == pytest.approx(want)
    c.check_derivatives(args)


@pytest.mark.parametrize("give", [1, 0])
def test_optional_local_assigned_in_a_branch_derivatives(give):
    c = Compiled(OPTIONAL_FUNCS, "chain")
    x = 0.6
    want = math.sin(2 * x) * x + 4 * x * x if give else 3 * x
    assert c.primal([x, give])[0] == pytest.approx(want)
    c.check_derivatives([x, give])


PLACES = {
    "field": ("""
struct S : IDifferentiable { Optional<float> o; float w; }
[Differentiable] float f(S s) { if (let x = s.o) return x * s.w; return s.w; }
""", [[1, 0.7, 1.3], [0, 0.0, 1.3]], [0.7 * 1.3, 1.3]),
    "array": ("""
[Differentiable]
float f(Optional<float> a[2], float w)
{
    float r = w;
    for (int i = 0; i < 2; i++)
        if (let x = a[i])
            r += x * x * w;
    return r;
}
""", [[1, 0.5, 0, 0.0, 2.0], [0, 0.0, 1, 0.3, 2.0]], [2.5, 2.0 + 0.09 * 2.0]),
    "out parameter": ("""
[Differentiable] void g(float x, out Optional<float> r) { if (x > 0.0) r = x * x; else r = none; }
[Differentiable] float f(float x) { Optional<float> r; g(x, r); return r.hasValue ? r.value * 3.0 : x; }
""", [[0.6], [-0.4]], [3 * 0.36, -0.4]),
    "struct value": ("""
struct P : IDifferentiable { float a; float b; }
[Differentiable] Optional<P> mk(float x) { if (x > 0.0) return P(x, x * x); return none; }
[Differentiable] float f(float x) { let p = mk(x); if (let q = p) return q.a * q.b; return 1.0; }
""", [[0.6], [-0.4]], [0.6**3, 1.0]),
}


@pytest.mark.parametrize("place", sorted(PLACES))
def test_optional_in_fields_arrays_out_parameters_and_of_structs(place):
    src, argsets, wants = PLACES[place]
    c = Compiled(src, "f")
    for args, want in zip(argsets, wants):
        assert c.primal(args)[0] == pytest.approx(want)
        c.check_derivatives(args)


PAIRS = """
[Differentiable]
Optional<float> cube(Optional<float> a)
{
    if (let x = a)
        return x * x * x;
    return none;
}

// bwd_diff through an Optional: the gradient's presence is the primal's
float grad(float a, bool present, bool seed)
{
    Optional<float> o = none;
    if (present)
        o = a;
    var dp = diffPair<Optional<float>>(o, none);
    if (seed)
        bwd_diff(cube)(dp, 1.0);
    else
        bwd_diff(cube)(dp, none);
    if (dp.d == none)
        return -1.0;
    return dp.d.hasValue ? dp.d.value : -2.0;
}

float tangent(float a, bool present)
{
    Optional<float> o = none;
    if (present)
        o = a;
    let r = fwd_diff(cube)(diffPair<Optional<float>>(o, 1.0));
    if (r.d != none)
        return r.d.value;
    return -1.0;
}
"""


@pytest.mark.parametrize("a", [0.5, -1.25])
def test_bwd_diff_gradient_of_an_optional(a):
    assert run(PAIRS, "grad", a, 1, 1)[0] == pytest.approx(3 * a * a)
    assert run(PAIRS, "grad", a, 1, 0)[0] == 0.0  # a `none` cotangent is a zero one
    assert run(PAIRS, "grad", a, 0, 1)[0] == -1.0  # an absent value has an absent gradient


@pytest.mark.parametrize("a", [0.5, -1.25])
def test_fwd_diff_tangent_of_an_optional(a):
    assert run(PAIRS, "tangent", a, 1)[0] == pytest.approx(3 * a * a)
    assert run(PAIRS, "tangent", a, 0)[0] == -1.0


def test_none_converts_to_any_optional_and_compares_both_ways():
    src = """
struct P { float x; int n; }
int f(bool give)
{
    Optional<P> p = none;
    if (give)
        p = P(2.0, 3);
    Optional<int> q = 4;
    int r = 0;
    if (p != none) r += 1;
    if (none == p) r += 10;
    if (let v = p) r += v.n * 100;
    if (let w = q) r += w * 1000;
    return r;
}
"""
    assert run(src, "f", 1)[0] == 1 + 300 + 4000
    assert run(src, "f", 0)[0] == 10 + 4000


GENERIC = """
[Differentiable]
T getOr<T : IDifferentiable>(Optional<T> o, T d)
{
    if (let v = o)
        return v;
    return d;
}

[Differentiable]
float f(float x, bool give)
{
    Optional<float> o = give ? Optional<float>(x * x) : none;
    Optional<float> e = Optional<float>();
    Optional<float> z = {};
    return getOr(o, 5.0 * x) + getOr(e, 1.0) + getOr(z, 2.0);
}
"""


@pytest.mark.parametrize("give", [1, 0])
def test_optional_constructors_and_generic_inference(give):
    """`Optional<T>(x)`, `Optional<T>()` and `{}` (none), `c ? opt : none`, and T inferred from
    an `Optional<T>` parameter."""
    c = Compiled(GENERIC, "f")
    x = 0.5
    assert c.primal([x, give])[0] == pytest.approx((x * x if give else 5 * x) + 1.0 + 2.0)
    c.check_derivatives([x, give])


IS_AS = """
interface IShape { float area(float s); }
struct Sq : IShape { float k; float area(float s) { return k * s * s; } }
struct Tri : IShape { float k; float area(float s) { return 0.5 * k * s; } }

IShape pick(int id, float k)
{
    if (id == 0)
        return Sq(k);
    return Tri(k);
}

float dyn(int id, float k)
{
    let s = pick(id, k);
    float r = (s is Sq) ? 1.0 : 0.0;
    if (s is Tri) r += 2.0;
    if (let t = s as Tri)
        r += t.k * 10.0;
    let q = s as Sq;
    if (q.hasValue)
        r += q.value.area(2.0) * 100.0;
    return r;
}

float stat(float k)
{
    IShape s = Sq(k);
    float r = (s is Sq) ? 1.0 : 0.0;
    if (s is Tri) r += 2.0;
    let t = s as Tri;
    return r + (t.hasValue ? 4.0 : 0.0) + (s as Sq).value.k;
}
"""


@pytest.mark.parametrize("id_, k", [(0, 1.5), (1, 2.5)])
def test_is_and_as_on_a_tagged_union_test_the_tag(id_, k):
    want = 1.0 + 4 * k * 100 if id_ == 0 else 2.0 + k * 10
    assert run(IS_AS, "dyn", id_, k)[0] == pytest.approx(want)


def test_is_and_as_on_a_statically_known_value_are_constants():
    assert run(IS_AS, "stat", 0.25)[0] == pytest.approx(1.25)


def _run_program(tmp_path, src: str, capsys) -> tuple[int, str, str]:
    from diffc import cli

    path = tmp_path / "k.slang"
    path.write_text(src)
    rc = cli.main(["run", str(path)])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_nullptr_compares_and_a_default_pointer_is_null(tmp_path, capsys):
    src = """
//TEST_INPUT:ubuffer(data=[0 0 0 0 0 0], stride=4):out,name=outputBuffer
RWStructuredBuffer<float> outputBuffer;
//TEST_INPUT: set data = ubuffer(data=[0.25 0.5], stride=4)
uniform float* data;
struct Holder { Ptr<float> p; float k; }
float readOr(Holder h, float fallback)
{
    if (h.p != nullptr)
        return *h.p * h.k;
    return fallback;
}
[numthreads(1, 1, 1)]
void computeMain()
{
    Holder h = {};
    Ptr<float> q = nullptr;
    outputBuffer[0] = readOr(h, 7.0);
    outputBuffer[1] = (nullptr == h.p ? 1.0 : 0.0) + (q == nullptr ? 10.0 : 0.0);
    h.k = 3.0;
    outputBuffer[2] = (h.p != nullptr ? 1.0 : 0.0) + h.k;
    outputBuffer[3] = data[1];
    Holder g = { data + 1, 4.0 };
    outputBuffer[4] = readOr(g, 7.0) + (g.p != nullptr ? 100.0 : 0.0);
    Ptr<float> r = outputBuffer[4] > 0.0 ? nullptr : g.p;
    outputBuffer[5] = r == nullptr ? 1.0 : 0.0;
}
"""
    rc, out, err = _run_program(tmp_path, src, capsys)
    assert rc == 0, err
    assert [float(v) for v in out.split()[2:]] == [7.0, 11.0, 3.0, 0.5, 102.0, 1.0]


@pytest.mark.parametrize("read, line, col", [("readIt(h)", 4, 33), ("q[2]", 12, 23), ("viaCall(2.0)", 5, 57)])
def test_reading_through_a_null_pointer_is_a_located_runtime_error(tmp_path, capsys, read, line, col):
    src = f"""//TEST_INPUT:ubuffer(data=[0 0 0], stride=4):out,name=outputBuffer
RWStructuredBuffer<float> outputBuffer;
struct Holder {{ Ptr<float> p; float k; }}
float readIt(Holder h) {{ return *h.p * h.k; }}
float viaCall(float k) {{ Ptr<float> p = nullptr; return p[0] * k; }}
[numthreads(1, 1, 1)]
void computeMain()
{{
    Holder h = {{}};
    Ptr<float> q = nullptr;
    h.k = 2.0;
    outputBuffer[0] = {read};
}}
"""
    rc, out, err = _run_program(tmp_path, src, capsys)
    assert rc == 1
    assert f"k.slang:{line}:{col}: error[E0011]" in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("src, line, col, words, code", [
    ("float f() { let x = none; return 1.0; }", 1, 21, "cannot declare a variable of type none", "E0003"),
    ("float f(float x) { if (x == none) return 1.0; return 0.0; }", 1, 24, "'none' is compared with an Optional", "E0003"),
    ("float f(Optional<float> o) { return o < none ? 1.0 : 0.0; }", 1, 37, "operator '<' cannot combine", "E0003"),
    ("float f(float x) { if (let y = x) return y; return 0.0; }", 1, 32, "no member 'hasValue'", "E0004"),
    ("float f(Optional<float> o) { Ptr<float> p = none; return 0.0; }", 1, 45, "expected a value of type float*", "E0003"),
    ("float f(Ptr<float> p, Ptr<float> q) { return p == q ? 1.0 : 0.0; }", 1, 46, "comparing two pointers", "E0008"),
    ("float f() { Optional<float> o = { true, 2.0 }; return 0.0; }", 1, 33, "an initializer list for Optional<float>",
     "E0008"),
    ("float f(float x) { let o = Optional<float>(x, x); return 0.0; }", 1, 28, "takes a value or nothing", "E0005"),
    ("float f(bool c) { let o = c ? 1.0 : none; return 0.0; }", 1, 27, "the branches of '?:'", "E0003"),
    ("struct A { float x; } float f(float a) { return (a is A) ? 1.0 : 0.0; }", 1, 50, "'is' on a value of type float", "E0008"),
    ("interface I { float g(); } struct A : I { float g() { return 1.0; } }\n"
     "I mk(int k) { return A(); } float f() { return (mk(0) as float).hasValue ? 1.0 : 0.0; }", 2, 58,
     "'as' with type float is not supported", "E0008"),
    ("float f(Optional<void> o) { return 0.0; }", 1, 9, "Optional<void> is not supported", "E0008"),
])
def test_refusals_are_located(src, line, col, words, code):
    expect_error(src, code, line, col, words)


CUSTOM = """
void sq_bwd(inout DifferentialPair<Optional<float>> a, Optional<float>.Differential dOut)
{
    if (let x = a.p)
        a = diffPair(a.p, Optional<float>(2.0 * x * dOut.value));
}

[BackwardDerivative(sq_bwd)]
Optional<float> sq(Optional<float> a)
{
    if (let x = a)
        return x * x;
    return none;
}

[Differentiable]
float f(float x, bool give)
{
    Optional<float> o = none;
    if (give)
        o = x + 1.0;
    let r = sq(o);
    return r.hasValue ? r.value : 2.0 * x;
}
"""


@pytest.mark.parametrize("give", [1, 0])
def test_custom_backward_derivative_of_an_optional_function(give):
    """A custom derivative takes `inout DifferentialPair<Optional<T>>` and `Optional<T>.Differential`
    (the value's derivative) as Slang spells them."""
    c = Compiled(CUSTOM, "f")
    x = 0.3
    assert c.primal([x, give])[0] == pytest.approx((x + 1) ** 2 if give else 2 * x)
    c.check_derivatives([x, give])
