"""Smaller pieces of Slang that real programs use: vector conversions between ints and floats,
`static const` array sizes, `fwd_diff(S.method)`, matrix truncation, `p->x` on a vector
pointer, `let r = <void call>`, and custom backward derivatives reached inside branches and of
functions that write buffers. Expected values are worked out by hand or by numpy here."""

from __future__ import annotations

import numpy as np
import pytest
from slang_harness import Compiled, compile_error

from diffc import cli


def _run(tmp_path, capsys, body: str, globals_: str = "", n: int = 4) -> list[float]:
    src = f"""{globals_}
//TEST_INPUT:ubuffer(data=[{' '.join('0' * n)}], stride=4):out,name=outputBuffer
RWStructuredBuffer<float> outputBuffer;
[numthreads(1, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID) {{
{body}
}}
"""
    path = tmp_path / "k.slang"
    path.write_text(src)
    assert cli.main(["run", str(path)]) == 0, capsys.readouterr().err
    return [float(v) for v in capsys.readouterr().out.split()[2:]]


def test_vector_conversions_between_ints_and_floats(tmp_path, capsys):
    body = """
    uint2 u = (uint2)float2(1.5, 2.5);
    int2 i = (int2)float2(-1.5, 2.5);
    float2 f = (float2)uint2(7, 4000000000);
    float2 b = (float2)bool2(false, true);
    outputBuffer[0] = u.y; outputBuffer[1] = i.x; outputBuffer[2] = f.y; outputBuffer[3] = b.y;"""
    assert _run(tmp_path, capsys, body) == [2.0, -1.0, np.float32(4e9), 1.0]


def test_static_const_int_is_an_array_size(tmp_path, capsys):
    globals_ = "static const uint levels = 3;\nfloat total(float a[levels]) { return a[0] + a[1] + a[2]; }"
    body = "float a[levels] = { 1.0, 2.0, 4.0 }; outputBuffer[0] = total(a);"
    assert _run(tmp_path, capsys, body, globals_, n=1) == [7.0]


def test_differentiating_a_method_through_its_type(tmp_path, capsys):
    globals_ = """
struct A : IDifferentiable {
    float x;
    [Differentiable] float f(float y) { return x * x * y; }
    [Differentiable] static float s(float y) { return y * y; }
};"""
    body = """
    A a = { 2.0 };
    A.Differential da = { 1.0 };
    let r = fwd_diff(A.f)(DifferentialPair<A>(a, da), diffPair(3.0, 0.0));
    outputBuffer[0] = r.p;
    outputBuffer[1] = r.d;
    outputBuffer[2] = fwd_diff(A::s)(diffPair(5.0, 1.0)).d;"""
    # x^2 y = 12; d/dx along x: 2 x y = 12; d(y^2)/dy at 5 = 10
    assert _run(tmp_path, capsys, body, globals_, n=3) == [12.0, 12.0, 10.0]


def test_matrix_constructor_truncates_to_the_upper_left_block():
    src = "[Differentiable] float2 f(float3 x, float3 y) { float2x3 m = float2x3(x, y); let s = float2x2(m); return s[0] + 2.0 * s[1]; }"
    c = Compiled(src, "f")
    x, y = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    (r,) = c.primal([x, y])
    np.testing.assert_allclose(r, x[:2] + 2 * y[:2])
    c.check_derivatives([x, y])


def test_arrow_on_a_pointer_to_a_vector_reads_a_component():
    src = "[Differentiable] float f(float x, no_diff float4* p) { return x * (p->x + p->w); }"
    from diffc.frontend import compile_slang

    text = str(compile_slang(src, "p.slang"))
    assert text.count("memref.load") == 2


def test_let_may_hold_the_nothing_a_void_call_returns(tmp_path, capsys):
    globals_ = """
struct A : IDifferentiable { float x; float y; };
[Differentiable] float f(A a) { return a.x * a.y; }"""
    body = """
    A a = { 2.0, 3.0 };
    var p = diffPair(a);
    let rs = bwd_diff(f)(p, 1.0);
    outputBuffer[0] = p.d.x;
    outputBuffer[1] = p.d.y;"""
    assert _run(tmp_path, capsys, body, globals_, n=2) == [3.0, 2.0]


