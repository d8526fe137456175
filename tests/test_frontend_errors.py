"""Front-end diagnostics: `file:line:col: error[CODE]: message`, the source line, a caret under
the offending text; and a property test that lowered arithmetic computes what the source says."""

from __future__ import annotations

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
    ("struct P { float a; float b; };\nRWStructuredBuffer<P> buf;\n", "E0008", 2, 1, "RWStructuredBuffer<P>"),
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
