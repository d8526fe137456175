"""Forms that a Slang library spread over a module's files is written in, one test each: a static
method called through a generic type's instance (`Box<T, N>::make(x)`), several variables of one
generic type in one declaration, `where T.Differential : I`, a struct declared inside a struct, a
namespace declaring a type that another scope declares too, and a module file compiled on its
own that the module `#include`s (with a `#pragma once` header two files include). Values against
numpy, derivatives against float64 central differences in both modes (slang_harness)."""

from __future__ import annotations

import numpy as np
import pytest
from slang_harness import Compiled, compile_error

from diffc.frontend import compile_slang

STATIC_THROUGH_INSTANCE = """
struct Box<T : __BuiltinFloatingPointType, int N> : IDifferentiable {
    T v[N];
    [Differentiable] static Box<T, N> fill(T x) { Box<T, N> b; for (int i = 0; i < N; i++) b.v[i] = x * T(i + 1); return b; }
    static const int Count = N;
}
[Differentiable] float f(float x, float y) {
    Box<float, 3> a, b;
    a = Box<float, 3>::fill(x);
    b = Box<float, 3>.fill(y);
    float s = 0.0;
    for (int i = 0; i < Box<float, 3>::Count; i++) s += a.v[i] * b.v[i];
    return s;
}
"""


def test_a_static_method_through_a_generic_instance_and_two_variables_of_one_generic_type():
    c = Compiled(STATIC_THROUGH_INSTANCE, "f")
    x, y = 0.7, -1.3
    assert c.primal([x, y])[0] == pytest.approx(x * y * (1 + 4 + 9))
    c.check_derivatives([x, y])


def test_where_clause_on_an_associated_type_is_accepted():
    src = """
    [Differentiable] T twice<T : __BuiltinFloatingPointType>(T x) where T.Differential : IDifferentiable
    { return x + x; }
    [Differentiable] float f(float x) { return twice<float>(x) * x; }
    """
    c = Compiled(src, "f")
    assert c.primal([1.5])[0] == pytest.approx(4.5)
    c.check_derivatives([1.5])


NESTED = """
struct Scaler<T : __BuiltinFloatingPointType> {
    struct Pair<S : __BuiltinFloatingPointType> : IDifferentiable { S a; S b; }
    typealias P = Pair<T>;
    T k;
    [Differentiable] T apply(P p) { return k * p.a * p.b; }
}
[Differentiable] float f(float x, float y) {
    Scaler<float> s = { 3.0 };
    Scaler<float>.P p = { x, y };
    Pair<float> q = { y, y };
    return s.apply(p) + s.apply(q);
}
"""


def test_a_struct_declared_inside_a_struct():
    c = Compiled(NESTED, "f")
    x, y = 0.4, 1.2
    assert c.primal([x, y])[0] == pytest.approx(3 * x * y + 3 * y * y)
    c.check_derivatives([x, y])


def test_a_nested_struct_using_the_outer_type_parameter_is_refused_where_it_does():
    msg = compile_error("struct O<T> {\n  struct I { T v; }\n  T w;\n}\nfloat f(float x) { return x; }\n")
    assert "prog.slang:2:14: error[E0008]" in msg and "type parameter 'T'" in msg


NAMESPACE_CLASH = """
struct Gain { float k; [Differentiable] float apply(float x) { return k * x; } }
namespace act {
    struct Gain { float k; [Differentiable] float apply(float x) { return x * x * k; } }
    float useHere(float x) { Gain g = { 2.0 }; return g.apply(x); }   // act's Gain
}
[Differentiable] float f(float x) {
    Gain outer = { 5.0 };
    act::Gain inner = { 3.0 };
    act.Gain other = { 1.0 };
    return outer.apply(x) + inner.apply(x) + other.apply(x) + no_diff act::useHere(1.5);
}
"""


def test_a_namespace_type_that_another_scope_declares_too():
    c = Compiled(NAMESPACE_CLASH, "f")
    x = 0.6
    assert c.primal([x])[0] == pytest.approx(5 * x + 3 * x * x + x * x + 2 * 1.5 * 1.5)
    c.check_derivatives([x])


