"""Valid Slang whose meaning diffc once got silently wrong: `no_diff` on calls and on struct
fields, a `?:` whose unselected side is NaN, a custom backward derivative reached through a
call that returns nothing. Expected values come from float64 arithmetic written out here (or
from finite differences), never from diffc."""

from __future__ import annotations

import numpy as np
import pytest
from slang_harness import Compiled

from diffc import cli
from diffc.diagnostics import DiffcError
from diffc.frontend import compile_slang

X0 = 1.5


def _smoothstep(a: float, b: float, x: float) -> float:
    t = min(max((x - a) / (b - a), 0.0), 1.0)
    return t * t * (3.0 - 2.0 * t)


def _fwd_bwd(src: str, fname: str, x: float) -> tuple[float, float]:
    """d f / d x at x by forward mode (tangent 1) and by reverse mode (adjoint 1)."""
    c = Compiled(src, fname)
    _, (t,) = c.fwd([x], [1.0])
    (g,) = c.bwd([x], [1.0])
    return float(t), float(g)


def test_no_diff_on_a_differentiable_call_is_ignored_with_a_warning(capfd):
    src = """
    [Differentiable] float g(float x) { return x * x; }
    [Differentiable] float f(float x) { return x * (no_diff g(x)); }
    """
    t, g = _fwd_bwd(src, "f", X0)
    assert t == pytest.approx(3 * X0**2) and g == pytest.approx(3 * X0**2)  # d(x^3)/dx = 6.75
    err = capfd.readouterr().err
    assert "test.slang:3:53: warning: 'no_diff' has no meaning on a call of differentiable function 'g'" in err


def test_no_diff_on_a_builtin_slang_does_not_differentiate_makes_it_constant(capfd):
    src = "[Differentiable] float f(float x) { return x * (no_diff smoothstep(0.1, 2.0, x)); }"
    t, g = _fwd_bwd(src, "f", X0)
    want = _smoothstep(0.1, 2.0, X0)  # x * c with c held constant: 0.8287
    assert t == pytest.approx(want) and g == pytest.approx(want)
    assert "warning" not in capfd.readouterr().err
    # without no_diff diffc still differentiates smoothstep (an extension of Slang)
    Compiled("[Differentiable] float f(float x) { return x * smoothstep(0.1, 2.0, x); }", "f").check_derivatives([X0])


def test_no_diff_on_a_non_differentiable_user_function_makes_it_constant():
    src = """
    float h(float x) { return x * x; }
    [Differentiable] float f(float x) { return x * (no_diff h(x)); }
    """
    t, g = _fwd_bwd(src, "f", X0)
    assert t == pytest.approx(X0**2) and g == pytest.approx(X0**2)


def test_a_no_diff_parameter_of_a_non_differentiable_function_drops_the_derivative():
    # the checker accepts the call (the parameter is no_diff), and so do both modes: h(x) is held
    # constant, so d/dx [h(x) x] = h(x) (before, reverse mode refused the call)
    src = """
    float h(no_diff float a) { return a * 3.0; }
    [Differentiable] float f(float x) { float k = h(x); return k * x; }
    """
    t, g = _fwd_bwd(src, "f", X0)
    want = (3.0 * X0 * (X0 + 1e-6) - 3.0 * X0 * (X0 - 1e-6)) / 2e-6  # x * c, c held at h(X0)
    assert t == pytest.approx(want) and g == pytest.approx(want)


@pytest.mark.parametrize("build", ["S s = { x, x * x };", "S s = S(x, x * x);", "S s; s.a = x; s.c = 2.25;"])
def test_no_diff_field_of_a_local_struct_is_constant(build):
    src = f"""
    struct S : IDifferentiable {{ float a; no_diff float c; }};
    [Differentiable] float f(float x) {{ {build} return s.a * s.c; }}
    """
    t, g = _fwd_bwd(src, "f", X0)
    assert t == pytest.approx(2.25) and g == pytest.approx(2.25)


def test_no_diff_field_of_a_nested_struct_is_constant():
    src = """
    struct In : IDifferentiable { float a; no_diff float c; };
    struct Out : IDifferentiable { In i; float b; };
    [Differentiable] float f(float x) { Out o = { { x, x * x }, x }; return o.i.a * o.i.c + o.b; }
    """
    t, g = _fwd_bwd(src, "f", X0)
    assert t == pytest.approx(X0**2 + 1) and g == pytest.approx(X0**2 + 1)


