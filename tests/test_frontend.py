"""The Slang front end on the seeds' programs: they parse, type-check and lower to IR that
verifies, has the shape docs/architecture.md asks for, and (where no derivative is involved)
computes the right numbers in xDSL's interpreter."""

from __future__ import annotations

import io
import math

import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.math import MathFunctions
from xdsl.interpreters.printf import PrintfFunctions
from xdsl.interpreters.scf import ScfFunctions

from diffc.dialects import diff
from diffc.frontend import compile_slang

SQUARE = """
[Differentiable]
float square(float x, float y)
{
    return x * x + y * y;
}
"""


def lower(src: str) -> ModuleOp:
    m = compile_slang(src, "test.slang")
    m.verify()
    diff.verify_function_facts(m)
    return m


def funcs(m: ModuleOp) -> dict[str, func.FuncOp]:
    return {op.sym_name.data: op for op in m.ops if isinstance(op, func.FuncOp)}


def ops_named(op, name: str) -> list:
    return [o for o in op.walk() if o.name == name]


def run(m: ModuleOp, fn: str, *args):
    out = io.StringIO()
    interp = Interpreter(m, file=out)
    for impl in (ArithFunctions(), FuncFunctions(), MathFunctions(), PrintfFunctions(), ScfFunctions()):
        interp.register_implementations(impl)
    return interp.call_op(fn, args), out.getvalue()


def test_seed000_primal_main_prints_25():
    m = lower(SQUARE + """
void main()
{
    float x = 3.0f;
    float y = 4.0f;
    float result = square(x, y);
    printf("Result: %f\\n", result);
}
""")
    _, out = run(m, "main")
    assert out.startswith("Result: 25")
    (p,) = ops_named(m, "printf.print_format")
    assert p.attributes["c_format"].data == "Result: %f\n"


def test_seed000_forward_square():
    m = lower(SQUARE + """
void main() {
    let x = diffPair(3.0, 1.0);
    let y = diffPair(4.0, 0.0);
    let result = fwd_diff(square)(x, y);
    printf("dResult: %f\\n", result.d);
}""")
    f = funcs(m)
    assert diff.DIFFERENTIABLE in f["square"].attributes
    (fd,) = ops_named(f["main"], "diff.fwd_diff")
    assert fd.callee.root_reference.data == "square"
    assert [str(o.type) for o in fd.operands] == ["!diff.pair<f32>"] * 2
    (pr,) = ops_named(f["main"], "printf.print_format")
    assert isinstance(pr.operands[0].owner, diff.DifferentialOp)
    assert pr.operands[0].owner.pair is fd.results[0]


def test_seed000_backward_square_overwrites_d():
    m = lower(SQUARE + """
void main() {
    var x = diffPair(3.0, 0.0);
    var y = diffPair(4.0, 0.0);
    let dL_dSquare = 1.0f;
    bwd_diff(square)(x, y, dL_dSquare);
    printf("dL/dx: %f, dL/dy: %f\\n", x.d, y.d);
}""")
    main = funcs(m)["main"]
    (bd,) = ops_named(main, "diff.bwd_diff")
    assert len(bd.operands) == 3 and len(bd.results) == 2
    (pr,) = ops_named(main, "printf.print_format")
    # each printed .d is the differential of a pair rebuilt from the gradient
    for printed, grad in zip(pr.operands, bd.results):
        pair = printed.owner.pair.owner
        assert isinstance(pair, diff.MakePairOp) and pair.differential is grad


def test_seed001_exp_forward():
    m = lower("""
[Differentiable]
float myFunc(float x, float y) { return exp(x * x + 2 * y + 2); }
void printMain() {
    let diffX = fwd_diff(myFunc)(diffPair(3.0, 1.0), diffPair(4.0, 0.0));
    printf("dF wrt x: %f\\n", diffX.d);
}""")
    assert len(ops_named(funcs(m)["myFunc"], "math.exp")) == 1
    res, _ = run(m, "myFunc", 3.0, 4.0)
    assert res[0] == pytest.approx(math.exp(19), rel=1e-6)