def test_custom_backward_with_a_buffer_write_inside_a_branch_and_loop(tmp_path, capsys):
    globals_ = """
RWStructuredBuffer<float> log;
[BackwardDerivative(set_bwd)]
void set(uint i, float x) { log[i] = x; }
void set_bwd(uint i, inout DifferentialPair<float> x) { x = DifferentialPair<float>(x.p, 1.0f); }
[Differentiable]
void run(uint i, float x) {
    for (int k = 0; k < 1; k++) { if (i == 0) { x = x * 2.0f; } }
    if (i == 0) { set(i, x); }
}
//TEST_INPUT:ubuffer(data=[0], stride=4):name=log"""
    body = """
    DifferentialPair<float> a = DifferentialPair<float>(1.0, 0.0);
    bwd_diff(run)(0, a);
    outputBuffer[0] = a.d;"""
    # set's custom derivative gives 1 for its x, which is 2 * run's x
    assert _run(tmp_path, capsys, body, globals_, n=1) == [2.0]


@pytest.mark.parametrize("mode", ["fwd", "bwd"])
def test_a_buffer_write_in_a_function_with_only_a_custom_derivative_of_that_mode_is_fine(mode):
    from diffc.diagnostics import DiffcError
    from diffc.frontend import compile_slang

    src = f"""
RWStructuredBuffer<float> out;
DifferentialPair<float> g_fwd(DifferentialPair<float> x) {{ return diffPair(x.p, 3.0 * x.d); }}
void g_bwd(inout DifferentialPair<float> x, float d) {{ x = diffPair(x.p, 3.0 * d); }}
[{'ForwardDerivative(g_fwd)' if mode == 'fwd' else 'BackwardDerivative(g_bwd)'}]
float g(float x) {{ out[0] = x; return 3.0 * x; }}
[Differentiable] float f(float x) {{ return g(x); }}
void use() {{ {'fwd_diff(f)(diffPair(1.0, 1.0));' if mode == 'fwd' else 'var p = diffPair(1.0); bwd_diff(f)(p, 1.0);'} }}
"""
    compile_slang(src, "w.slang")
    other = "bwd" if mode == "fwd" else "fwd"
    wrong = src.replace("void use() {", "void use2() { " + (
        "fwd_diff(f)(diffPair(1.0, 1.0));" if other == "fwd" else "var q = diffPair(1.0); bwd_diff(f)(q, 1.0);") + " }\nvoid use() {")
    with pytest.raises(DiffcError, match="E0006"):  # the other mode differentiates g's body
        compile_slang(wrong, "w.slang")


def test_buffers_of_structs_and_arrays_hold_consecutive_scalars(tmp_path, capsys):
    globals_ = """
struct V { float a; float2 b; };
//TEST_INPUT:ubuffer(data=[1 2 3 4 5 6], stride=4):name=verts
RWStructuredBuffer<V> verts;
//TEST_INPUT:ubuffer(data=[0 0 0 0], stride=4):name=pairs
RWStructuredBuffer<float[2]> pairs;
[Differentiable] float f(float x, no_diff V v) { return x * v.a + v.b.y; }"""
    body = """
    V v = verts[1];
    verts[0].b.x = 10.0;
    pairs[1] = { 7.0, 8.0 };
    outputBuffer[0] = v.a + 10 * v.b.x;
    outputBuffer[1] = verts[0].b.x + pairs[1][1];
    outputBuffer[2] = fwd_diff(f)(diffPair(2.0, 1.0), verts[1]).d;
    outputBuffer[3] = verts[1].b.y;"""
    # element 1 of verts is (4, 5, 6); element 0's b.x is written; df/dx = v.a
    assert _run(tmp_path, capsys, body, globals_) == [54.0, 18.0, 4.0, 6.0]


def test_a_buffer_of_structs_of_mixed_scalars_is_refused_with_the_reason(tmp_path):
    from diffc.diagnostics import DiffcError
    from diffc.frontend import compile_slang

    with pytest.raises(DiffcError, match=r"m\.slang:2:1: error\[E0008\]: a buffer of M is not supported"):
        compile_slang("struct M { half a; int b; };\nRWStructuredBuffer<M> ms;\n", "m.slang")