def test_assigning_a_derivative_to_a_no_diff_field_is_an_error():
    src = """struct S : IDifferentiable { float a; no_diff float c; };
[Differentiable] float f(float x) {
    S s = { x, x * x };
    S t = s;
    t.c = s.c + x;
    return t.a * t.c;
}
float g(float x) { return fwd_diff(f)(diffPair(x, 1.0)).d; }
"""
    with pytest.raises(DiffcError) as e:
        compile_slang(src, "lost.slang")
    msg = str(e.value)
    assert msg.startswith("lost.slang:5:5: error[E0006]: derivative is lost during assignment: 't.c' is a no_diff field")
    assert "41031" in msg


def test_assigning_a_constant_or_detached_value_to_a_no_diff_field_is_fine():
    src = """
    struct S : IDifferentiable { float a; no_diff float c; };
    [Differentiable] float f(float x) { S t = { x, 1.0 }; t.c = detach(x) * 2.0; t.c += 1.0; return t.a * t.c; }
    """
    t, g = _fwd_bwd(src, "f", X0)
    assert t == pytest.approx(2 * X0 + 1) and g == pytest.approx(2 * X0 + 1)


def test_ternary_takes_the_derivative_of_the_selected_side_only():
    src = "[Differentiable] float f(float x, float y) { return x > 0.0 ? sqrt(x) * sqrt(x) : y; }"
    c = Compiled(src, "f")
    for x, y in [(2.0, 0.5), (-0.3, 0.3)]:
        grads = c.bwd([x, y], [1.0])
        assert not np.isnan(grads).any()
        c.check_derivatives([x, y])


def test_ternary_over_vectors_and_without_faults_still_selects():
    c = Compiled("[Differentiable] float f(float x, float y) { return x > y ? x * y : y - x; }", "f")
    for args in ([2.0, 0.5], [-0.3, 0.3]):
        c.check_derivatives(args)


def _run(tmp_path, capsys, src: str) -> list[float]:
    path = tmp_path / "k.slang"
    path.write_text(src)
    assert cli.main(["run", str(path)]) == 0
    lines = capsys.readouterr().out.split()
    assert lines[0] in ("out:", "outputBuffer:") and lines[1] == "float"  # the out buffer, by name
    return [float(v) for v in lines[2:]]


def test_custom_backward_of_a_void_call_supplies_the_gradient(tmp_path, capsys):
    src = """
struct Grads {
    StructuredBuffer<float> g;
    [Differentiable] void take(int i, float v) { }
    [BackwardDerivativeOf(take)] void take_bwd(int i, inout DifferentialPair<float> d) { d = diffPair(d.p, g[i]); }
}
[Differentiable] void use(Grads dst, int i, float v) { dst.take(i, v); }
//TEST_INPUT: set gin = ubuffer(data=[7.5 8.5], stride=4)
uniform StructuredBuffer<float> gin;
//TEST_INPUT: set out = out ubuffer(data=[0 0], stride=4)
uniform RWStructuredBuffer<float> out;
[numthreads(1, 1, 1)]
void computeMain() {
    Grads gr = { gin };
    DifferentialPair<float> a = diffPair(1.0f);
    bwd_diff(use)(gr, 1, a);
    out[0] = a.d;
}
"""
    assert _run(tmp_path, capsys, src) == [8.5, 0.0]


def test_numthreads_alone_makes_computeMain_the_entry_and_pair_constructors(tmp_path, capsys):
    src = """
typedef DifferentialPair<float> dpfloat;
struct P : IDifferentiable { float u; float v; };
[Differentiable] float f(float x) { return x * x * x; }
[Differentiable] float h(P p) { return p.u * p.v; }
[Differentiable] float k(float3 a) { return dot(a, a); }
//TEST_INPUT:ubuffer(data=[0 0 0 0], stride=4):out,name=outputBuffer
RWStructuredBuffer<float> outputBuffer;
[numthreads(1, 1, 1)]
void helper() { }
[numthreads(1, 1, 1)]
void computeMain() {
    outputBuffer[0] = fwd_diff(f)(dpfloat(2.0, 1.0)).d;
    P p = { 3.0, 4.0 };
    P.Differential dp = { 1.0, 0.0 };
    outputBuffer[1] = fwd_diff(h)(DifferentialPair<P>(p, dp)).d;
    outputBuffer[2] = fwd_diff(k)(DifferentialPair<float3>(float3(1, 2, 3), float3(0, 1, 0))).d;
    DifferentialPair<DifferentialPair<float>> nested = DifferentialPair<DifferentialPair<float>>(dpfloat(1.0, 2.0), dpfloat(3.0, 4.0));
    outputBuffer[3] = nested.d.d;
}
"""
    # 3x^2 at 2; d(u v)/du = v; d(a.a) along e_y = 2 a_y; the nested pair's differential's differential
    assert _run(tmp_path, capsys, src) == [12.0, 4.0, 4.0, 4.0]


