"""Declaration forms of the Slang that SlangPy and slang-torch programs are written in, one test
each: fixed-width vector names (`uint32_t2`), `constexpr` and `override`, arrays sized by their
initializer (`C[] = {...}`), truncating casts of matrices and vectors, namespaces (`ns::f`,
`ns.f`, `using namespace`), typealiases of interfaces, `static groupshared` locals, and
`implementing M;` finding M's file in a parent folder. Values against numpy, derivatives against
float64 central differences in both modes (slang_harness)."""

from __future__ import annotations

import numpy as np
import pytest
from slang_harness import Compiled
from slang_helpers import expect_error

import diffc
from diffc.frontend import compile_slang

RNG = np.random.default_rng(22)


def test_fixed_width_vector_names():
    c = Compiled("[Differentiable] float f(float x, uint32_t2 a, int32_t3 b, float32_t2 v) "
                 "{ return x * float(a.y) + float(b.z) + v.x * v.y * x; }", "f")
    v = RNG.normal(size=2)
    (val,) = c.primal([0.5, np.array([3, 4]), np.array([1, 2, -3]), v])
    assert val == pytest.approx(0.5 * 4 - 3 + v[0] * v[1] * 0.5)
    c.check_derivatives([0.5, np.array([3, 4]), np.array([1, 2, -3]), v])


def test_constexpr_and_override_are_accepted():
    src = """
    constexpr static const int N = 3;
    interface IScale { float apply(float x); }
    struct Triple : IScale { override float apply(float x) { return x * N; } }
    [Differentiable] float f(float x, constexpr int k) { constexpr int m = 2; Triple t; return no_diff t.apply(1.0) * x * x * m + k; }
    """
    c = Compiled(src, "f")
    (val,) = c.primal([0.7, 5])
    assert val == pytest.approx(3 * 0.49 * 2 + 5)
    c.check_derivatives([0.7, 5])


def test_array_sized_by_its_initializer():
    src = """
    static const float C[] = { 1.5, -2.0, 0.25, 4.0 };
    [Differentiable] float f(float x) {
        float2 w[] = { float2(1.0, 2.0), float2(3.0, x) };
        float s = 0.0;
        for (int i = 0; i < 4; i++) s += C[i] * pow(x, float(i));
        return s + w[1].y * w[0].y;
    }
    """
    c = Compiled(src, "f")
    x = 0.8
    (val,) = c.primal([x])
    assert val == pytest.approx(1.5 - 2.0 * x + 0.25 * x**2 + 4.0 * x**3 + 2 * x)
    c.check_derivatives([x])


def test_unsized_array_without_an_initializer_list_is_an_error():
    expect_error("float f() { float d[]; return 0.0; }", "E0001", 1, 13, "needs an initializer list")


def test_truncating_casts():
    src = """
    [Differentiable] float3 f(float4x4 m, float3 v) { float3x3 r = (float3x3)m; return mul(r, v); }
    [Differentiable] float2 g(float4 v) { return (float2)v * 2.0; }
    [Differentiable] float h(float3x2 m) { float2x1 k = (float2x1)m; return k[1] * k[0]; }
    """
    m, v = RNG.normal(size=(4, 4)), RNG.normal(size=3)
    c = Compiled(src, "f")
    np.testing.assert_allclose(c.primal([*m, v])[0], m[:3, :3] @ v, rtol=1e-12)
    c.check_derivatives([*m, v])
    v4 = RNG.normal(size=4)
    c = Compiled(src, "g")
    np.testing.assert_allclose(c.primal([v4])[0], 2 * v4[:2], rtol=1e-12)
    c.check_derivatives([v4])
    m3 = RNG.normal(size=(3, 2))
    c = Compiled(src, "h")
    assert c.primal([*m3])[0] == pytest.approx(m3[1, 0] * m3[0, 0])
    c.check_derivatives([*m3])


def test_widening_cast_is_still_refused():
    expect_error("float3 f(float2 v) { return (float3)v; }", "E0003", 1, 29, "cannot cast float2 to float3")