def test_constref_parameters_and_matrix_layout_qualifiers():
    src = """
    [Differentiable] float f(__constref float3x3 m, float x, no_diff __constref float y) { return m[0][1] * x * y; }
    [Differentiable] float g(row_major float3x3 w, float x) { column_major float3x3 v = w; return v[2][2] * x; }
    """
    c = Compiled(src, "f")
    m = [np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]), np.array([7.0, 8.0, 9.0])]
    assert c.primal(m + [1.5, 2.0])[0] == pytest.approx(6.0)
    c.check_derivatives(m + [1.5, 2.0])
    Compiled(src, "g").check_derivatives(m + [0.5])


@pytest.mark.parametrize("decl,name", [("SamplerComparisonState s;", "SamplerComparisonState"), ("Texture3D t;", "Texture3D")])
def test_known_slang_types_that_are_not_supported_are_named(decl, name):
    from diffc.diagnostics import DiffcError
    from diffc.frontend import compile_slang

    with pytest.raises(DiffcError, match=rf"t\.slang:1:\d+: error\[E0008\]: type '{name}' is not supported"):
        compile_slang(f"void f() {{ {decl} }}", "t.slang")


def test_a_loop_whose_body_always_leaves_runs_once_in_reverse_mode():
    src = """
    [BackwardDifferentiable]
    float f(float x) {
        float y = 0.0;
        for (;;) {
            if (x == 0.0) break;
            y += x * x;
            if (x < 1.0) { y += 2.0 * x; }
            break;
        }
        while (true) { y = y * x; break; }
        return y;
    }"""
    c = Compiled(src, "f")
    for x in (0.5, 1.5, -2.0):
        want = (x * x + (2 * x if x < 1.0 else 0.0)) * x
        assert c.primal([x])[0] == pytest.approx(want)
        c.check_derivatives([x])


def test_a_loop_that_may_continue_still_needs_a_bound():
    from diffc.diagnostics import DiffcError
    from diffc.frontend import compile_slang

    src = "[BackwardDifferentiable] float f(float x) { for (;;) { if (x > 1.0) continue; break; } return x; }"
    with pytest.raises(DiffcError, match=r"E0007.*'for' loop"):
        compile_slang(src, "c.slang")


def test_select_chooses_per_condition_and_differentiates_the_chosen_side():
    src = """
    [Differentiable] float f(float k, float y) { return select(k > 0.0, k * y, 0.5 * y); }
    [Differentiable] float3 g(float3 a, float3 b) { return select(a > b, a * a, b); }
    """
    c = Compiled(src, "f")
    for k, y in [(2.0, 3.0), (-1.0, 3.0)]:
        assert c.primal([k, y])[0] == pytest.approx(k * y if k > 0 else 0.5 * y)
        c.check_derivatives([k, y])
    g = Compiled(src, "g")
    a, b = np.array([1.0, -2.0, 0.5]), np.array([0.0, 1.0, 0.25])
    np.testing.assert_allclose(g.primal([a, b])[0], np.where(a > b, a * a, b))
    g.check_derivatives([a, b])


def test_interlocked_add_max_min_on_int_buffers(tmp_path, capsys):
    globals_ = """
//TEST_INPUT:ubuffer(data=[5 5 5], stride=4):name=counts
RWStructuredBuffer<int> counts;"""
    body = """
    int before;
    InterlockedAdd(counts[0], 3, before);
    InterlockedMax(counts[1], 9);
    InterlockedMin(counts[2], -2);
    outputBuffer[0] = before; outputBuffer[1] = counts[0]; outputBuffer[2] = counts[1]; outputBuffer[3] = counts[2];"""
    assert _run(tmp_path, capsys, body, globals_) == [5.0, 8.0, 9.0, -2.0]


def test_a_declared_struct_runs_its_parameterless_constructor_and_interfaces_may_require_one(tmp_path, capsys):
    globals_ = """
interface IMake : IDifferentiable {
    __init();
    property float v { get; }
    float get(float y);
};
struct Four : IMake {
    float x;
    __init() { x = 4.0; }
    property float v { get { return x + 1.0; } }
    float get(float y) { return x * y; }
};
struct Plain { float a; };
float use<T : IMake>(float y) { T t; return t.get(y) + t.v; }"""
    body = """
    Four f;
    Plain p;
    outputBuffer[0] = f.x;
    outputBuffer[1] = use<Four>(2.0);
    outputBuffer[2] = p.a;"""
    # __init sets x = 4; get(2) = 8 plus the property 5; a struct without constructors starts at zero
    assert _run(tmp_path, capsys, body, globals_, n=3) == [4.0, 13.0, 0.0]


