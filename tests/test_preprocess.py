"""The preprocessor (diffc/frontend/source/preprocess.py): each directive changes what a compiled function
computes as C's would, and every diagnostic still names the file, line and column it is about
(after a removed `#if 0` group, inside an included file, after a macro's expansion)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from slang_harness import Compiled
from slang_helpers import run

from diffc.compiler import differentiate
from diffc.diagnostics import DiffcError
from diffc.frontend import compile_slang
from diffc.frontend.source.preprocess import Preprocessed, find_include, preprocess, read_include


def value(src: str, name: str = "f", *args, filename: str = "test.slang", **options):
    """The first result of `name`(args) in the interpreter, after the derivative pipeline;
    `options` go to compile_slang (defines, include_dirs)."""
    m = compile_slang(src, filename, **options)
    m.verify()
    differentiate(m)
    return run(m, name, *args)[0]


def error(src: str, filename: str = "bad.slang") -> tuple[str, str, str]:
    """The diagnostic compiling `src` gives: its header, the source line shown and the caret line."""
    with pytest.raises(DiffcError) as info:
        compile_slang(src, filename)
    lines = str(info.value).splitlines()
    assert len(lines) == 3, str(info.value)
    return lines[0], lines[1].removeprefix("    "), lines[2].removeprefix("    ")


def under_caret(shown: str, caret: str) -> str:
    start = caret.index("^")
    return shown[start : start + len(caret.strip())]


# --- #define / #undef ----------------------------------------------------------------------------

def test_object_and_function_like_macros_nested():
    src = """
#define SCALE 2.5
#define SQ(a) ((a) * (a))
#define CUBE(a) (SQ(a) * (a))
#define OFFSET (SCALE - 1.0)
[Differentiable]
float f(float x) { return SCALE * CUBE(x + OFFSET); }
"""
    for x in (0.3, -1.7):
        assert value(src, "f", x) == pytest.approx(2.5 * (x + 1.5) ** 3)
    Compiled(src, "f").check_derivatives([0.4])


def test_a_macro_never_expands_inside_its_own_expansion():
    # g(x) becomes (g(x) * 3.0): the inner g is the function, not the macro again.
    src = """
static const float A = 0.5;
float g(float t) { return t + 1.0; }
#define g(t) (g(t) * 3.0)
#define A (B + 1.0)
#define B (A * 2.0)
float f(float x) { return g(x); }
float h() { return A; }
"""
    assert value(src, "f", 2.0) == pytest.approx(9.0)
    assert value(src, "h") == pytest.approx(0.5 * 2.0 + 1.0)  # A -> (B + 1.0) -> ((A * 2.0) + 1.0)


def test_rescan_with_the_rest_of_the_line_and_arguments_expanded_first():
    src = """
#define G(v) (v + 10.0)
#define F G
#define TWO 2.0
#define MUL(a, b) ((a) * (b))
float f(float x) { return F(x) + MUL(TWO, MUL(x, TWO)); }
"""
    assert value(src, "f", 1.5) == pytest.approx(1.5 + 10.0 + 2.0 * 1.5 * 2.0)


def test_paste_stringize_and_variadic_macros():
    src = """
float myFunc(float t) { return t * 4.0; }
float sum3(float a, float b, float c) { return a + b + c; }
#define CAT(a, b) a ## b
#define SUM(...) sum3(__VA_ARGS__)
#define FIRST(a, ...) a
float f(float x) { return CAT(my, Func)(x) + SUM(x, 1.0, FIRST(2.0, 7.0, 8.0)); }
"""
    assert value(src, "f", 0.5) == pytest.approx(0.5 * 4.0 + 0.5 + 1.0 + 2.0)
    text = preprocess('#define S(x) #x\nS(a  + "b\\n")\n', "s.slang").text
    assert text.splitlines()[1] == r'"a + \"b\\n\""'


def test_undef_and_redefine():
    src = """
#define K 3.0
float f1() { return K; }
#undef K
#ifdef K
float f2() { return 100.0; }
#else
#define K 5.0
float f2() { return K; }
#endif
"""
    assert value(src, "f1") == pytest.approx(3.0)
    assert value(src, "f2") == pytest.approx(5.0)


def test_backslash_continues_a_define_and_a_call_may_span_lines():
    src = """
#define POLY(x) \\
    (3.0 * (x) * (x) \\
     + 1.0)