def test_seed001_backward_xxy():
    m = lower("""
[Differentiable]
float myFunc(float x, float y) { return x * x * y + y + 2; }
void printMain() {
    DifferentialPair<float> dpX = diffPair(3.0, 0.0);
    DifferentialPair<float> dpY = diffPair(4.0, 0.0);
    bwd_diff(myFunc)(dpX, dpY, 1.0);
    printf("%f %f\\n", dpX.d, dpY.d);
}""")
    res, _ = run(m, "myFunc", 3.0, 4.0)
    assert res[0] == 42.0
    (bd,) = ops_named(m, "diff.bwd_diff")
    assert [str(t) for t in bd.result_types] == ["f32", "f32"]


def test_seed000_point_struct_is_flattened():
    m = lower("""
struct Point : IDifferentiable { float x; float y; };
[Differentiable]
float square(Point p) { return p.x * p.x + p.y * p.y; }
void main() {
    var p = diffPair(Point(3.0, 4.0));
    bwd_diff(square)(p, 1.0);
    printf("%f %f\\n", p.d.x, p.d.y);
}""")
    sq = funcs(m)["square"]
    assert [str(t) for t in sq.function_type.inputs.data] == ["f32", "f32"]
    res, _ = run(m, "square", 3.0, 4.0)
    assert res[0] == 25.0
    (bd,) = ops_named(m, "diff.bwd_diff")
    assert len(bd.results) == 2


def test_no_diff_field_gets_no_diff_arg_attr():
    m = lower("""
struct P : IDifferentiable { float x; no_diff float w; };
[Differentiable]
float f(P p) { return p.x * p.w; }""")
    f = funcs(m)["f"]
    assert not diff.arg_is_differentiable(f, 1) and diff.arg_is_differentiable(f, 0)
    assert [str(t) for t in diff.bwd_signature(f).outputs.data] == ["f32"]


def test_seed000_custom_derivatives_have_derivative_signatures():
    m = lower("""
float square(float x, float y) { return x * x + y * y; }
[ForwardDerivativeOf(square)]
DifferentialPair<float> squareFwd(DifferentialPair<float> x, DifferentialPair<float> y)
{ return diffPair(square(x.p, y.p), 2.0f * (x.p * x.d + y.p * y.d)); }
[BackwardDerivativeOf(square)]
void squareBwd(inout DifferentialPair<float> x, inout DifferentialPair<float> y, float dOut)
{ x.d += 2.0f * x.p * dOut; y.d += 2.0f * y.p * dOut; }
""")
    f = funcs(m)
    sq = f["square"]
    assert diff.custom_derivative(sq, diff.FWD_DERIVATIVE) == "squareFwd"
    assert diff.custom_derivative(sq, diff.BWD_DERIVATIVE) == "squareBwd"
    assert f["squareFwd"].function_type == diff.fwd_signature(sq)
    assert f["squareBwd"].function_type == diff.bwd_signature(sq)


def test_seed000_getparam_buffers():
    m = lower("""
RWStructuredBuffer<float> paramBuffer;
RWStructuredBuffer<Atomic<float>> gradBuffer;
float getParam(int idx) { return paramBuffer[idx]; }
[BackwardDerivativeOf(getParam)]
void getParamBwd(int idx, float dOut) { gradBuffer[idx] += dOut; }
[Differentiable]
float compute(int idx) { float w = getParam(idx); return w * w; }
""")
    globs = {op.sym_name.data: op for op in m.ops if op.name == "memref.global"}
    assert set(globs) == {"paramBuffer", "gradBuffer"}
    assert "diffc.atomic" in globs["gradBuffer"].attributes
    f = funcs(m)
    assert f["getParamBwd"].function_type == diff.bwd_signature(f["getParam"])
    assert len(ops_named(f["getParamBwd"], "memref.atomic_rmw")) == 1
    assert len(ops_named(f["getParam"], "memref.load")) == 1


@pytest.mark.parametrize("x", [1.0, 2.0, 3.0, 4.0])
def test_seed003_polynomial_values(x):
    m = lower("""
[Differentiable]
float polynomial(float a, float b, float c, float x) { return a * x * x + b * x + c; }""")
    res, _ = run(m, "polynomial", 2.0, 8.0, -1.0, x)
    assert res[0] == 2 * x * x + 8 * x - 1