def test_a_generic_function_named_with_type_and_int_arguments_and_unused(tmp_path, capsys):
    globals_ = """
[Differentiable] T scaled<T : IFloat, let N : int>(T x) { return x * x * T(N); }"""
    body = """
    float keep = 5.0;
    unused(keep);
    outputBuffer[0] = fwd_diff(scaled<float, 3>)(diffPair(2.0, 1.0)).d;"""
    assert _run(tmp_path, capsys, body, globals_, n=1) == [12.0]  # d(3 x^2)/dx at 2


STRUCT_STATICS = """
static const uint N = 4;
static const uint M = 6;
struct S {
    static const uint K = N;
    static const uint H = N / 4;
    float sum(float code[K]) { float s = 0; for (uint i = 0; i < K; i++) s += code[i]; return s; }
};
"""


def test_struct_static_consts_size_arrays_and_bound_loops(tmp_path, capsys):
    # `S.K * S.H + M` = 10 elements; inside S, `K` names S's own static
    body = """
    float a[S.K * S.H + M];
    for (int i = 0; i < S.K * S.H + M; i++) a[i] = i;
    float c[S.K] = { 1.0, 2.0, 3.0, 4.0 };
    S s;
    outputBuffer[0] = a[9];
    outputBuffer[1] = s.sum(c);"""
    assert _run(tmp_path, capsys, body, STRUCT_STATICS, n=2) == [9.0, 10.0]


def test_a_loop_bounded_by_struct_static_consts_is_differentiated_in_both_modes():
    # bwd_diff needs the trip count (its tape): `S.K + M` is 10, fixed by the text
    src = STRUCT_STATICS + """
[Differentiable] float f(float x) { float s = 0; for (int i = 0; i < S.K + M; i++) s += sin(x * i); return s; }"""
    c = Compiled(src, "f")
    (r,) = c.primal([0.3])
    np.testing.assert_allclose(r, sum(np.sin(0.3 * i) for i in range(10)), rtol=1e-12)
    c.check_derivatives([0.3])


def test_static_consts_defined_through_each_other_are_refused_where_written(tmp_path, capsys):
    globals_ = "static const int A = B;\nstatic const int B = A;"
    path = tmp_path / "k.slang"
    path.write_text(globals_ + "\n[numthreads(1, 1, 1)] void computeMain() { float x[A]; }\n")
    assert cli.main(["run", str(path)]) == 1
    err = capsys.readouterr().err
    assert "k.slang:1:22: error[E0002]: undefined name 'B'" in err  # (no endless evaluation)


def test_a_void_function_returns_a_void_call(tmp_path, capsys):
    globals_ = """
void put(inout float a, float v) { a = v; }
void putTwice(inout float a, float v) { if (v > 1.0) return put(a, 2.0 * v); return put(a, v); }"""
    body = "float a = 0.0, b = 0.0; putTwice(a, 3.0); putTwice(b, 0.5); outputBuffer[0] = a; outputBuffer[1] = b;"
    assert _run(tmp_path, capsys, body, globals_, n=2) == [6.0, 0.5]


def test_a_group_barrier_orders_the_groups_global_memory(tmp_path, capsys):
    src = """
//TEST_INPUT:ubuffer(data=[0 0 0 0], stride=4):name=scratch
RWStructuredBuffer<float> scratch;
//TEST_INPUT:ubuffer(data=[0 0 0 0 0 0 0 0], stride=4):out,name=outputBuffer
RWStructuredBuffer<float> outputBuffer;
[numthreads(4, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID) {
    scratch[tid.x] = 10.0 * (tid.x + 1);
    AllMemoryBarrierWithGroupSync();
    outputBuffer[tid.x] = scratch[(tid.x + 1) % 4];   // a neighbour's write, after the barrier
    GroupMemoryBarrierWithGroupSync();
    DeviceMemoryBarrierWithGroupSync();
    outputBuffer[4 + tid.x] = tid.x;
}
"""
    path = tmp_path / "k.slang"
    path.write_text(src)
    assert cli.main(["run", str(path)]) == 0, capsys.readouterr().err
    assert [float(v) for v in capsys.readouterr().out.split()[2:]] == [20.0, 30.0, 40.0, 10.0, 0.0, 1.0, 2.0, 3.0]


