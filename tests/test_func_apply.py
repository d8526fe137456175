"""`__func_extension __apply(f)`: a forward pass returning (result, context) and the context's
`operator()` as the backward pass; Tuple / makeTuple from the prelude; calling a value whose
struct declares `operator()`. Expected values are the custom rules as written, worked out here."""

from __future__ import annotations

import pytest

from diffc import cli
from diffc.diagnostics import DiffcError
from diffc.frontend import compile_slang

HEAD = """
//TEST_INPUT:ubuffer(data=[0 0 0 0], stride=4):out,name=outputBuffer
RWStructuredBuffer<float> outputBuffer;
"""


def _run(tmp_path, capsys, src: str) -> list[float]:
    path = tmp_path / "k.slang"
    path.write_text(HEAD + src)
    assert cli.main(["run", str(path)]) == 0, capsys.readouterr().err
    return [float(v) for v in capsys.readouterr().out.split()[2:]]


def test_apply_context_is_the_backward_pass(tmp_path, capsys):
    src = """
float cube(float x) { return x * x * x; }
struct CubeCtx { float sqr; float k; void operator()(out float dx, float dOut) { dx = dOut * k * sqr; } };
__func_extension __apply(cube)(float x) -> Tuple<float, CubeCtx> { let s = x * x; return makeTuple(s * x, CubeCtx(s, 3.0)); }
[numthreads(1, 1, 1)]
void computeMain() {
    var p = diffPair(2.0, 0.0);
    bwd_diff(cube)(p, 0.5);
    outputBuffer[0] = p.d;
    outputBuffer[1] = cube(2.0);
}"""
    assert _run(tmp_path, capsys, src)[:2] == [0.5 * 3.0 * 4.0, 8.0]  # dOut * 3 * x^2, and the primal


def test_apply_picks_the_overload_and_skips_int_parameters(tmp_path, capsys):
    src = """
float f(float x) { return x * x; }
float f(float x, int n, float y) { return x * y * n; }
struct C1 { float x; void operator()(out float dx, float dOut) { dx = dOut * 2.0 * x; } };
struct C2 { float x; float y; int n; void operator()(out float dx, out float dy, float dOut) { dx = dOut * y * n; dy = dOut * x * n; } };
__func_extension __apply(f)(float x) -> Tuple<float, C1> { return makeTuple(f(x), C1(x)); }
__func_extension __apply(f)(float x, int n, float y) -> Tuple<float, C2> { return makeTuple(f(x, n, y), C2(x, y, n)); }
[numthreads(1, 1, 1)]
void computeMain() {
    var a = diffPair(3.0, 0.0);
    bwd_diff(f)(a, 1.0);
    var b = diffPair(3.0, 0.0);
    var c = diffPair(4.0, 0.0);
    bwd_diff(f)(b, 2, c, 1.0);
    outputBuffer[0] = a.d; outputBuffer[1] = b.d; outputBuffer[2] = c.d;
}"""
    assert _run(tmp_path, capsys, src)[:3] == [6.0, 8.0, 6.0]


def test_apply_of_a_generic_function_instance(tmp_path, capsys):
    src = """
T sq<T : IArithmetic>(T x) { return x * x; }
struct C { float x; void operator()(out float dx, float dOut) { dx = dOut * 2.0 * x; } };
__func_extension __apply(sq<float>)(float x) -> Tuple<float, C> { return makeTuple(x * x, C(x)); }
[numthreads(1, 1, 1)]
void computeMain() { var p = diffPair(4.0, 0.0); bwd_diff(sq<float>)(p, 2.0); outputBuffer[0] = p.d; }"""
    assert _run(tmp_path, capsys, src)[0] == 16.0


def test_tuples_and_callable_structs_in_plain_code(tmp_path, capsys):
    src = """
struct Scale { float k; float operator()(float x) { return k * x; } };
[numthreads(1, 1, 1)]
void computeMain() {
    let t = makeTuple(2.5, 4);
    Scale s = { 3.0 };
    outputBuffer[0] = t._0 + t._1;
    outputBuffer[1] = s(2.0);
}"""
    assert _run(tmp_path, capsys, src)[:2] == [6.5, 6.0]


def test_apply_must_return_a_tuple():
    src = "float f(float x) { return x; }\n__func_extension __apply(f)(float x) -> float { return x; }\n"
    with pytest.raises(DiffcError, match=r"a\.slang:2:\d+: error\[E0001\]: __func_extension __apply must return Tuple"):
        compile_slang(src, "a.slang")


def test_apply_of_a_method_passes_this_and_its_context_gives_the_gradient_of_self(tmp_path, capsys):
    # the context scales on purpose (k): the numbers show the custom pass ran, not the body's derivative
    src = """
struct V2 : IDifferentiable {
    typedef V2 Differential;
    float x; float y;
    float dotw(V2 w) { return x * w.x + y * w.y; }
};
struct DotCtx {
    V2 a; V2 b; float k;
    void operator()(out V2 da, out V2 db, float dOut) { da = V2(k * dOut * b.x, k * dOut * b.y); db = V2(dOut * a.x, dOut * a.y); }
};
__func_extension __apply(V2::dotw)(V2 w) -> Tuple<float, DotCtx> { return makeTuple(this.dotw(w), DotCtx(this, w, 10.0)); }
[numthreads(1, 1, 1)]
void computeMain() {
    var a = diffPair(V2(2.0, 3.0), V2(0.0, 0.0));
    var b = diffPair(V2(4.0, 5.0), V2(0.0, 0.0));
    bwd_diff(V2::dotw)(a, b, 0.5);
    outputBuffer[0] = a.d.x; outputBuffer[1] = a.d.y; outputBuffer[2] = b.d.x; outputBuffer[3] = b.d.y;
}"""
    assert _run(tmp_path, capsys, src) == [10 * 0.5 * 4.0, 10 * 0.5 * 5.0, 0.5 * 2.0, 0.5 * 3.0]


def test_a_generic_apply_serves_every_instance_of_the_generic_function(tmp_path, capsys):
    src = """
T cube<T : IArithmetic>(T x) { return x * x * x; }
struct CubeCtx<T : IFloat> where T.Differential == T {
    T sqr;
    void operator()(out T.Differential dx, T.Differential dOut) {
        dx = __slang_noop_cast<T.Differential, T>(__slang_noop_cast<T, T.Differential>(dOut) * T(3.0) * sqr);
    }
};
__func_extension<T : IFloat> __apply(cube<T>)(T x) -> Tuple<T, CubeCtx<T>> where T.Differential == T {
    let s = x * x;
    return makeTuple(s * x, CubeCtx<T>(s));
}
[numthreads(1, 1, 1)]
void computeMain() {
    var p = diffPair(2.0f, 0.0f);
    bwd_diff(cube<float>)(p, 1.0f);
    var q = diffPair(half(3.0), half(0.0));
    bwd_diff(cube<half>)(q, half(0.5));
    outputBuffer[0] = p.d; outputBuffer[1] = float(q.d);
}"""
    assert _run(tmp_path, capsys, src)[:2] == [3 * 2.0**2, 0.5 * 3 * 3.0**2]


def test_noop_cast_between_different_types_is_an_error():
    src = "float f(int x) { return __slang_noop_cast<float, int>(x); }\n"
    with pytest.raises(DiffcError, match=r"a\.slang:1:25: error\[E0003\]: __slang_noop_cast from int to float: "
                       "the types must be the same"):
        compile_slang(src, "a.slang")
