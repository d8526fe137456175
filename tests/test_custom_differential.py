"""A Differential an IDifferentiable struct declares (frontend/features/declared_differential.py): the struct
itself, or another struct matched by [DerivativeMember] or by field names. Derivatives against
float64 central differences and forward against reverse (slang_harness); `.d` reads of the
declared type against derivatives worked out here by hand; refusals as located errors."""

from __future__ import annotations

import numpy as np
import pytest
from slang_harness import Compiled, compile_error, run_function, run_pipeline

from diffc.frontend import compile_slang

# its own Differential; the generic one with T lacking IDifferentiable, whose fields carry
# derivatives only because the declaration says where they live
SELF = """
struct Ray : IDifferentiable {
    typealias Differential = Ray;
    float t;
    float3 dir;
    [Differentiable] float along() { return t * dir.z + dot(dir, dir); }
}
struct MyVec<T : __BuiltinArithmeticType> : IDifferentiable {
    typedef MyVec<T> Differential;
    T x;
    T y;
    T cross2(MyVec<T> o) { return x * o.y - y * o.x; }
}
"""

# another struct: by [DerivativeMember] under other names, and by matching names
OTHER = """
struct PGrad : IDifferentiable { float gx; float2 gv; }
struct Particle : IDifferentiable {
    typealias Differential = PGrad;
    [DerivativeMember(Differential.gx)] float x;
    int id;
    [DerivativeMember(PGrad.gv)] float2 v;
}
struct BodyD : IDifferentiable { float mass; float3 pos; }
struct Body : IDifferentiable {
    typedef BodyD Differential;
    float mass;
    uint tag;
    no_diff float scale;
    float3 pos;
}
"""


def _run(src: str, fname: str, *args):
    module = compile_slang(src, "test.slang")
    run_pipeline(module)
    return [np.asarray(v, dtype=np.float64) for v in run_function(module, fname, *args)]


def test_a_struct_that_is_its_own_differential_differentiates_in_both_modes():
    src = SELF + "[Differentiable] float f(Ray r, float s) { Ray q = { r.t * s, r.dir * s }; return q.along() + exp(r.t); }\n"
    Compiled(src, "f").check_derivatives([0.4, np.array([0.3, -1.2, 0.8]), 1.3])


def test_generic_fields_carry_derivatives_when_the_struct_declares_itself_its_differential():
    src = SELF + """
[Differentiable] float f(MyVec<float> a, float s) {
    MyVec<float> b = { a.y * s, sin(a.x) };
    return a.x * b.y - a.y * b.x + a.x * a.x * a.y;
}
"""
    c = Compiled(src, "f")
    c.check_derivatives([0.7, -0.4, 1.9])
    da, db, ds = (float(g) for g in c.bwd([0.7, -0.4, 1.9], [1.0]))
    assert da != 0.0 and db != 0.0  # the generic rule alone would have made x and y no_diff


def test_the_pair_of_a_self_differential_struct_holds_the_struct_as_its_derivative():
    src = SELF + """
[Differentiable] float e(MyVec<float> v) { return v.x * v.x * v.y; }
float g(float x, float y) {
    var dp = diffPair(MyVec<float>(x, y), MyVec<float>(0.0, 0.0));
    bwd_diff(e)(dp, 1.0);
    MyVec<float>.Differential d = dp.d;
    return d.x * 10.0 + d.y;
}
float h(float x, float y) {
    DifferentialPair<float> r = fwd_diff(e)(diffPair(MyVec<float>(x, y), MyVec<float>(1.0, 0.0)));
    return r.d;
}
"""
    x, y = 0.6, 1.7
    (g,) = _run(src, "g", x, y)
    assert g == pytest.approx(10.0 * (2 * x * y) + x * x)
    (h,) = _run(src, "h", x, y)
    assert h == pytest.approx(2 * x * y)


