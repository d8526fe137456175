"""Front-end diagnostics: `file:line:col: error[CODE]: message`, the source line, a caret under
the offending text; and a property test that lowered arithmetic computes what the source says."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diffc.diagnostics import DiffcError
from diffc.frontend import compile_slang

CASES = [
    ("float f(float x) {\n  return x +* 2;\n}\n", "E0001", 2, 13, "*"),
    ("float f(float x) {\n  float y = x\n  return y;\n}\n", "E0001", 3, 3, "return"),
    ('void main() {\n  printf("abc);\n}\n', "E0001", 2, 10, '"'),
    ("float f(float x) {\n  return x + yy;\n}\n", "E0002", 2, 14, "yy"),
    ("float f(Foo x) {\n  return 1.0;\n}\n", "E0002", 1, 9, "Foo"),
    ("[Differentiable]\nfloat sq(float x) { return x * x; }\nvoid main() {\n  float x = 3.0;\n"
     "  bwd_diff(sq)(x, 1.0);\n}\n", "E0003", 5, 16, "x"),
    ("void main() {\n  float3 v = float3(1.0, 2.0, 3.0);\n  float2 w = v;\n}\n", "E0003", 3, 14, "v"),
    ("void main() {\n  let a = 1.0;\n  a = 2.0;\n}\n", "E0003", 3, 3, "a"),
    ("void main() {\n  var p = diffPair(1.0, 2.0);\n  float z = p.q;\n}\n", "E0004", 3, 15, "q"),
    ("void main() {\n  float2 v = float2(1.0, 2.0);\n  float z = v.z;\n}\n", "E0004", 3, 15, "z"),
    ("float g(float a, float b) { return a; }\nvoid main() {\n  float z = g(1.0);\n}\n", "E0005", 3, 13, "g(1.0)"),
    ("void main() {\n  float3 v = float3(1.0, 2.0);\n}\n", "E0005", 2, 14, "float3(1.0, 2.0)"),
    ("float h(float a) { return a; }\n[Differentiable]\nfloat f(float x) {\n  return h(x) * 2.0;\n}\n",
     "E0006", 4, 10, "h(x)"),
    ("float h(float a) { return a; }\nvoid main() {\n  let d = fwd_diff(h)(diffPair(1.0));\n}\n",
     "E0006", 3, 20, "h"),
    ("[Differentiable]\nfloat f(float x) {\n  float y = x;\n  while (y < 10.0) { y = y * x; }\n  return y;\n}\n",
     "E0007", 4, 3, "while"),
    ("[Differentiable]\nfloat f(float x, int n) {\n  float y = x;\n  for (int i = 0; i < n; i++) { y = y * x; }\n"
     "  return y;\n}\n", "E0007", 4, 3, "for"),
    ("struct P { half a; int b; };\nRWStructuredBuffer<P> buf;\n", "E0008", 2, 1, "RWStructuredBuffer<P>"),
    ("void main() {\n  float a = 1.0;\n  int a = 2;\n}\n", "E0009", 3, 3, "int a = 2"),
    ("struct P { float a; };\nstruct P { float b; };\n", "E0009", 2, 1, "struct P { float b; };"),
]


@pytest.mark.parametrize("src,code,line,col,token", CASES)
def test_diagnostic_location_and_caret(src, code, line, col, token):
    with pytest.raises(DiffcError) as info:
        compile_slang(src, "bad.slang")
    head, text, caret = str(info.value).splitlines()
    assert head.startswith(f"bad.slang:{line}:{col}: error[{code}]: ")
    assert text == "    " + src.splitlines()[line - 1]
    start = caret.index("^")
    assert start == 4 + col - 1
    assert text[start : start + len(token)] == token
    assert len(caret.strip()) in (1, len(token))


def test_bounded_loops_are_accepted():
    compile_slang("[Differentiable]\nfloat f(float x, int n) {\n  float y = x;\n  [MaxIters(8)]\n"
                  "  for (int i = 0; i < n; i++) { y = y * x; }\n  return y;\n}\n", "ok.slang")


def test_no_diff_call_is_accepted():
    compile_slang("float h(float a) { return a; }\n[Differentiable]\nfloat f(float x) {\n"
                  "  return no_diff h(x) * x + h(detach(x));\n}\n", "ok.slang")


_exprs = st.deferred(
    lambda: st.one_of(
        st.sampled_from(["x", "y", "1.5", "2", "0.25"]),
        st.tuples(_exprs, st.sampled_from(["+", "-", "*"]), _exprs).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        _exprs.map(lambda e: f"(-{e})"),
        st.tuples(_exprs, _exprs).map(lambda t: f"max({t[0]}, {t[1]})"),
    )
)


@settings(max_examples=40, deadline=None)
@given(_exprs, st.floats(-3, 3), st.floats(-3, 3))
def test_lowered_arithmetic_matches_source(expr, x, y):
    from diffc.interp import run_function

    m = compile_slang(f"float f(float x, float y) {{ return {expr}; }}", "p.slang")
    (got,) = run_function(m, "f", x, y)
    want = eval(expr, {"max": max}, {"x": x, "y": y})
    assert got == pytest.approx(want, rel=1e-9, abs=1e-9)


# Inputs that used to crash the front end (found by tests/test_bad_input_fuzz.py), each now a
# located error: (source, code, line, col, the caret's text, words of the message).
FUZZ_FOUND = [
    ("void main() {\n  int x = 1\u00b2;\n}\n", "E0001", 2, 12, "\u00b2", "unexpected character '\u00b2'"),
    ("void main() {\n  float \u03bb = 1.0;\n}\n", "E0001", 2, 9, "\u03bb", "unexpected character '\u03bb'"),
    ("void main() {\n  uint y = 0x;\n}\n", "E0001", 2, 12, "0x", "malformed number '0x' (no hex digits)"),
    ("void main() {\n  int y = 99999999999999999999;\n}\n", "E0001", 2, 11, "99999999999999999999",
     "integer literal 99999999999999999999 is too large to be represented in any integer type"),
    ("void main() {\n  int y = 1e309;\n}\n", "E0003", 2, 11, "1e309", "the constant inf does not fit in int"),
    ("void main() {\n  int y = int(1e30);\n}\n", "E0003", 2, 15, "1e30", "does not fit in int"),
    ("float f(float x) {\n  return x * 1e39;\n}\n", "E0003", 2, 14, "1e39", "does not fit in float"),
    ("void main() {\n  half h = 70000.0;\n}\n", "E0003", 2, 12, "70000.0", "does not fit in half"),
    ("float f(float x) {\n  return " + "(" * 300 + "x" + ")" * 300 + ";\n}\n", "E0008", 2, 266, "(",
     "expressions nested more than 256 levels deep"),
    ("float f(float x) {\n  return " + "sin(" * 300 + "x" + ")" * 300 + ";\n}\n", "E0008", 2, 1034, "sin",
     "expressions nested more than 256 levels deep"),
    ("float f(float x) {\n  return " + "- " * 300 + "x;\n}\n", "E0008", 2, 522, "-",
     "expressions nested more than 256 levels deep"),
    ("float f(DifferentialPair<inout> y) {\n  return 1.0;\n}\n", "E0002", 1, 9, "DifferentialPair<inout>",
     "'inout' is not a type (in the arguments of DifferentialPair)"),
    ("float f(vector<float3, 2> y) {\n  return 1.0;\n}\n", "E0003", 1, 9, "vector<float3, 2>",
     "vector<T, N> needs a scalar type T and a constant N from 1 to 65536"),
    ("RWStructuredBuffer<float> g;\nRWStructuredBuffer<float> g;\n", "E0009", 2, 1, "RWStructuredBuffer<float> g;",
     "a second global named 'g'"),
    ("struct S {\n  float f(float x) { return x; }\n  float f(float x) { return x * x; }\n}\n", "E0009", 3, 9, "f",
     "method 'f' of S is defined twice with the same parameter types"),
    ("void main() {\n  " + "{" * 200 + "}" * 200 + "\n}\n", "E0008", 2, 131, "{",
     "statements nested more than 128 levels deep"),
    ("void main() {\n  float y = 0.0;\n  " + "if (y > 0.0) " * 200 + "y = 1.0;\n}\n", "E0008", 3, 1667, "if",
     "statements nested more than 128 levels deep"),
]


@pytest.mark.parametrize("src,code,line,col,token,words", FUZZ_FOUND)
def test_fuzz_found_inputs_are_located_errors(src, code, line, col, token, words):
    with pytest.raises(DiffcError) as info:
        compile_slang(src, "bad.slang")
    head, text, caret = str(info.value).splitlines()
    assert head.startswith(f"bad.slang:{line}:{col}: error[{code}]: ") and words in head, head
    start = caret.index("^")
    assert start == 4 + col - 1 and text[start: start + len(token)] == token, str(info.value)


def test_nesting_up_to_the_caps_compiles():
    """Right under the caps the front end and the whole pipeline still run (no RecursionError)."""
    from diffc.interp import run_function

    for opener in ("(", "sin(", "(-"):
        m = compile_slang("float f(float x) {\n  return " + opener * 120 + "x" + ")" * 120 + ";\n}\n", "ok.slang")
        assert run_function(m, "f", 0.5)[0] == pytest.approx(eval(opener * 120 + "0.5" + ")" * 120, {"sin": math.sin}))
    text = "float f(float x) {\n  float y = x;\n  " + "if (y > 0.0) { y = y * 2.0; " * 62 + "}" * 62 + "\n  return y;\n}\n"
    assert run_function(compile_slang(text, "ok.slang"), "f", 0.5)[0] == 0.5 * 2.0**62


def test_control_characters_keep_lines_and_columns():
    # \v and \f are C white space; the diagnostic's line is the one line_col counted (str.splitlines
    # would also split at \v and \x1c and show the wrong line); a control character is named by
    # its code point.
    src = "void main() {\n  float\v x = 1.0;\f\n  int y = 1 \x1c;\n}\n"
    with pytest.raises(DiffcError) as info:
        compile_slang(src, "bad.slang")
    head, text, caret = str(info.value).split("\n")
    assert head == "bad.slang:3:13: error[E0001]: unexpected character U+001C"
    assert text == "      int y = 1 \x1c;" and caret == "    " + " " * 12 + "^"


def test_same_name_in_sibling_and_nested_scopes_is_fine():
    from diffc.interp import run_function

    m = compile_slang("""
float f(float x) {
    float acc = 0;
    for (int i = 0; i < 3; i++) { float t = x * i; acc += t; }
    for (int i = 0; i < 2; i++) { float t = x; acc += t; }
    { float acc = 100.0; }
    return acc;
}""", "ok.slang")
    assert run_function(m, "f", 2.0) == (2.0 * (0 + 1 + 2) + 2 * 2.0,)