float f(float x) {
    return POLY(
        x + 1.0
    ) + 0.25;
}
"""
    assert value(src, "f", 2.0) == pytest.approx(3.0 * 9.0 + 1.0 + 0.25)


def test_line_macro_gives_the_source_line():
    src = "int f() {\n  return __LINE__;\n}\n#define HERE __LINE__\nint g() { return HERE; }\n"
    assert value(src, "f") == 2
    assert value(src, "g") == 5  # the line of the use, not of the #define


def test_a_file_without_directives_is_unchanged():
    src = "// a comment\nfloat f(float x) { /* # not a directive */ return x; }\n\n"
    assert preprocess(src, "a.slang").text == src


# --- #if and friends -----------------------------------------------------------------------------

CONDITIONS = [
    # (expression, whether it is true; A is 3, B is defined empty, C undefined)
    ("1", True), ("0", False),
    ("defined(A)", True), ("defined A", True), ("defined(C)", False), ("!defined C", True),
    ("defined(A) && defined B && !defined(C)", True),
    ("A == 3", True), ("A != 3", False), ("A * 2 + 1 == 7", True), ("(A - 7) / 2 == -2", True),
    ("-7 % 3 == -1", True), ("7 / 2 == 3", True), ("C == 0", True), ("C", False),
    ("A > 2 && A <= 3", True), ("A < 3 || A >= 4", False), ("(1 < 2) + (2 >= 2) == 2", True),
    ("0x10 == 16 && 010 == 8 && 5u == 5", True), ("1 ? 0 : 1", False), ("0 && 1 / 0", False),
    ("1 || 1 % 0", True), ("-(A) + 3", False), ("~0 == -1", True), ("(1 << 4 | 1) == 17", True),
    ("SQ(A) == 9", True),
]


@pytest.mark.parametrize("expr,truth", CONDITIONS)
def test_if_expressions(expr, truth):
    src = f"""
#define A 3
#define B
#define SQ(v) ((v) * (v))
#if {expr}
float f() {{ return 1.0; }}
#else
float f() {{ return 0.0; }}
#endif
"""
    assert value(src, "f") == (1.0 if truth else 0.0)


def test_ifdef_ifndef_elif_else_nested():
    src = """
#define MODE 2
#define USE_SIN
#ifndef MODE
#error MODE must be set
#endif
float f(float x) {
#if MODE == 1
    return x;
#elif MODE == 2
  #ifdef USE_SIN
    return sin(x);
  #else
    return cos(x);
  #endif
#elif 1 / 0
    nothing here is read, not even the condition above
#else
    return 0.0;
#endif
}
"""
    assert value(src, "f", 0.7) == pytest.approx(math.sin(0.7))


def test_groups_left_out_are_never_read():
    src = """
#if 0
  this is not Slang ' " /*
  #if 1 / 0
  #error not reached
  #bogus directive
  #endif
#endif
#ifdef NOT_DEFINED
float f() { return 2.0; }
#else
float f() { return 1.0; }
#endif
/*
#error a directive inside a comment is not one
*/
"""
    assert value(src, "f") == 1.0


def test_predefined_macros_as_with_dash_d():
    src = "#ifdef USE_AUTODIFF\nfloat f() { return WEIGHT; }\n#else\nfloat f() { return 0.0; }\n#endif\n"
    assert value(src, "f", defines={"USE_AUTODIFF": "", "WEIGHT": "0.5 * 3.0"}) == pytest.approx(1.5)
    assert value(src, "f") == 0.0


# --- #include ------------------------------------------------------------------------------------

@pytest.fixture
def tree(tmp_path):
    """main.slang's folder: lib/poly.slang (which includes its sibling sq.slang), once.slang with
    #pragma once, twice.slang without."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "sq.slang").write_text("#define SQ(a) ((a) * (a))\n")
    (tmp_path / "lib" / "poly.slang").write_text(
        '#pragma once\n#include "sq.slang"\n[Differentiable]\nfloat poly(float x) { return SQ(x) + POLY_C; }\n')
    (tmp_path / "once.slang").write_text("#pragma once\n[Differentiable]\nfloat once(float x) { return x * 2.0; }\n")
    (tmp_path / "twice.slang").write_text("float twice(float x) { return x; }\n")
    return tmp_path


def test_include_relative_to_the_including_file(tree):
    main = tree / "main.slang"
    src = ('#define POLY_C 1.5\n#include "lib/poly.slang"\n#include "lib/poly.slang"\n#include "once.slang"\n'
           '#include "once.slang"\n[Differentiable]\nfloat f(float x) { return poly(x) * SQ(2.0) + once(x); }\n')
    main.write_text(src)
    for x in (0.5, -2.0):
        assert value(src, "f", x, filename=str(main)) == pytest.approx((x * x + 1.5) * 4.0 + 2.0 * x)
    Compiled(src, "f", filename=str(main)).check_derivatives([0.8])
    assert find_include("sq.slang", str(tree / "lib" / "poly.slang")) == str(tree / "lib" / "sq.slang")
    assert find_include("nope.slang", str(main)) is None