def test_a_custom_derivative_of_a_generic_method_reads_the_declared_differential():
    src = SELF + """
__func_extension<T : __BuiltinFloatingPointType>
fwd_diff(MyVec<T>::cross2)(DifferentialPair<MyVec<T>> self, DifferentialPair<MyVec<T>> o) -> DifferentialPair<T>
    where T.Differential == T
{
    T d = self.d.x * o.p.y + self.p.x * o.d.y - self.d.y * o.p.x - self.p.y * o.d.x;
    return diffPair(self.p.cross2(o.p), d);
}
__func_extension<T : __BuiltinFloatingPointType>
bwd_diff(MyVec<T>::cross2)(inout DifferentialPair<MyVec<T>> self, inout DifferentialPair<MyVec<T>> o, T dOut) -> void
    where T.Differential == T
{
    self = diffPair(self.p, MyVec<T>(dOut * o.p.y, -dOut * o.p.x));
    o = diffPair(o.p, MyVec<T>(-dOut * self.p.y, dOut * self.p.x));
}
[Differentiable] float f(float a, float b, float c) {
    MyVec<float> u = { a * b, c };
    MyVec<float> w = { sin(c), a };
    return u.cross2(w);
}
"""
    Compiled(src, "f").check_derivatives([0.5, -1.1, 0.9])


def test_another_struct_holds_the_derivatives_named_by_derivative_member():
    src = OTHER + """
[Differentiable] float f(Particle p, float s) {
    Particle q = { p.x * s, p.id, p.v * p.x };
    return q.x * dot(q.v, q.v) + float(q.id) * p.v.y;
}
"""
    Compiled(src, "f").check_derivatives([0.8, 3, np.array([0.2, -0.6]), 1.4])


def test_another_struct_holds_the_derivatives_of_the_fields_of_its_names():
    src = OTHER + """
[Differentiable] float f(Body b, float s) {
    Body c = { b.mass * s, b.tag, 2.0, b.pos * b.mass };
    return c.mass * length(c.pos) + c.scale * b.pos.x;
}
"""
    Compiled(src, "f").check_derivatives([1.3, 4, 0.5, np.array([0.4, -0.1, 0.9]), 0.7])


def test_a_differential_field_may_hold_a_struct_array_whose_differential_has_its_layout():
    # Seg's Differential is synthesized; SetD names Seg itself for it (they convert into each other)
    src = """
struct Seg : IDifferentiable { float2 a; float w; }
struct SetD : IDifferentiable { Seg segs[2]; float bias; }
struct Set : IDifferentiable { typealias Differential = SetD; Seg segs[2]; int n; float bias; }
[Differentiable] float f(Set s) { return s.segs[0].w * dot(s.segs[1].a, s.segs[0].a) + s.bias * s.segs[1].w; }
"""
    Compiled(src, "f").check_derivatives([np.array([0.2, 0.5]), 1.1, np.array([-0.3, 0.8]), 0.6, 2, 1.7])


def test_d_reads_fwd_results_and_diff_pair_take_the_declared_type():
    src = OTHER + """
[Differentiable] float e(Body b) { return b.mass * dot(b.pos, b.pos) + b.scale * b.pos.y; }
[Differentiable] Particle spin(float a) { Particle p = { a * a, 5, float2(sin(a), a) }; return p; }
float g(float m, float px, float py, float pz) {
    BodyD none = { 0.0, float3(0.0) };
    var dp = diffPair(Body(m, 1u, 3.0, float3(px, py, pz)), none);
    bwd_diff(e)(dp, 1.0);
    Body.Differential d = dp.d;
    return d.mass + d.pos.y * 10.0;
}
float h(float a) {
    DifferentialPair<Particle> r = fwd_diff(spin)(diffPair(a, 1.0));
    PGrad d = r.d;
    return d.gx * 10.0 + d.gv.x;
}
float k(float a) {
    var dp = diffPair(a, 0.0);
    bwd_diff(spin)(dp, PGrad(1.0, float2(0.0, 2.0)));
    return dp.d;
}
"""
    m, p = 1.5, np.array([0.3, -0.7, 0.2])
    (g,) = _run(src, "g", m, *p)
    # d/dmass = |pos|^2; d/dpos.y = 2 mass pos.y + scale (scale is no_diff but multiplies pos.y)
    assert g == pytest.approx(float(p @ p) + 10.0 * (2 * m * p[1] + 3.0))
    a = 0.9
    (h,) = _run(src, "h", a)
    assert h == pytest.approx(10.0 * 2 * a + np.cos(a))
    (k,) = _run(src, "k", a)
    assert k == pytest.approx(2 * a + 2.0)


