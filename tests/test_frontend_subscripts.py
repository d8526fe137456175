"""Subscript operators (`__subscript`), custom backward derivatives of functions with inout and
out parameters, IInteger's conversion methods, buffer handles and buffer fields assigned after
their declaration. Derivatives against float64 central differences (slang_harness); values a
kernel prints against arithmetic written out here."""

from __future__ import annotations

import pytest
from slang_harness import Compiled

from diffc import cli

GRID = """
struct Grid : IDifferentiable {
    float4 values;
    __subscript(int row, int column) -> float {
        [Differentiable] get { return values[row * 2 + column]; }
        [Differentiable] set { values[row * 2 + column] = newValue; }
    }
}
"""


def test_a_subscript_reads_and_writes_through_its_accessors_and_differentiates():
    src = GRID + """
[Differentiable] float f(float x, float y) {
    Grid g = { float4(x, y, 2.0, 3.0) };
    g[1, 0] = g[0, 1] * x;     // values.z = y * x
    g[0, 0] += y;              // values.x = x + y
    return g[1, 0] * g[0, 0] + g[1, 1];
}
"""
    Compiled(src, "f").check_derivatives([0.7, -1.3])


def test_a_generic_subscript_takes_any_integer_index():
    src = """
struct Scaled : IDifferentiable {
    float k;
    __generic<I : IInteger>
    __subscript(I i) -> float { [Differentiable] get { return k * i.toInt(); } }
}
[Differentiable] float f(float x) { Scaled s = { x }; uint u = 3; return s[2] * s[u]; }
"""
    c = Compiled(src, "f")
    _, (t,) = c.fwd([1.5], [1.0])
    assert float(t) == pytest.approx(2 * 6 * 1.5)  # d(6 x^2)/dx
    c.check_derivatives([1.5])


def test_a_subscript_required_by_an_interface_is_called_through_a_generic():
    src = """
interface IRow : IDifferentiable { __subscript(int i) -> float { [Differentiable] get; } }
struct Row : IRow, IDifferentiable {
    float a; float b;
    __subscript(int i) -> float { [Differentiable] get { return i == 0 ? a : b; } }
}
[Differentiable] float sum2<T : IRow>(T r) { return r[0] * r[1]; }
[Differentiable] float f(float x, float y) { Row r = { x, y * y }; return sum2(r); }
"""
    Compiled(src, "f").check_derivatives([0.4, 2.0])


def test_custom_derivatives_of_subscript_accessors_are_named_by_accessor():
    # deliberately scaled custom derivatives: the result shows they, not the bodies, ran
    own = GRID.replace("float4 values;", "typedef Grid Differential;\n    float4 values;")  # its own Differential
    src = own.replace("[Differentiable] get", "get").replace("[Differentiable] set", "set") + """
__func_extension fwd_diff(Grid::__subscript::get)(DifferentialPair<Grid> self, int row, int column)
    -> DifferentialPair<float> {
    return diffPair(self.p[row, column], 10.0 * self.d[row, column]);
}
__func_extension bwd_diff(Grid::__subscript::get)(inout DifferentialPair<Grid> self, int row, int column, float dOut) {
    Grid d = { float4(0.0) };
    d[row, column] = 100.0 * dOut;
    self = diffPair(self.p, d);
}
[Differentiable] float f(float x) { Grid g = { float4(x, 0.0, 0.0, 0.0) }; return g[0, 0]; }
"""
    c = Compiled(src, "f")
    _, (t,) = c.fwd([0.5], [1.0])
    (g,) = c.bwd([0.5], [1.0])
    assert (float(t), float(g)) == (10.0, 100.0)


def test_indexing_a_vector_with_two_indices_is_an_error():
    from diffc.diagnostics import DiffcError
    from diffc.frontend import compile_slang

    with pytest.raises(DiffcError, match=r"test.slang:1:33: error\[E0003\]: type float4 takes one index, got 2"):
        compile_slang("float f(float4 v) { return v[1, 2] + v[3, 0]; }", "test.slang")