def test_loops_and_early_return_compute_right_values():
    m = lower("""
float f(float x, int n) {
    float acc = 0.0;
    for (int i = 0; i < n; i++) {
        if (i == 1) continue;
        acc += x * i;
        if (acc > 100.0) break;
    }
    int k = 0;
    while (k < 3) { k++; }
    do { acc += 1.0; } while (acc < 5.0);
    if (x < 0.0) return -1.0;
    switch (k) { case 3: acc += 10.0; break; default: acc = 0.0; break; }
    return acc + k;
}""")
    def ref(x, n):
        acc = 0.0
        for i in range(n):
            if i == 1:
                continue
            acc += x * i
            if acc > 100.0:
                break
        acc += 1.0
        while acc < 5.0:
            acc += 1.0
        if x < 0.0:
            return -1.0
        return acc + 10.0 + 3
    from diffc.interp import run_function

    for x, n in [(1.0, 4), (2.0, 0), (-1.0, 3), (30.0, 10)]:
        (res,) = run_function(m, "f", x, n)
        assert res == pytest.approx(ref(x, n)), (x, n)


def test_vectors_arrays_and_intrinsics_compute_right_values():
    from diffc.interp import run_function

    m = lower("""
float g(float a, int k) {
    float3 p = float3(a, 2.0, 3);
    p.xy = p.zx;
    float arr[3] = {1.0, 2.0, 3.0};
    arr[k] = 10;
    float3 c = cross(float3(1, 0, 0), float3(0, 1, 0));
    return dot(p, float3(1)) + arr[1] + c.z + length(float2(3, 4)) + lerp(0.0, 2.0, 0.25)
         + clamp(a, 0.0, 1.0) + smoothstep(0.0, 1.0, 0.5) + fmod(7.0, 3.0) + (k > 0 ? 100.0 : 0.0);
}""")
    for a, k in [(5.0, 1), (0.5, 0), (-2.0, 2)]:
        arr = [1.0, 2.0, 3.0]
        arr[k] = 10.0
        want = (3.0 + a + 3.0) + arr[1] + 1.0 + 5.0 + 0.5 + min(max(a, 0.0), 1.0) + 0.5 + 1.0 + (100.0 if k > 0 else 0.0)
        (res,) = run_function(m, "g", a, k)
        assert res == pytest.approx(want), (a, k)


CUSTOM = """
float square(float x, float y) { return x * x + y * y; }
[ForwardDerivativeOf(square)]
DifferentialPair<float> squareFwd(DifferentialPair<float> x, DifferentialPair<float> y)
{ return diffPair(square(x.p, y.p), 2.0f * (x.p * x.d + y.p * y.d)); }
[BackwardDerivativeOf(square)]
void squareBwd(inout DifferentialPair<float> x, inout DifferentialPair<float> y, float dOut)
{ x.d += 2.0f * x.p * dOut; y.d += 2.0f * y.p * dOut; }
"""
MAIN_FWD_BWD = """
void main() {
    let r = fwd_diff(square)(diffPair(3.0, 1.0), diffPair(4.0, 0.0));
    var x = diffPair(3.0, 0.0);
    var y = diffPair(4.0, 0.0);
    bwd_diff(square)(x, y, 1.0);
    printf("%f %f %f %f\\n", r.p, r.d, x.d, y.d);
}
"""


@pytest.mark.parametrize(
    "src,want",
    [
        (SQUARE + MAIN_FWD_BWD, [25.0, 6.0, 6.0, 8.0]),
        (CUSTOM + MAIN_FWD_BWD, [25.0, 6.0, 6.0, 8.0]),
        ("""
[Differentiable]
float myFunc(float x, float y) { return x * x * y + y + 2; }
void main() {
    var x = diffPair(3.0, 0.0);
    var y = diffPair(4.0, 0.0);
    bwd_diff(myFunc)(x, y, 1.0);
    let f = fwd_diff(myFunc)(diffPair(3.0, 1.0), diffPair(4.0, 1.0));
    printf("%f %f %f %f\\n", x.d, y.d, f.p, f.d);
}""", [24.0, 10.0, 42.0, 34.0]),
    ],
)
def test_seed_programs_end_to_end_through_the_passes(src, want):
    """The front end's IR through the compiler's pipeline (diffc.compiler.differentiate), then run."""
    from diffc.compiler import differentiate
    from diffc.interp import make_interpreter

    m = lower(src)
    differentiate(m)
    out = io.StringIO()
    interp = make_interpreter(m, [PrintfFunctions()])
    interp.file = out
    interp.call_op("main", ())
    got = [float(v) for v in out.getvalue().split()]
    assert got == pytest.approx(want)