def test_a_file_included_twice_without_pragma_once_is_there_twice(tree):
    head, shown, caret = error('#include "twice.slang"\n#include "twice.slang"\n', str(tree / "main.slang"))
    assert head.startswith(f"{tree / 'twice.slang'}:1:7: error[")  # the second copy's 'twice'
    assert shown == "float twice(float x) { return x; }" and under_caret(shown, caret) == "twice"


def test_include_dirs_are_searched_after_the_including_folder(tree, tmp_path_factory):
    other = tmp_path_factory.mktemp("elsewhere")
    src = '#include "once.slang"\nfloat f(float x) { return once(x); }\n'
    assert value(src, "f", 3.0, filename=str(other / "main.slang"), include_dirs=[str(tree)]) == pytest.approx(6.0)


def test_diffc_run_reads_includes(tmp_path, diffc_cli):
    (tmp_path / "ops.slang").write_text("[Differentiable]\nfloat sq(float x) { return x * x; }\n")
    (tmp_path / "k.slang").write_text("""\
//TEST_INPUT:ubuffer(data=[1.0 2.0 3.0], stride=4):name=inp
RWStructuredBuffer<float> inp;
//TEST_INPUT:ubuffer(data=[0 0 0], stride=4):out,name=outp
RWStructuredBuffer<float> outp;
#include "ops.slang"
#define GAIN 3.0
[shader("compute")]
[numthreads(3, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID) {
    int i = int(tid.x);
    var p = diffPair(inp[i], 0.0);
    bwd_diff(sq)(p, GAIN);
    outp[i] = p.d;
}
""")
    r = diffc_cli("run", str(tmp_path / "k.slang"))
    assert r.returncode == 0, r.stderr
    got = [float(v) for v in r.stdout.split()[2:]]
    np.testing.assert_allclose(got, [3.0 * 2 * x for x in (1.0, 2.0, 3.0)])


# --- locations -----------------------------------------------------------------------------------

def test_error_after_an_if0_group_points_at_the_original_line():
    src = "#if 0\nfloat g() { return 1.0; }\n\n#endif\n#define N 2\nfloat f(float x) {\n  return x + yy;\n}\n"
    head, shown, caret = error(src)
    assert head.startswith("bad.slang:7:14: error[E0002]: ") and "'yy'" in head
    assert shown == "  return x + yy;" and under_caret(shown, caret) == "yy"


def test_error_inside_an_included_file_names_that_file(tree):
    (tree / "lib" / "broken.slang").write_text("// helper\n\nfloat h(float x) {\n    return x * zz;\n}\n")
    src = '#if 0\n#include "missing.slang"\n#endif\n#include "lib/broken.slang"\nfloat f(float x) { return h(x); }\n'
    head, shown, caret = error(src, str(tree / "main.slang"))
    assert head.startswith(f"{tree / 'lib' / 'broken.slang'}:4:16: error[E0002]: ")
    assert shown == "    return x * zz;" and under_caret(shown, caret) == "zz"


def test_error_after_an_include_points_into_the_main_file(tree):
    src = '#include "lib/sq.slang"\n\nfloat f(float x) { return SQ(x) + ww; }\n'
    head, shown, caret = error(src, str(tree / "main.slang"))
    assert head.startswith(f"{tree / 'main.slang'}:3:35: error[E0002]: ")
    assert under_caret(shown, caret) == "ww"


def test_error_after_continued_lines_and_a_call_over_lines():
    src = "#define SQ(a) \\\n  ((a) * (a))\nfloat f(float x) {\n  float y = SQ(\n    x);\n  return y + vv;\n}\n"
    head, shown, caret = error(src)
    assert head.startswith("bad.slang:6:14: error[E0002]: ")
    assert under_caret(shown, caret) == "vv"


def test_error_inside_an_expansion_points_at_the_call():
    src = "#define BAD(a) ((a) + undefined_thing)\nfloat f(float x) {\n  return 1.0 + BAD(x) * 2.0;\n}\n"
    head, shown, caret = error(src)
    assert head.startswith("bad.slang:3:16: error[E0002]: ")
    assert under_caret(shown, caret).startswith("BAD")


def test_locations_of_ops_name_the_included_file(tree):
    m = compile_slang('#include "lib/poly.slang"\nfloat f(float x) { return poly(x); }\n', str(tree / "main.slang"),
                      defines={"POLY_C": "1.0"})
    poly = next(op for op in m.ops if getattr(op, "sym_name", None) and op.sym_name.data == "poly")
    assert poly.location.filename.data == str(tree / "lib" / "poly.slang")
    assert (poly.location.line.data, poly.location.column.data) == (4, 7)