MODULE = {
    "lib/Lib.slang": "module Lib;\n__include Parts;\n",
    "lib/Parts.slang": 'implementing Lib;\n#include "parts/sq.slang"\n#include "parts/cube.slang"\n',
    "lib/parts/common.slang": "#pragma once\n#define POW_FN(Name, K) [Differentiable] float Name(float x) "
                              "{ float r = 1.0; for (int i = 0; i < K; i++) r *= x; return r; }\n"
                              "struct Shared { float unused; }\n",
    "lib/parts/sq.slang": 'implementing Lib;\n#include "common.slang"\nPOW_FN(sq, 2)\n',
    "lib/parts/cube.slang": 'implementing Lib;\n#include "common.slang"\nPOW_FN(cube, 3)\n',
}


@pytest.mark.parametrize("main", ["lib/Lib.slang", "lib/Parts.slang", "lib/parts/sq.slang", "lib/parts/cube.slang"])
def test_each_file_of_a_module_compiles_on_its_own(tmp_path, main):
    for name, text in MODULE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    path = tmp_path / main
    m = compile_slang(path.read_text(), str(path))
    names = sorted(op.sym_name.data for op in m.ops if hasattr(op, "sym_name"))
    assert names == ["cube", "sq"]
    c = Compiled(path.read_text() + "\n[Differentiable] float f(float x) { return sq(x) + cube(x); }\n", "f",
                 filename=str(path))
    assert c.primal([1.5])[0] == pytest.approx(1.5 ** 2 + 1.5 ** 3)
    c.check_derivatives([np.float64(1.5)])


MODEL_ALIASES = """
interface IModel<InputT : IDifferentiable, OutputT : IDifferentiable> {
    [Differentiable] OutputT forward(InputT x);
}
extension<InputT : IDifferentiable, OutputT : IDifferentiable, Model : IModel<InputT, OutputT>> Model {
    typealias InputType = InputT;
    typealias OutputType = OutputT;
}
extension<T : IDifferentiable, Model : IModel<T, T>> Model { typealias IOType = T; }
struct Pass<T : IDifferentiable> : IModel<T, T> { [Differentiable] IOType forward(IOType x) { return x; } }
struct Spread<int I, int O> : IModel<float[I], float[O]> {
    float w;
    [Differentiable] OutputType forward(InputType x) {
        OutputType y;
        for (int o = 0; o < O; o++) { y[o] = 0.0; for (int i = 0; i < I; i++) y[o] += w * x[i] * float(o + i + 1); }
        return y;
    }
}
struct Square : IModel<float, float> { [Differentiable] IOType forward(InputType x) { return x * x; } }
[Differentiable] float f(float a, float b) {
    Spread<2, 3> s = { 2.0 };
    Pass<float[3]> p;
    Square q;
    float x[2] = { a, b };
    float y[3] = p.forward(s.forward(x));
    return q.forward(y[0]) + y[1] * y[2];
}
"""


def test_typealiases_of_a_generic_extension_over_a_generic_interface():
    """`extension<I, O, M : IModel<I, O>> M { typealias InputType = I; }`: each struct that is
    an IModel<X, Y> has InputType X (IOType only where X and Y are one type)."""
    c = Compiled(MODEL_ALIASES, "f")
    a, b = 0.5, -1.5
    y = [2.0 * (a * (o + 1) + b * (o + 2)) for o in range(3)]
    assert c.primal([a, b])[0] == pytest.approx(y[0] ** 2 + y[1] * y[2])
    c.check_derivatives([a, b])


def test_an_alias_the_struct_does_not_get_is_an_unknown_type():
    msg = compile_error(MODEL_ALIASES.replace("[Differentiable] OutputType forward(InputType x)",
                                              "[Differentiable] OutputType forward(IOType x)"))
    assert "error[E0002]" in msg and "IOType" in msg


def test_the_main_file_qualifies_a_type_of_an_imported_files_namespace(tmp_path):
    (tmp_path / "acts.slang").write_text(
        "struct Gain { float k; }\n"
        "namespace act { struct Gain { float k; [Differentiable] float apply(float x) { return k * x * x; } } }\n")
    main = tmp_path / "main.slang"
    main.write_text("import acts;\n[Differentiable] float f(float x) { act::Gain g = { 3.0 }; Gain h = { 2.0 }; "
                    "return g.apply(x) + h.k * x; }\n")
    c = Compiled(main.read_text(), "f", filename=str(main))
    assert c.primal([0.5])[0] == pytest.approx(3 * 0.25 + 1.0)
    c.check_derivatives([0.5])
