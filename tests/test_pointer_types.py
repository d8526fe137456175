"""Slang's differentiable pointer types: IDifferentiablePtrType structs, DifferentialPtrPair<T>,
custom backward derivatives that write gradients through the Differential's pointers, and the rule
that raw pointers are not differentiable. The seed's Scene/Mesh code runs in the interpreter
(float64) and, as examples/pointers, on PoCL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from diffc.dialects import diff

from slang_helpers import central_difference, expect_error, floats, front, funcs, lowered, ops_named, run

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "pointers"

SEED = """
struct Triangle { float4 v0, v1, v2; };
struct Mesh {
    Triangle *triangles;
    [Differentiable]
    float3 interpolate(int idx, float2 barycentric) {
        return
            triangles[idx].v0.xyz * barycentric.x +
            triangles[idx].v1.xyz * barycentric.y +
            triangles[idx].v2.xyz * (1.0f - barycentric.x - barycentric.y);
    }
};
struct DScene : IDifferentiablePtrType {
    typealias Differential = DScene;
    Mesh *meshes;
    int count;
};
struct Scene : IDifferentiablePtrType {
    typealias Differential = DScene;
    Mesh *meshes;
    int count;
};
void __bwd_foo(DifferentialPtrPair<Scene> p, float grad) {
    p.d.meshes[0].triangles[0].v0.x = grad;
}
[BackwardDerivative(__bwd_foo)]
float foo(Scene scene) {
    return scene.meshes[0].interpolate(0, float2(0.5f, 0.5f)).x;
}
"""

# Callers of the seed: the three ways to build the pointer pair, a generated derivative through a
# function with an IDifferentiablePtrType parameter, and the method's derivatives.
CALLERS = SEED + """
float viaCtor(Scene s, DScene ds, float dOut)
{
    bwd_diff(foo)(DifferentialPtrPair<Scene>(s, ds), dOut);
    return foo(s);
}
void viaHelper(Scene s, DScene ds, float dOut) { bwd_diff(foo)(diffPtrPair(s, ds), dOut); }
void viaInitList(Scene s, DScene ds, float dOut)
{
    DifferentialPtrPair<Scene> pp = { s, ds };
    bwd_diff(foo)(pp, dOut);
}

[Differentiable]
float bar(Scene s, float x) { return foo(s) * x * x; }
float barGrad(Scene s, DScene ds, float x, float dOut)
{
    var px = diffPair(x);
    bwd_diff(bar)(DifferentialPtrPair<Scene>(s, ds), px, dOut);
    return px.d;
}
float barTangent(Scene s, DScene ds, float x, float dx)
{
    return fwd_diff(bar)(DifferentialPtrPair<Scene>(s, ds), diffPair(x, dx)).d;
}