def test_a_global_of_a_struct_without_fields_calls_its_methods(tmp_path, capsys):
    globals_ = STRUCT_STATICS + "static S gS;"
    body = "float c[4] = { 1.0, 2.0, 3.0, 5.0 }; outputBuffer[0] = gS.sum(c);"
    assert _run(tmp_path, capsys, body, globals_, n=1) == [11.0]


def test_a_static_global_with_state_is_refused_where_declared(tmp_path, capsys):
    path = tmp_path / "k.slang"
    path.write_text("static float counter;\n[numthreads(1, 1, 1)] void computeMain() { counter += 1.0; }\n")
    assert cli.main(["run", str(path)]) == 1
    err = capsys.readouterr().err
    assert "k.slang:1:1: error[E0008]: global 'counter' of type float is not supported" in err
    assert "Traceback" not in err


def test_ptr_of_t_is_a_pointer_to_device_memory():
    from diffc.frontend import compile_slang

    src = "[Differentiable] float f(float x, no_diff {P} p) {{ return x * (p[0] + p[2]); }}"
    plain = str(compile_slang(src.format(P="float*"), "p.slang"))
    assert str(compile_slang(src.format(P="Ptr<float>"), "p.slang")) == plain
    assert str(compile_slang(src.format(P="Ptr<float, Access::ReadWrite, AddressSpace::Device>"), "p.slang")) == plain


def test_a_ptr_into_group_shared_memory_is_refused_where_written():
    msg = compile_error("float f(Ptr<float, Access::Read, AddressSpace::GroupShared> p) { return p[0]; }", "p.slang")
    assert "p.slang:1:34: error[E0008]: a pointer into address space 'GroupShared' is not supported" in msg


def test_a_uniform_pointer_global_reads_its_buffer_through_a_cast_pointer(tmp_path, capsys):
    src = """
//TEST_INPUT: set ptr = ubuffer(data=[1.0 2.0 3.0 5.0], stride=4)
uniform float* ptr;
//TEST_INPUT:ubuffer(data=[0 0 0], stride=4):out, name outputBuffer
RWStructuredBuffer<float> outputBuffer;
[Differentiable] float f(float x, no_diff float4* v) { return x * x * (v->y + v->w); }
[numthreads(1, 1, 1)]
void computeMain() {
    float4* v = (float4*)ptr;   // the same floats, four at a time
    var dp = diffPair(3.0);
    bwd_diff(f)(dp, v, 1.0);
    outputBuffer[0] = f(3.0, v);
    outputBuffer[1] = dp.d;
    outputBuffer[2] = ptr[2];
}
"""
    path = tmp_path / "k.slang"
    path.write_text(src)
    assert cli.main(["run", str(path)]) == 0, capsys.readouterr().err
    # x^2 (2 + 5) = 63; d/dx = 2 x 7 = 42
    assert [float(v) for v in capsys.readouterr().out.split()[2:]] == [63.0, 42.0, 3.0]


def test_a_pointer_cast_between_scalar_types_is_refused():
    msg = compile_error("float f(float* p) { int* q = (int*)p; return q[0]; }", "p.slang")
    assert "p.slang:1:30: error[E0003]: cannot cast float* to int*" in msg


def test_a_ptr_without_a_type_argument_is_refused_where_written():
    msg = compile_error("float f(Ptr<3> p) { return 1.0; }", "p.slang")
    assert "p.slang:1:9: error[E0003]: Ptr<T, ...> needs a type T as its first argument" in msg


def test_get_count_of_an_array_is_its_length_per_instance(tmp_path, capsys):
    globals_ = "float count<let N : int>(float a[N]) { return a.getCount(); }"
    body = "float a[5] = {1, 2, 3, 4, 5}; float b[3] = {1, 2, 3}; outputBuffer[0] = count(a); outputBuffer[1] = count(b);"
    assert _run(tmp_path, capsys, body, globals_, n=2) == [5.0, 3.0]


def test_a_loop_bounded_by_get_count_is_differentiated_in_both_modes():
    src = "[Differentiable] float f(float x) { float a[4] = {x, 2.0 * x, x * x, 1.0}; float s = 0.0; " \
          "for (int i = 0; i < a.getCount(); i++) s += sin(a[i]); return s; }"
    c = Compiled(src, "f")
    (r,) = c.primal([0.4])
    np.testing.assert_allclose(r, np.sin(0.4) + np.sin(0.8) + np.sin(0.16) + np.sin(1.0), rtol=1e-12)
    c.check_derivatives([0.4])


