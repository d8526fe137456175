"""SlangPy's reflection API over diffc's checked program (diffc/slangpy/reflection.py): types
written as text resolve as the front end resolves them, a struct instance's methods and their
overloads are the checker's, typealiases inside generic structs, conformances a struct or an
extension declares to an interface with generic arguments, generic functions instantiated for
explicit arguments (None where their constraints refuse them)."""

from __future__ import annotations

import pytest

import diffc.slangpy as spy
from diffc.slangpy import reflection as R

SRC = """
interface IMap<In : IDifferentiable, Out : IDifferentiable> { [Differentiable] Out apply(In x); }

struct Scale<T : IFloat, int N> : IMap<T[N], T[N]>
{
    T k;
    typealias Half = Scale<half, N>;
    [Differentiable] T[N] apply(T x[N]) { T y[N]; for (int i = 0; i < N; i++) y[i] = k * x[i]; return y; }
}
extension<T : IFloat, int N> Scale<T, N> : IMap<vector<T, N>, vector<T, N>>
{
    [Differentiable] vector<T, N> apply(vector<T, N> x) { return k * x; }
}

struct Sum<int N> : IMap<float[N], float>
{
    [Differentiable] float apply(float x[N]) { float s = 0.0; for (int i = 0; i < N; i++) s += x[i]; return s; }
    float twice<int M>(float x[M]) { return 2.0 * x[0]; }
}

struct Pair { float2 a; int b; };

void witness<In : IDifferentiable, Out : IDifferentiable, M : IMap<In, Out>>() {}
float first(float x[3]) { return x[0]; }
"""


@pytest.fixture(scope="module")
def layout():
    return spy.Module.load_from_source(None, "reflect", SRC).layout


def test_builtin_types_have_slangpy_shapes_and_element_types(layout):
    v = layout.find_type_by_name("float3")
    assert isinstance(v, R.VectorType) and v.shape == (3,) and isinstance(v.element_type, R.ScalarType)
    assert v.element_type.slang_scalar_type == R.TypeReflection.ScalarType.float32
    a = layout.find_type_by_name("half[4][2]")  # an array of 2 of half[4]
    assert isinstance(a, R.ArrayType) and a.shape == (2, 4) and a.full_name == "half[4][2]"
    assert a.element_type.element_type.slang_scalar_type == R.TypeReflection.ScalarType.float16
    m = layout.find_type_by_name("float2x3")
    assert isinstance(m, R.MatrixType) and (m.rows, m.cols) == (2, 3)
    assert layout.find_type_by_name("vector<int, 6>").shape == (6,)


def test_structs_generic_instances_and_aliases(layout):
    s = layout.find_type_by_name("Scale<float, 3>")
    assert isinstance(s, R.StructType) and s.full_name == "Scale<float, 3>" and s.name == "Scale"
    assert list(s.fields) == ["k"] and s.fields["k"].full_name == "float"
    assert layout.find_type_by_name("Scale<float, 3>::Half").full_name == "Scale<half, 3>"
    p = layout.find_type_by_name("Pair")
    assert {n: t.full_name for n, t in p.fields.items()} == {"a": "float2", "b": "int"}
    assert layout.get_resolved_generic_args(s.type_reflection)[1] == 3
    assert layout.find_type_by_name("Nowhere<float>") is None
    assert layout.find_type_by_name("Scale<int, 3>") is None  # int is no IFloat


def test_methods_overloads_and_specialization(layout):
    s = layout.find_type_by_name("Scale<double, 2>")
    apply = layout.find_function_by_name_in_type(s, "apply")
    assert apply.is_overloaded  # the struct's and its extension's
    assert sorted(f.return_type.full_name for f in apply.overloads) == ["double2", "double[2]"]
    picked = apply.specialize_with_arg_types([layout.find_type_by_name("double2")])
    assert picked.return_type.full_name == "double2" and picked.parameters[0].name == "x"
    assert apply.specialize_with_arg_types([layout.find_type_by_name("float2")]) is None
    one = layout.find_function_by_name_in_type(layout.find_type_by_name("Sum<4>"), "apply")
    assert not one.is_overloaded and one.return_type.full_name == "float"
    twice = layout.find_function_by_name_in_type(layout.find_type_by_name("Sum<4>"), "twice<5>")
    assert twice.parameters[0].type.full_name == "float[5]"
    assert layout.find_function_by_name_in_type(layout.find_type_by_name("Sum<4>"), "nothing") is None


def test_generic_functions_check_their_constraints(layout):
    ok = "witness<float[3], float[3], Scale<float, 3>>"
    assert layout.find_function_by_name(ok) is not None
    # the extension's conformance counts; one the struct does not have does not
    assert layout.find_function_by_name("witness<float3, float3, Scale<float, 3>>") is not None
    assert layout.find_function_by_name("witness<float[3], float, Scale<float, 3>>") is None
    assert layout.find_function_by_name("witness<float[4], float, Sum<4>>") is not None
    assert layout.find_function_by_name("witness<float[3], float, Sum<4>>") is None
    f = layout.find_function_by_name("first")
    assert f.parameters[0].type.full_name == "float[3]" and f.return_type.full_name == "float"


def test_type_overrides_pick_the_reflection_class(layout):
    class ScaleType(R.StructType):
        @property
        def width(self) -> int:
            return self.program.get_resolved_generic_args(self.type_reflection)[1]

    R.TYPE_OVERRIDES["Scale"] = ScaleType
    try:
        t = spy.Module.load_from_source(None, "reflect2", SRC).layout.find_type_by_name("Scale<float, 7>")
        assert isinstance(t, ScaleType) and t.width == 7
    finally:
        del R.TYPE_OVERRIDES["Scale"]