[Differentiable]
float3 interp(Mesh m, int idx, float2 b) { return m.interpolate(idx, b); }
float3 interpTangent(Mesh m, int idx, float2 b, float2 db) { return fwd_diff(interp)(m, idx, diffPair(b, db)).d; }
float2 interpGrad(Mesh m, int idx, float2 b, float3 dOut)
{
    var pb = diffPair(b);
    bwd_diff(interp)(m, idx, pb, dOut);
    return pb.d;
}
"""


def triangles(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (n, 3, 4))


@pytest.fixture(scope="module")
def callers():
    return lowered(CALLERS)


def test_twin_takes_the_differential_and_matches_the_custom_derivative():
    m = front(SEED)
    fs = funcs(m)
    primal, twin, bwd = fs["foo"], fs["foo__ptrpair"], fs["__bwd_foo"]
    assert diff.DIFFERENTIABLE not in primal.attributes  # plain calls; derivatives use the twin
    assert diff.custom_derivative(twin, diff.BWD_DERIVATIVE) == "__bwd_foo"
    assert [a.name_hint for a in twin.body.block.args] == [
        "scene_meshes_triangles", "scene_meshes_triangles_off", "scene_count",
        "scene_d_meshes_triangles", "scene_d_meshes_triangles_off", "scene_d_count"]
    assert [a.name_hint for a in bwd.body.block.args][3:] == [
        "p_d_meshes_triangles", "p_d_meshes_triangles_off", "p_d_count", "grad"]
    assert bwd.function_type == diff.bwd_signature(twin)
    assert not any(diff.arg_is_differentiable(twin, i) for i in range(6))
    # the write `p.d.meshes[0].triangles[0].v0.x = grad` is one store of one float, no read-modify-write
    assert len(ops_named(bwd, "memref.store")) == 1 and not ops_named(bwd, "memref.load")


@pytest.mark.parametrize("entry", ["viaCtor", "viaHelper", "viaInitList"])
def test_bwd_diff_writes_the_gradient_through_the_differential(callers, entry):
    tris = triangles(3)
    first = 1  # the mesh starts at triangle 1: the pointer's offset
    tri, dtri = floats(tris.ravel()), floats(np.zeros(tris.size))
    out = run(callers, entry, tri, 12 * first, 1, dtri, 12 * first, 1, 2.5)
    got = np.array(dtri.data).reshape(tris.shape)
    want = np.zeros(tris.shape)
    want[first, 0, 0] = 2.5
    np.testing.assert_array_equal(got, want)
    if entry == "viaCtor":
        assert out[0] == pytest.approx(0.5 * tris[first, 0, 0] + 0.5 * tris[first, 1, 0], abs=1e-12)
    assert tri.data == list(tris.ravel())  # the primal scene is only read


def test_generated_derivative_passes_the_pointer_pair_on(callers):
    """bar(s, x) = foo(s) x^2: bwd_diff(bar) gives dx = 2 x foo(s) dOut and, through foo's custom
    derivative, writes x^2 dOut into the Differential; fwd_diff(bar) agrees with finite differences."""
    tris = triangles(2, seed=3)
    tri = floats(tris.ravel())
    foo_value = 0.5 * tris[0, 0, 0] + 0.5 * tris[0, 1, 0]
    x, d_out = 0.7, 1.5

    def bar(xv):
        return foo_value * xv * xv

    dtri = floats(np.zeros(tris.size))
    (dx,) = run(callers, "barGrad", tri, 0, 1, dtri, 0, 1, x, d_out)
    fd = central_difference(bar, [x], 0)
    assert dx == pytest.approx(fd * d_out, rel=1e-8)
    assert dtri.data[0] == pytest.approx(x * x * d_out, rel=1e-12)
    assert not any(dtri.data[1:])
    (tangent,) = run(callers, "barTangent", tri, 0, 1, floats(np.zeros(tris.size)), 0, 1, x, 1.0)
    assert tangent == pytest.approx(fd, rel=1e-8)
    assert tangent * d_out == pytest.approx(dx, rel=1e-12)  # <u, J v> = <J^T u, v>


def test_interpolate_derivatives_match_finite_differences(callers):
    tris = triangles(4, seed=5)
    tri = floats(tris.ravel())
    idx, b = 2, [0.3, 0.45]

    def value(bx, by, k):
        t = tris[idx, :, :3]
        return (t[0] * bx + t[1] * by + t[2] * (1 - bx - by))[k]

    jac = np.array([[central_difference(lambda bx, by: value(bx, by, k), b, i) for i in range(2)] for k in range(3)])
    rng = np.random.default_rng(1)
    for _ in range(3):
        v, u = rng.normal(size=2), rng.normal(size=3)
        (jv,) = run(callers, "interpTangent", tri, 0, idx, b, list(v))
        (jtu,) = run(callers, "interpGrad", tri, 0, idx, b, list(u))
        np.testing.assert_allclose(jv, jac @ v, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(jtu, jac.T @ u, rtol=1e-7, atol=1e-9)
        assert float(u @ jv) == pytest.approx(float(jtu @ v), rel=1e-12)


def test_methods_of_a_pointer_type_pass_this_with_its_differential():
    src = SEED.replace("struct Scene : IDifferentiablePtrType {\n", """struct Scene : IDifferentiablePtrType {
    [Differentiable]
    float weighted(float w) { return foo(this) * w; }
""") + """
[Differentiable]
float viaMethod(Scene s, float w) { return s.weighted(w); }
float grad(Scene s, DScene ds, float w)
{
    var pw = diffPair(w);
    bwd_diff(viaMethod)(DifferentialPtrPair<Scene>(s, ds), pw, 1.0);
    return pw.d;
}
"""
    tris = triangles(1, seed=7)
    dtri = floats(np.zeros(tris.size))
    (dw,) = run(src, "grad", floats(tris.ravel()), 0, 1, dtri, 0, 1, 3.0)
    assert dw == pytest.approx(0.5 * tris[0, 0, 0] + 0.5 * tris[0, 1, 0], abs=1e-12)
    assert dtri.data[0] == pytest.approx(3.0)


def test_custom_forward_derivative_reads_tangents_through_the_differential():
    """fwd_diff takes the pointer pair too: a custom [ForwardDerivative] reads the tangent where
    the Differential's pointers point."""
    src = SEED + """
DifferentialPair<float> __fwd_first(DifferentialPtrPair<Scene> p)
{
    return diffPair(p.p.meshes[0].triangles[0].v2.y, p.d.meshes[0].triangles[0].v2.y);
}
[ForwardDerivative(__fwd_first)]
float first(Scene s) { return s.meshes[0].triangles[0].v2.y; }
[Differentiable]
float scaled(Scene s, float x) { return first(s) * x; }
float tangent(Scene s, DScene ds, float x, float dx) { return fwd_diff(scaled)(diffPtrPair(s, ds), diffPair(x, dx)).d; }
"""
    tris, tangents = triangles(2, seed=9), triangles(2, seed=10)
    x, dx = 1.75, 0.5
    (t,) = run(src, "tangent", floats(tris.ravel()), 12, 1, floats(tangents.ravel()), 12, 1, x, dx)
    # d(first(s) x) = d first * x + first * dx, with d first read from the Differential
    assert t == pytest.approx(tangents[1, 2, 1] * x + tris[1, 2, 1] * dx, rel=1e-12)


def test_no_diff_pointer_type_parameter_is_plain():
    src = SEED + """
[Differentiable]
float h(no_diff Scene s, float x) { return no_diff foo(s) * x * x; }
float grad(Scene s, float x)
{
    var px = diffPair(x);
    bwd_diff(h)(s, px, 1.0);
    return px.d;
}
"""
    m = front(src)
    assert "h__ptrpair" not in funcs(m)
    tris = triangles(1, seed=11)
    (dx,) = run(src, "grad", floats(tris.ravel()), 0, 1, 0.5)
    assert dx == pytest.approx(2 * 0.5 * (0.5 * tris[0, 0, 0] + 0.5 * tris[0, 1, 0]), rel=1e-12)


# ---- raw pointers are not differentiable ----


@pytest.mark.parametrize("body,target", [
    ("p[0] = x * x; return x;", "p[0]"),
    ("float y = 2.0 * x; var z = y; *p += z; return x;", "*p"),  # through locals
    ("p[1] = sin(x) > 0.0 ? x : 0.0; return x;", "p[1]"),
])
def test_derivative_carrying_write_through_a_raw_pointer_is_an_error(body, target):
    head = "float f(float* p, float x) { "
    src = "[Differentiable]\n" + head + body + " }\n"
    col = len(head) + body.index(target) + 1
    head = expect_error(src, "E0006", 2, col, "raw pointers are not differentiable")
    assert "'p'" in head and "'f'" in head


def test_writes_that_carry_no_derivative_are_allowed():
    src = """
[Differentiable]
float f(float* p, float x, int i)
{
    p[i] = p[0] * 2.0;          // read through the pointer: no derivative
    p[i + 1] = detach(x) * 3.0;
    p[i + 2] = float(i);
    return x * p[i];
}
float grad(float* p, float x)
{
    var px = diffPair(x);
    bwd_diff(f)(p, px, 0, 1.0);
    return px.d;
}
"""
    mem = floats([1.5, 0, 0, 0])
    (dx,) = run(src, "grad", mem, 0, 0.25)
    assert dx == pytest.approx(3.0)  # p[0] became 2 * 1.5
    assert mem.data == [3.0, 0.75, 0.0, 0.0]


def test_pointer_writes_are_judged_by_data_flow():
    # y carries a derivative until it is overwritten with a constant: what reaches p[0] carries
    # none (the one activity analysis is flow-sensitive). f(x) = sin(x) x; finite differences
    # decide, in both modes, through the primal that runs with the same pointer.
    src = """
[Differentiable]
float f(float* p, float x)
{
    float y = sin(x);
    float r = y * x;
    y = 2.0;
    p[0] = y;
    return r;
}
float grad(float* p, float x)
{
    var px = diffPair(x);
    bwd_diff(f)(p, px, 1.0);
    return px.d;
}
float tangent(float* p, float x) { return fwd_diff(f)(p, diffPair(x, 1.0)).d; }
float value(float* p, float x) { return f(p, x); }
"""
    x = 0.8
    mem = floats([0.0])
    (dx,) = run(src, "grad", mem, 0, x)
    (tx,) = run(src, "tangent", floats([0.0]), 0, x)
    fd = central_difference(lambda v: run(src, "value", floats([0.0]), 0, v)[0], [x], 0)
    assert dx == pytest.approx(fd, rel=1e-6) and tx == pytest.approx(fd, rel=1e-6)
    assert mem.data == [2.0]
    # the same write of a value that still carries x's derivative is refused
    bad = src.replace("    y = 2.0;\n", "")
    expect_error(bad, "E0006", 7, 5, "raw pointers are not differentiable")


# ---- declarations and uses that are errors ----


def test_pointer_type_needs_a_differential_typealias():
    expect_error("struct S : IDifferentiablePtrType { float* p; };\n", "E0002", 1, 1, "typealias Differential")


def test_differential_of_a_pointer_type_must_be_one_itself():
    src = ("struct D { float* p; };\n"
           "struct S : IDifferentiablePtrType {\n    typealias Differential = D;\n    float* p;\n};\n")
    expect_error(src, "E0003", 3, 5, "must be an IDifferentiablePtrType struct")


def test_pointer_pair_needs_a_pointer_type():
    expect_error("void f(DifferentialPtrPair<float> p) { }\n", "E0003", 1, 8, "IDifferentiablePtrType")


def seed_error(extra: str, at: str, code: str, words: str) -> None:
    """SEED + extra fails at the first `at` of extra's last line."""
    last = extra.rstrip("\n").split("\n")[-1]
    expect_error(SEED + extra, code, (SEED + extra).rstrip("\n").count("\n") + 1, last.index(at) + 1, words)


def test_pointer_pair_init_list_needs_both_parts():
    seed_error("void g(Scene s) { DifferentialPtrPair<Scene> pp = { s }; }\n", "{ s }", "E0005",
               "needs a primal and a differential")


def test_pointer_type_parameter_must_be_an_input():
    seed_error("[Differentiable]\nfloat g(inout Scene s, float x) { return x; }\n", "inout", "E0008",
               "must be an input")


def test_differential_of_a_local_pointer_value_is_unknown():
    seed_error("[Differentiable]\nfloat g(Mesh* m, float x) { Scene s = { m, 1 }; return foo(s) * x; }\n",
               "s)", "E0008", "takes no IDifferentiablePtrType parameter")
    seed_error("[Differentiable]\nfloat g(Scene t, float x) { Scene s = { t.meshes, 2 }; return foo(s) * x; }\n",
               "s)", "E0008", "unchanged IDifferentiablePtrType parameters")
    seed_error("[Differentiable]\nfloat g(Scene t, float x) { t.count = 2; return foo(t) * x; }\n",
               "t)", "E0008", "unchanged IDifferentiablePtrType parameters")
    # no_diff: the caller asks for no derivative through foo
    lowered(SEED + "[Differentiable]\nfloat g(Mesh* m, float x) { Scene s = { m, 1 }; return no_diff foo(s) * x; }\n")


# ---- the example on PoCL ----


def test_scene_example_dispatches_on_pocl():
    sys.path.insert(0, str(EXAMPLE))
    try:
        from scene import run as run_scene
    finally:
        sys.path.remove(str(EXAMPLE))
    r = run_scene(threads=70, d_out=-1.25, first=2, seed=4)
    tris = r["triangles"].astype(np.float64)
    np.testing.assert_allclose(r["values"], np.full(70, 0.5 * tris[2, 0, 0] + 0.5 * tris[2, 1, 0]), rtol=1e-6)
    want = np.zeros(tris.shape)
    want[2, 0, 0] = -1.25
    np.testing.assert_array_equal(r["grad"], want)


def test_scene_example_script_prints_value_and_gradient():
    p = subprocess.run([sys.executable, str(EXAMPLE / "scene.py"), "--dout", "0.75", "--seed", "2"],
                       capture_output=True, text=True, timeout=300, env={**__import__("os").environ, "DIFFC_DEVICE": "cpu"})
    assert p.returncode == 0, p.stderr
    tris = np.random.default_rng(2).uniform(-1, 1, (3, 3, 4)).astype(np.float32).astype(np.float64)
    lines = p.stdout.splitlines()
    value = float(lines[0].split("=")[1].split()[0])
    assert value == pytest.approx(0.5 * tris[1, 0, 0] + 0.5 * tris[1, 1, 0], abs=1e-6)
    assert "on every thread: True" in lines[0]
    assert "v0.x = 0.750000" in lines[2]
    assert lines[3].endswith("[(1, 0, 0)]")


def test_pointer_pair_entry_parameter_binds_as_a_nested_dict(tmp_path):
    import diffc

    src = SEED + """
[shader("compute")]
[numthreads(8, 1, 1)]
void pairEntry(uint tid : SV_DispatchThreadID, uniform DifferentialPtrPair<Scene> pp, uniform float dOut)
{
    bwd_diff(foo)(pp, dOut);
}
"""
    path = tmp_path / "pair.slang"
    path.write_text(src)
    m = diffc.load_module(path)
    tri = diffc.Tensor.from_numpy(triangles(2).astype(np.float32).ravel())
    dtri = diffc.Tensor.zeros(24, np.float32)
    m.pairEntry.dispatch(thread_count=8, pp={"p": {"meshes": {"triangles": tri.at(12)}, "count": 1},
                                             "d": {"meshes": {"triangles": dtri.at(12)}, "count": 1}}, dOut=4.0)
    want = np.zeros(24, np.float32)
    want[12] = 4.0
    np.testing.assert_array_equal(dtri.to_numpy(), want)


# ---- places in memory are addressed scalar by scalar ----


def test_fields_elements_and_components_in_memory():
    src = """
struct Cell { float3 pos; float w[2]; };
void touch(Cell* cells, int i, int k)
{
    cells[i].w[k] = cells[0].pos.z + 10.0;   // dynamic element of an array field
    cells[1].pos.zx = float2(7.0, 8.0);      // a swizzle: two scalars
    cells->pos[k] = cells[1].w[0];           // dynamic component of a vector
    (*cells).w[0] = dot(cells[i].pos.xy, float2(1.0, 1.0));
}
"""
    touch = funcs(front(src))["touch"]
    assert len(ops_named(touch, "memref.store")) == 5  # one per scalar written, nothing rewritten around them
    mem = floats(range(10))  # cell 0: pos 0 1 2, w 3 4; cell 1: pos 5 6 7, w 8 9
    run(src, "touch", mem, 0, 1, 1)
    # w[1] of cell 1 = 2 + 10; cell 1 pos = (8, 6, 7); cell 0 pos[1] = cell 1 w[0] = 8;
    # cell 0 w[0] = cell 1 pos.x + pos.y = 8 + 6
    assert mem.data == [0, 8, 2, 14, 4, 8, 6, 7, 8, 12]


BUF_PTR = """
//TEST_INPUT:ubuffer(data=[0 0 0 0 0 0], stride=4):out,name=outputBuffer
RWStructuredBuffer<float> outputBuffer;
interface IAddr : IDifferentiablePtrType { float load(uint i); }
struct Addr : IAddr {   // IDifferentiablePtrType through its interface
    typealias Differential = Addr;
    RWStructuredBuffer<float> buf;
    uint base;
    float load(uint i) { return buf[base + i]; }
    void add(uint i, float v) { buf[base + i] += v; }
}
"""


def test_arrays_of_pointer_types_and_pointer_types_through_an_interface(tmp_path, capsys):
    from diffc import cli

    src = BUF_PTR + """
[BackwardDerivative(pick_bwd)]
float pick(Addr[2] a, uint i) { return a[0].load(i) * a[1].load(i); }
void pick_bwd(DifferentialPtrPair<Addr[2]> a, uint i, float g) {
    a.d[0].add(i, g * a.p[1].load(i));
    a.d[1].add(i, g * a.p[0].load(i));
}
[Differentiable] float twice(Addr x, Addr y) { return pick({ x, y }, 0) + pick({ y, x }, 1); }
int generic_base<T : IAddr>(DifferentialPtrPair<T> p) where T.Differential == T { return int(p.d.load(0)); }
[numthreads(1, 1, 1)]
void computeMain() {
    outputBuffer[0] = 3.0; outputBuffer[1] = 5.0;   // x = buf[0..1]
    Addr x = { outputBuffer, 0 };
    Addr y = { outputBuffer, 0 };                      // the same memory: d(x*y)/dx = y
    Addr dx = { outputBuffer, 2 };
    Addr dy = { outputBuffer, 4 };
    bwd_diff(twice)(DifferentialPtrPair<Addr>(x, dx), DifferentialPtrPair<Addr>(y, dy), 1.0);
    outputBuffer[1] = float(generic_base(DifferentialPtrPair<Addr>(x, dx)));
}
"""
    path = tmp_path / "k.slang"
    path.write_text(src)
    assert cli.main(["run", str(path)]) == 0
    values = [float(v) for v in capsys.readouterr().out.split()[2:]]
    # twice = x0*y0 + y1*x1 with x = y = (3, 5): dx = (y0, y1) = (3, 5), dy = (x0, x1) = (3, 5);
    # then generic_base reads dx[0] = 3 through the generic pair
    assert values == [3.0, 3.0, 3.0, 5.0, 3.0, 5.0]