def test_get_count_of_an_array_a_call_returns_is_refused():
    src = "float[3] make() { float a[3] = {1, 2, 3}; return a; } int f() { return make().getCount(); }"
    assert "error[E0008]: getCount() of an array a call returns is not supported" in compile_error(src, "p.slang")


MIXED_OVERLOADS = """
struct A : IDifferentiable {
    float data[3];
    [mutating] [Differentiable] void write(float value, inout uint offset) { data[offset++] = value; }
    [mutating] [Differentiable] void write<let N : int>(vector<float, N> value, inout uint offset) {
        [ForceUnroll] for (uint i = 0; i < N; i++) write(value[i], offset);   // the plain one
    }
    float which(float x) { return 1.0; }
    float which<let N : int>(vector<float, N> v) { return 2.0 + N; }
};
"""


def test_a_generic_method_beside_plain_overloads_is_chosen_by_its_arguments(tmp_path, capsys):
    body = """
    A a;
    outputBuffer[0] = a.which(0.5);          // plain: takes a float as it is
    outputBuffer[1] = a.which(float2(1, 2)); // generic, N = 2
    outputBuffer[2] = a.which(3);            // plain, the int converted (N cannot come from an int)"""
    assert _run(tmp_path, capsys, body, MIXED_OVERLOADS, n=3) == [1.0, 4.0, 1.0]


def test_a_generic_method_calling_its_plain_overload_is_differentiated_in_both_modes():
    src = MIXED_OVERLOADS + """
[Differentiable] float3 run(float3 x) {
    A a; a.data[0] = 0.0; a.data[1] = 0.0; a.data[2] = 0.0;
    uint offset = 0;
    a.write(x * x, offset);
    return float3(a.data[0], 2.0 * a.data[1], a.data[2]);
}"""
    c = Compiled(src, "run")
    x = np.array([1.0, 2.0, 3.0])
    (r,) = c.primal([x])
    np.testing.assert_allclose(r, x * x * np.array([1.0, 2.0, 1.0]), rtol=1e-12)
    c.check_derivatives([x])


def test_two_generic_overloads_of_a_method_the_more_specific_wins():
    src = """struct S { [Differentiable] float f<T>(T x) { return 1.0; }
                    [Differentiable] float f<let N : int>(vector<float, N> v) { return 2.0 + N + v.x; } };
    [Differentiable] float g(float x) { S s; return s.f(x) * 10.0 + s.f(float3(x, x, x)); }"""
    c = Compiled(src, "g")
    assert c.primal([0.5])[0] == pytest.approx(1.0 * 10.0 + 5.5)
    c.check_derivatives([0.5])


FREE_OVERLOADS = """
float which(float x) { return 1.0; }
float which<let N : int>(vector<float, N> v) { return 2.0 + N; }
[Differentiable] float sq(float x) { return x * x * x; }
[Differentiable] float sq<let N : int>(vector<float, N> v) { return dot(v, v); }
"""


def test_a_generic_function_beside_plain_overloads_is_chosen_by_its_arguments(tmp_path, capsys):
    body = "outputBuffer[0] = which(0.5); outputBuffer[1] = which(float3(1, 2, 3)); outputBuffer[2] = which(3);"
    assert _run(tmp_path, capsys, body, FREE_OVERLOADS, n=3) == [1.0, 5.0, 1.0]


def test_generic_and_plain_overloads_are_differentiated_in_both_modes():
    src = FREE_OVERLOADS + "[Differentiable] float f(float x, float2 v) { return sq(x) + sq(v * x); }"
    c = Compiled(src, "f")
    x, v = 0.7, np.array([1.5, -2.0])
    (r,) = c.primal([x, v])
    np.testing.assert_allclose(r, x**3 + np.dot(v * x, v * x), rtol=1e-12)
    c.check_derivatives([x, v])


def test_two_generic_overloads_of_a_function_are_refused():
    src = "float f<T>(T x) { return 1.0; } float f<let N : int>(vector<float, N> v) { return 2.0; }"
    msg = compile_error(src, "p.slang")
    assert "p.slang:1:39: error[E0008]: overloading generic function 'f' with another generic one is not supported" in msg