def test_a_custom_derivative_called_by_name_is_the_derivative_it_defines(tmp_path, capsys):
    src = """
DifferentialPair<float> sq_fwd(DifferentialPair<float> x) { return diffPair(x.p * x.p, 5.0 * x.p * x.d); }
void cube_bwd(inout DifferentialPair<float> x, float dOut) { x = diffPair(x.p, 7.0 * x.p * dOut); }
[ForwardDerivative(sq_fwd)] float sq(float x) { return x * x; }
[BackwardDerivative(cube_bwd)] float cube(float x) { return x * x * x; }
//TEST_INPUT: set out = out ubuffer(data=[0 0 0 0], stride=4)
uniform RWStructuredBuffer<float> out;
[numthreads(1, 1, 1)]
void computeMain() {
    var a = diffPair(2.0);
    cube_bwd(a, 1.0);
    var b = diffPair(2.0);
    bwd_diff(cube)(b, 1.0);
    out[0] = a.d;
    out[1] = b.d;
    out[2] = sq_fwd(diffPair(3.0, 1.0)).d;
    out[3] = sq_fwd(diffPair(3.0, 1.0)).p;
}
"""
    # the custom rules as written (7 x dOut, 5 x dx), whether called by name or through the operator
    assert _run(tmp_path, capsys, src) == [14.0, 14.0, 15.0, 9.0]


def test_primal_substitute_runs_in_derivative_code_only(tmp_path, capsys):
    src = """
float original(float x) { return x * x; }
[PrimalSubstituteOf(original), Differentiable]
float subst(float x) { return 2.0 * x * x; }
[Differentiable] float caller(float x) { return original(x) + x; }
//TEST_INPUT: set out = out ubuffer(data=[0 0 0 0 0], stride=4)
uniform RWStructuredBuffer<float> out;
[numthreads(1, 1, 1)]
void computeMain() {
    var a = diffPair(3.0, 0.0);
    bwd_diff(caller)(a, 1.0);
    out[0] = a.d;
    let r = fwd_diff(caller)(diffPair(3.0, 1.0));
    out[1] = r.p;
    out[2] = r.d;
    out[3] = caller(3.0);
    out[4] = fwd_diff(original)(diffPair(3.0, 1.0)).d;
}
"""
    # derivative code differentiates 2x^2 + x (4x + 1 = 13, primal 21); the plain call runs x^2 + x
    assert _run(tmp_path, capsys, src) == [13.0, 21.0, 13.0, 12.0, 12.0]


def test_a_custom_backward_derivative_behind_a_branch_runs_when_no_argument_carries_a_derivative(tmp_path, capsys):
    # M.setup's input has no derivative (NoDiffThis), yet its result is differentiable and
    # getAlbedo's custom backward derivative records dOut: Slang runs it, through the dynamic
    # dispatch's branch too (it was skipped: a branch whose inputs carry no derivative)
    src = """
//TEST_INPUT:ubuffer(data=[0 0 0 0], stride=4):out,name=outputBuffer
RWStructuredBuffer<float> outputBuffer;
interface IM { [BackwardDifferentiable] float3 setup(out float3 data); }
struct M : IM {
    float3 base;
    float3 getAlbedo(float3 a) { return a; }
    [BackwardDerivativeOf(getAlbedo)] [TreatAsDifferentiable]
    void bwd_getAlbedo(inout DifferentialPair<float3> dp, float3 dOut) {
        dp = diffPair(dp.p, float3(0.0));
        for (int j = 0; j < 3; j++) outputBuffer[j] += dOut[j];
    }
    [BackwardDifferentiable] [NoDiffThis]
    float3 setup(out float3 data) { data = getAlbedo(base) * 2.0; return base; }
}
struct N : IM {
    float3 base;
    [BackwardDifferentiable] [NoDiffThis]
    float3 setup(out float3 data) { data = float3(0.0); return base; }
}
IM make(int t, float3 v) { return createDynamicObject<IM, float3>(t, v); }
[BackwardDifferentiable]
float3 eval(int t) { IM m = make(t, float3(1.0, 2.0, 3.0)); float3 d; m.setup(d); return d * float3(3.0, 4.0, 5.0); }
[numthreads(1, 1, 1)]
void computeMain() { __bwd_diff(eval)(0, float3(1.0)); __bwd_diff(eval)(1, float3(1.0)); }
"""
    assert _run(tmp_path, capsys, src) == [2.0 * 3.0, 2.0 * 4.0, 2.0 * 5.0, 0.0]  # d data / d albedo = 2