def test_structs_with_declared_differentials_nest_in_structs_and_arrays():
    # Outer's synthesized Differential holds PGrad, BodyD[2] and Ray: the declared ones of its fields
    src = OTHER + SELF + """
struct Outer : IDifferentiable { Particle p; Body b[2]; Ray r; float w; }
[Differentiable] float f(Outer o, float s) {
    Outer q = o;
    q.b[1].pos = q.b[0].pos * s + q.p.x;
    return q.p.x * q.b[1].pos.y + q.b[1].mass * q.w * dot(q.p.v, q.p.v) + q.r.along();
}
float g(float a) {
    Outer o; o.p.x = a; o.w = 2.0; o.b[1].mass = 3.0; o.p.v = float2(1.0, a);
    var dp = diffPair(o);
    var ds = diffPair(1.0, 0.0);
    bwd_diff(f)(dp, ds, 1.0);
    Outer.Differential d = dp.d;
    PGrad pg = d.p;
    return pg.gx + 10.0 * d.b[0].pos.y;
}
"""
    body = [1.1, 3, 0.2, np.array([0.1, 0.2, 0.3])]
    Compiled(src, "f").check_derivatives([0.5, 2, np.array([0.3, 0.4])] + body + [1.2, 1, 0.3, np.array([0.5, 0.6, 0.7]),
                                         0.9, np.array([0.2, 0.1, -0.4]), 0.8, 1.3])
    a = 0.7
    (g,) = _run(src, "g", a)
    # with b[0].pos = 0 and s = 1, b[1].pos = (x, x, x): df/dx = 2x; df/d b[0].pos.y = x (through b[1].pos.y)
    assert g == pytest.approx(2 * a + 10.0 * a)


def test_a_declared_differential_lowers_to_the_same_ir_as_the_synthesized_one():
    # the declared D is the representation itself (declared_differential.py): no conversions
    body = """
[Differentiable] float f(V v, float s) { return v.a * dot(v.b, v.b) * s; }
[Differentiable] V g(V v) { V w = v; w.a = v.a * v.b.x; return w; }
float h(float x) {
    var dp = diffPair(V(x, float3(1.0, x, 2.0)), V.Differential(0.0, float3(0.0)));
    var ds = diffPair(2.0, 0.0);
    bwd_diff(f)(dp, ds, 1.0);
    let r = fwd_diff(g)(diffPair(V(x, float3(x)), V.Differential(1.0, float3(0.0, 1.0, 0.0))));
    return dp.d.A + dp.d.B.y + r.d.A;
}
"""
    decls = [
        ("struct V : IDifferentiable { float a; float3 b; }", "a", "b"),  # synthesized
        ("struct V : IDifferentiable { typealias Differential = V; float a; float3 b; }", "a", "b"),
        ("struct D : IDifferentiable { float a; float3 b; }\n"
         "struct V : IDifferentiable { typealias Differential = D; float a; float3 b; }", "a", "b"),
        ("struct D : IDifferentiable { float da; float3 db; }\nstruct V : IDifferentiable { typealias Differential = D;"
         " [DerivativeMember(D.da)] float a; [DerivativeMember(D.db)] float3 b; }", "da", "db"),
    ]
    irs = []
    for decl, a, b in decls:
        module = compile_slang(decl + body.replace("d.A", "d." + a).replace("d.B", "d." + b), "test.slang")
        before = str(module)
        run_pipeline(module)
        irs.append((before, str(module)))
    assert all(ir == irs[0] for ir in irs[1:])


