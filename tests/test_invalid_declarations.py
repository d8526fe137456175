"""Programs Slang rejects are rejected here too, located: a parameter or a struct field declared
twice, and a declaration's attribute on a statement."""

from __future__ import annotations

from slang_helpers import expect_error


def test_duplicate_parameter():
    expect_error("float g(float p, float p) { return p; }", "E0009", 1, 18, "a second parameter named 'p' in 'g'")


def test_duplicate_parameter_of_a_method():
    expect_error("struct S { float m(int a, float a) { return a; } }", "E0009", 1, 27,
                 "a second parameter named 'a'")


def test_duplicate_field():
    expect_error("struct A { int nx; int nx; };\nfloat g() { A a; a.nx = 1; return a.nx; }", "E0009", 1, 20,
                 "a second field named 'nx' in struct 'A'")


def test_declaration_attribute_on_a_statement():
    expect_error("[Differentiable] float g(float x) { [BackwardDerivative(nope)] return x; }", "E0001", 1, 38,
                 "[BackwardDerivative] applies to a declaration, not to a statement")


def test_loop_attributes_stay_allowed():
    from diffc.frontend import compile_slang

    compile_slang("[Differentiable] float g(float x) { [MaxIters(4)] [ForceUnroll] for (int i = 0; i < 4; i++) "
                  "x = x * 0.5; [unroll] [MaxIters(8)] while (x > 10.0) { x = x - 1.0; } return x; }", "ok.slang")