NAMESPACES = """
namespace geo {
    struct P : IDifferentiable { float x; float y; }
    namespace detail { float twice(float v) { return 2.0 * v; } }
    [Differentiable] float norm2(P p) { return p.x * p.x + p.y * p.y; }
}
using namespace geo;
[Differentiable] float f(float x, float y) {
    geo::P p = { x, y };
    return geo::norm2(p) * no_diff geo::detail::twice(1.5) + geo.norm2(p) + norm2(p);
}
"""


def test_namespaces():
    c = Compiled(NAMESPACES, "f")
    x, y = 0.3, -1.1
    assert c.primal([x, y])[0] == pytest.approx((x * x + y * y) * 5)
    c.check_derivatives([x, y])


def test_typealias_of_an_interface():
    src = """
    typealias IReal = __BuiltinFloatingPointType;
    interface IShape { float area(); }
    typealias IS = IShape;
    struct Sq : IS { float s; float area() { return s * s; } }
    float areaOf<S : IS>(S s) { return s.area(); }
    [Differentiable] T cube<T : IReal>(T x) { return x * x * x; }
    [Differentiable] float f(float x) { Sq q = { 3.0 }; return cube<float>(x) * no_diff areaOf(q); }
    """
    c = Compiled(src, "f")
    assert c.primal([0.6])[0] == pytest.approx(0.216 * 9)
    c.check_derivatives([0.6])


STATIC_SHARED = """
RWStructuredBuffer<float> O;
[numthreads(4, 1, 1)]
void reverse(uint3 t : SV_DispatchThreadID, uint3 l : SV_GroupThreadID) {
    static groupshared float tile[4];
    tile[l.x] = O[t.x];
    GroupMemoryBarrierWithGroupSync();
    O[t.x] = tile[3 - l.x] * 2.0;
}
"""


def test_static_groupshared_local(tmp_path):
    path = tmp_path / "tile.slang"
    path.write_text(STATIC_SHARED)
    m = diffc.load_module(str(path))
    data = np.arange(8, dtype=np.float32) + 1
    o = diffc.Tensor.from_numpy(data.copy())
    m.reverse.dispatch(thread_count=8, O=o)
    np.testing.assert_array_equal(o.to_numpy(), 2 * np.concatenate([data[:4][::-1], data[4:][::-1]]))


def test_groupshared_local_with_an_initializer_is_an_error():
    expect_error("void f() { groupshared float t[2] = {1.0, 2.0}; }", "E0001", 1, 35, "cannot have an initializer")


def test_implementing_finds_the_module_in_a_parent_folder(tmp_path):
    (tmp_path / "nn").mkdir()
    (tmp_path / "nn" / "layers").mkdir()
    (tmp_path / "nn" / "nn.slang").write_text(
        'module nn;\n__include "layers/scale.slang";\npublic struct Layer { float w; }\n')
    (tmp_path / "nn" / "layers" / "scale.slang").write_text(
        "implementing nn;\n[Differentiable] public float scale(Layer l, float x) { return l.w * x * x; }\n")
    path = tmp_path / "nn" / "layers" / "scale.slang"
    module = compile_slang(path.read_text(), str(path))
    c = Compiled(module, "scale")
    assert c.primal([1.5, 2.0])[0] == pytest.approx(6.0)
    c.check_derivatives([1.5, 2.0])


TALL_MATRIX = """
static const int R = 6;
static const int K = 3;
[Differentiable] float f(matrix<float, R, K> m, float3 v) {
    float s = 0.0;
    for (int i = 0; i < R; i++) s += dot(m[i], v) * float(i + 1);
    return s;
}
"""


def test_matrix_sized_by_static_consts_with_more_than_four_rows():
    m, v = RNG.normal(size=(6, 3)), RNG.normal(size=3)
    c = Compiled(TALL_MATRIX, "f")
    assert c.primal([*m, v])[0] == pytest.approx(float(np.arange(1, 7) @ (m @ v)))
    c.check_derivatives([*m, v])