@pytest.mark.parametrize("src,line,col,words", [
    # D holds a field no derivative goes to
    ("struct D : IDifferentiable { float a; float extra; }\n"
     "struct S : IDifferentiable { typealias Differential = D; float a; }\n",
     2, 30, "Differential type D of 'S' has field 'extra', which holds no field's derivative"),
    # a field of D of another type than the derivative it holds
    ("struct D : IDifferentiable { float a; float b; }\n"
     "struct S : IDifferentiable { typealias Differential = D; float a;\n  float2 b; }\n",
     3, 3, "field 'b' of Differential D is float, but the derivative of field 'b' of 'S' is float2"),
    # D in another order than the fields
    ("struct D : IDifferentiable { float b; float a; }\n"
     "struct S : IDifferentiable { typealias Differential = D; float a; float b; }\n",
     2, 30, "must hold its fields' derivatives in the order of those fields (float a, float b)"),
    # a field of D that is no_diff cannot hold a derivative
    ("struct D : IDifferentiable { float a; no_diff float b; }\n"
     "struct S : IDifferentiable { typealias Differential = D; float a;\n  float b; }\n",
     3, 3, "field 'b' of Differential D is no_diff, so it cannot hold the derivative of field 'b' of 'S'"),
    # two fields naming one field of D
    ("struct D : IDifferentiable { float g; }\n"
     "struct S : IDifferentiable { typealias Differential = D;\n"
     "  [DerivativeMember(D.g)] float a;\n  [DerivativeMember(D.g)] float b; }\n",
     4, 4, "fields 'a' and 'b' of 'S' both name field 'g' of its Differential D"),
    # its own Differential, but a field cannot hold its derivative
    ("struct S : IDifferentiable { typealias Differential = S; float a; int n; }\n",
     1, 30, "'S' as its own Differential is not supported: its field 'n' (int) is not differentiable"),
    ("struct S : IDifferentiable { typealias Differential = S; float a; no_diff float c; }\n",
     1, 30, "'S' as its own Differential is not supported: its field 'c' (float) is no_diff"),
    # ... or holds a struct whose Differential is laid out otherwise
    ("struct B : IDifferentiable { float m; int tag; }\n"
     "struct S : IDifferentiable { typealias Differential = S; B b; }\n",
     2, 30, "its field 'b' (B) has a Differential (B.Differential) of another layout"),
    # a Differential that is not a struct
    ("struct S : IDifferentiable { typealias Differential = float; float a; }\n",
     1, 30, "Differential type float of 'S' is not supported: the Differential of a struct must be a struct"),
])
def test_a_declared_differential_that_does_not_map_is_a_located_e0008(src, line, col, words):
    msg = compile_error(src, "bad.slang")
    head = msg.splitlines()[0]
    assert head.startswith(f"bad.slang:{line}:{col}: error[E0008]: "), head
    assert words in head, head


def test_a_differentiable_field_the_differential_has_no_place_for_is_a_located_e0003():
    # invalid in Slang too: with no [DerivativeMember], D needs a field of the same name
    msg = compile_error("struct D : IDifferentiable { float a; float db; }\n"
                        "struct S : IDifferentiable { typealias Differential = D; float a;\n  float b; }\n", "bad.slang")
    assert msg.startswith("bad.slang:3:3: error[E0003]: differentiable field 'b' of 'S' has no field in its "
                          "Differential D to hold its derivative (none is named 'b')"), msg


def test_a_derivative_member_naming_no_field_of_the_differential_is_a_located_e0004():
    msg = compile_error("struct D : IDifferentiable { float g; }\n"
                        "struct S : IDifferentiable { typealias Differential = D;\n"
                        "  [DerivativeMember(D.h)] float a; }\n", "bad.slang")
    assert msg.startswith("bad.slang:3:4: error[E0004]: [DerivativeMember] on field 'a' of 'S': its "
                          "Differential D has no field 'h'"), msg