@pytest.mark.parametrize("src,code,line,col,words", [
    ('\n\n#include "nope.slang"\n', "E0002", 3, 10, "cannot open include file 'nope.slang'"),
    ("float f() { return 1.0; }\n#if 1\n#ifdef X\n#endif\n", "E0001", 2, 1, "unterminated #if"),
    ("#else\n", "E0001", 1, 2, "#else without #if"),
    ("#endif\n", "E0001", 1, 2, "#endif without #if"),
    ("#if 1\n#else\n#elif 1\n#endif\n", "E0001", 3, 2, "#elif after #else"),
    ("#if 0\n#else\n#else\n#endif\n", "E0001", 3, 2, "#else after #else"),
    ("\n#version 450\n", "E0008", 2, 2, "'#version' is not supported"),
    ("#define F(a, b) a\nfloat f() { return F(1.0); }\n", "E0005", 2, 20, "macro 'F' takes 2 arguments, 1 given"),
    ("#define F(a) a\nfloat f() { return F(1.0; }\n", "E0001", 2, 20, "unterminated call of macro 'F'"),
    ("#if 1 +\n#endif\n", "E0001", 1, 7, "#if expression"),
    ("#if 1 / 0\n#endif\n", "E0001", 1, 7, "division by zero"),
    ("#if 1.5\n#endif\n", "E0001", 1, 5, "not an integer"),
    ("#define\n", "E0001", 1, 2, "#define needs a macro name"),
    ("#define F(a a\n", "E0001", 1, 13, "parameters of macro 'F'"),
    ("#define F(a) # b\n", "E0001", 1, 14, "'#' in a function-like macro"),
    ("#define H #\nfloat f() {\n  return H;\n}\n", "E0001", 3, 10, "unexpected character '#'"),
])
def test_directive_errors_are_located(src, code, line, col, words):
    head, shown, caret = error(src)
    assert head.startswith(f"bad.slang:{line}:{col}: error[{code}]: "), head
    assert words in head, head
    assert shown == src.split("\n")[line - 1]


def test_error_directive_is_a_located_error():
    head, shown, _ = error("#ifndef FAST\n  #error FAST must be defined, see README\n#endif\n")
    assert head == "bad.slang:2:3: error: #error FAST must be defined, see README"
    assert shown == "  #error FAST must be defined, see README"


def test_harmless_directives_do_nothing():
    src = "#pragma warning(disable : 3557)\n#pragma pack_matrix(column_major)\n#line 100\n#\nfloat f() {\n  return qq;\n}\n"
    head, _, _ = error(src)
    assert head.startswith("bad.slang:6:10: error[E0002]: ")  # the real line, whatever #line says


def test_missing_include_inside_an_included_file_is_located_there(tree):
    (tree / "outer.slang").write_text('// outer\n#include "inner_missing.slang"\n')
    head, shown, caret = error('#include "outer.slang"\n', str(tree / "main.slang"))
    assert head == f"{tree / 'outer.slang'}:2:10: error[E0002]: cannot open include file 'inner_missing.slang'"
    assert under_caret(shown, caret) == '"inner_missing.slang"'


def test_a_file_that_includes_itself_is_refused(tree):
    (tree / "self.slang").write_text('#include "self.slang"\n')
    head, _, _ = error('#include "self.slang"\n', str(tree / "main.slang"))
    assert head.startswith(f"{tree / 'self.slang'}:1:10: error[E0008]: ") and "nested deeper" in head


def test_end_of_text_stays_in_the_main_file_after_a_last_include(tree):
    (tree / "stmt.slang").write_text("  x = x * 2.0;\n")
    head, _, _ = error('float f(float x) {\n  x = x + 1.0;\n#include "stmt.slang"', str(tree / "main.slang"))
    assert head.startswith(f"{tree / 'main.slang'}:3:1: error[E0001]: ")


def test_reusable_pieces_for_other_readers_of_sibling_files(tree):
    path, text = read_include("sq.slang", str(tree / "lib" / "poly.slang"))
    assert path == str(tree / "lib" / "sq.slang") and text.startswith("#define SQ")
    assert read_include("nope.slang", str(tree / "main.slang")) is None
    a = preprocess("float f() { return 1.0; }\n", "a.slang")
    b = preprocess("#if 0\n#endif\nfloat g() { return zz; }\n", "b.slang")
    joined = Preprocessed.join([a, b])
    assert str(joined.source_map.location(joined.text.index("zz"))) == "b.slang:3:20"
    assert str(joined.source_map.location(joined.text.index("1.0"))) == "a.slang:1:20"