def test_a_product_wider_than_four_is_refused_where_it_is_made():
    expect_error(TALL_MATRIX + "float3 h(matrix<float, R, K> m) { return mul(transpose(m), m)[0]; }",
                 "E0008", 9, 46, "transpose of float6x3 (more than 4 rows) is not supported")


def test_generic_parameter_list_may_end_with_a_comma_and_name_later_types():
    src = """
    interface IModel<In, Out> { Out forward(In x); }
    struct Pair<A : IDifferentiable, B : IDifferentiable,> : IModel<Box<A>, Box<B>> {
        Box<B> forward(Box<A> x) { Box<B> r; return r; }
    }
    struct Box<T> { T v; }
    [Differentiable] float f(float x) { Box<float> b = { x }; return b.v * b.v; }
    """
    c = Compiled(src, "f")
    c.check_derivatives([1.25])


def test_an_interface_alias_does_not_rename_an_included_file(tmp_path):
    (tmp_path / "IReal.slang").write_text("implementing lib;\ntypealias IReal = __BuiltinFloatingPointType;\n")
    (tmp_path / "ops.slang").write_text(
        "implementing lib;\n__include IReal;\n[Differentiable] public T sq<T : IReal>(T x) { return x * x; }\n")
    (tmp_path / "lib.slang").write_text("module lib;\n__include IReal;\n__include ops;\n")
    main = tmp_path / "main.slang"
    main.write_text("import lib;\n[Differentiable] float f(float x) { return sq<float>(x) * x; }\n")
    c = Compiled(compile_slang(main.read_text(), str(main)), "f")
    assert c.primal([1.5])[0] == pytest.approx(1.5**3)
    c.check_derivatives([1.5])


def _module_tree(tmp_path):
    """A module whose files name each other's types in any order and name paths from the
    module's folder: nn.slang includes parts/uses.slang (a Layer<Box> before box.slang is read),
    then parts/box.slang; parts/uses.slang includes `parts.common` (a path from nn's folder)."""
    (tmp_path / "parts").mkdir()
    (tmp_path / "nn.slang").write_text('module nn;\n__include parts.uses;\n__include parts.box;\n')
    (tmp_path / "parts" / "common.slang").write_text(
        "implementing nn;\nstatic const float GAIN = 2.5;\n")
    (tmp_path / "parts" / "uses.slang").write_text(
        "implementing nn;\n__include parts.common;\n"
        "struct Layer<T : IDifferentiable> { T w; }\n"
        "[Differentiable] float apply(Layer<Box> l, float x) { return l.w.v * x * x * GAIN; }\n")
    (tmp_path / "parts" / "box.slang").write_text(
        "implementing nn;\nstruct Box : IDifferentiable { float v; }\n")
    return tmp_path


@pytest.mark.parametrize("entry", ["nn.slang", "parts/uses.slang"])
def test_a_module_is_order_free_across_its_files(tmp_path, entry):
    path = _module_tree(tmp_path) / entry
    c = Compiled(compile_slang(path.read_text(), str(path)), "apply")
    assert c.primal([0.5, 2.0])[0] == pytest.approx(0.5 * 4 * 2.5)
    c.check_derivatives([0.5, 2.0])


def test_field_semantics_are_read_and_dropped():
    """A vertex stage's `float3 position : POSITION;` binds nothing here: the struct is its fields."""
    src = """
    struct Vertex { float3 position : POSITION; float2 uv : TEXCOORD0, uv2 : TEXCOORD1; }
    [Differentiable] float f(Vertex v) { return v.position.x * v.uv.y + v.uv2.x * v.position.z; }
    """
    c = Compiled(src, "f")
    p, uv, uv2 = RNG.normal(size=3), RNG.normal(size=2), RNG.normal(size=2)
    (val,) = c.primal([p, uv, uv2])  # (the struct's leaves)
    assert val == pytest.approx(p[0] * uv[1] + uv2[0] * p[2])
    c.check_derivatives([p, uv, uv2])


def test_bit_fields_are_refused_where_they_are_written():
    expect_error("struct S { uint a : 3; uint b; }\nfloat f(S s) { return 1.0; }", "E0008", 1, 19, "bit fields")