def test_custom_backward_of_inout_and_out_parameters_and_a_result():
    # g(x, y) -> r = x + y, x <- x*y, z = 2y; its custom backward derivative takes the incoming
    # cotangents of x and z and of the result, in Slang's parameter order
    src = """
[BackwardDerivative(g_bwd)]
float g(inout float x, float y, out float z) { float r = x + y; x = x * y; z = 2.0 * y; return r; }
void g_bwd(inout DifferentialPair<float> x, inout DifferentialPair<float> y, float dz, float dr) {
    float dx = x.d;
    x = diffPair(x.p, dr + dx * y.p);
    y = diffPair(y.p, dr + dx * x.p + 2.0 * dz);
}
[Differentiable] float f(float a, float b) { float t = a; float z; float r = g(t, b, z); return 5.0 * t + 7.0 * r + 11.0 * z; }
"""
    c = Compiled(src, "f")
    assert [float(v) for v in c.bwd([2.0, 3.0], [1.0])] == [5 * 3 + 7, 5 * 2 + 7 + 22]
    c.check_derivatives([2.0, 3.0])


def test_a_method_setter_with_a_custom_backward_derivative_gets_the_incoming_gradient():
    src = """
struct Box : IDifferentiable {
    float v;
    [mutating] void put(float x) { v = x * x; }
}
__func_extension bwd_diff(Box::put)(inout DifferentialPair<Box> self, inout DifferentialPair<float> x) {
    x = diffPair(x.p, 2.0 * x.p * self.d.v);
    Box.Differential none = { 0.0 };
    self = diffPair(self.p, none);
}
[Differentiable] float f(float x) { Box b = { 1.0 }; b.put(x); return 3.0 * b.v; }
"""
    c = Compiled(src, "f")
    assert [float(v) for v in c.bwd([1.25], [1.0])] == [pytest.approx(6 * 1.25)]
    c.check_derivatives([1.25])


def _run(tmp_path, capsys, src: str) -> list[float]:
    path = tmp_path / "k.slang"
    path.write_text(src)
    assert cli.main(["run", str(path)]) == 0
    lines = capsys.readouterr().out.split()
    assert lines[:2] == ["out:", "float"]  # the out buffer, by name
    return [float(v) for v in lines[2:]]


HANDLE = """
//TEST_INPUT: set data = ubuffer(data=[1.0 2.0 3.0 4.0], stride=4)
uniform RWStructuredBuffer<float>.Handle data;
//TEST_INPUT: set out = out ubuffer(data=[0 0 0 0], stride=4)
uniform RWStructuredBuffer<float> out;
struct View { RWStructuredBuffer<float> buf; int base; float at(int i) { return buf[base + i]; } }
"""


def test_a_buffer_handle_and_a_buffer_field_assigned_after_its_declaration(tmp_path, capsys):
    src = HANDLE + """
[numthreads(1, 1, 1)]
void computeMain() {
    View v;
    v.base = 1;
    v.buf = data;
    float s = 0.0;
    for (int i = 0; i < 3; i++) s += v.at(i) * float(i + 1);  // a loop that only reads v
    out[0] = s;
    out[1] = data[3];
}
"""
    assert _run(tmp_path, capsys, src) == [2.0 * 1 + 3.0 * 2 + 4.0 * 3, 4.0, 0.0, 0.0]


def test_reading_a_buffer_field_never_assigned_is_a_located_error(tmp_path, capsys):
    path = tmp_path / "k.slang"
    path.write_text(HANDLE + """
[numthreads(1, 1, 1)]
void computeMain() {
    View v;
    v.base = 0;
    out[0] = v.at(0);
}
""")
    assert cli.main(["run", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:10:5: error:" in err and "used before it is assigned" in err and "Traceback" not in err
