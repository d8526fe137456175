"""Bad input that used to slip through or come back without a place (issue 27, item 4): each error
names the Slang file, line and column; a flat chain of any length compiles without recursion."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from diffc.diagnostics import DiffcError
from diffc.frontend import compile_slang
from diffc.interp import run_function
from slang_helpers import expect_error


def diffc(*args: str):
    return subprocess.run([sys.executable, "-m", "diffc.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "DIFFC_DEVICE": "cpu"}, timeout=300)


def _head(result) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    return result.stderr.splitlines()[0]


# ---- numthreads and integer literals out of range ----

@pytest.mark.parametrize("args,col", [("4294967297, 1, 1", 13), ("1, 1, 2147483648", 19)])
def test_numthreads_beyond_int_is_an_error_at_the_argument(args, col):
    src = f"RWStructuredBuffer<int> b;\n[numthreads({args})]\nvoid computeMain(uint3 t : SV_DispatchThreadID) {{ b[t.x] = 1; }}\n"
    head = expect_error(src, "E0003", 2, col, "invalid 'numthreads' value")
    assert "more than an int holds (2147483647)" in head


def test_numthreads_up_to_int_max_passes_the_front_end():
    src = "RWStructuredBuffer<int> b;\n[numthreads(2147483647, 1, 1)]\nvoid computeMain(uint3 t : SV_DispatchThreadID) { b[t.x] = 1; }\n"
    compile_slang(src, "ok.slang")


def test_literal_beyond_64_bits_is_slangs_error():
    expect_error("uint64_t f() { return 18446744073709551616; }", "E0001", 1, 23,
                 "is too large to be represented in any integer type")


def test_literal_past_int64_warns_and_keeps_its_unsigned_value(capsys):
    src = """uint f() { uint64_t x = 9223372036854775808; return uint(x >> 63); }
uint g() { int64_t y = -9223372036854775808; return uint(uint64_t(y) >> 63); }
uint h() { uint64_t z = 9223372036854775808u; return uint(z >> 62); }
"""
    module = compile_slang(src, "w.slang")
    err = capsys.readouterr().err
    # one warning, where Slang gives it: the unsuffixed literal that is not negated
    assert err.count("warning") == 1, err
    assert "w.slang:1:25: warning: integer literal is too large to be represented in a signed integer type, " \
           "interpreting as unsigned" in err
    assert run_function(module, "f") == (1,)
    assert run_function(module, "g") == (1,)
    assert run_function(module, "h") == (2,)


# ---- a flat chain of operations: no recursion, right numbers ----

def test_flat_chain_of_2000_terms_differentiates_against_finite_differences():
    from slang_harness import Compiled

    body = " + ".join(["x * y"] * 1000 + ["x"] * 1000)
    Compiled(f"[Differentiable] float f(float x, float y) {{ return {body}; }}", "f").check_derivatives(
        [np.float64(0.7), np.float64(-1.3)])


@pytest.mark.parametrize("op,want", [("+", lambda x: 3000 * x), ("-", lambda x: x - 2999 * x),
                                     ("|", lambda x: x), ("^", lambda x: 0)])
def test_flat_integer_chain_of_3000_terms(op, want):
    src = f"int f(int x) {{ return {f' {op} '.join(['x'] * 3000)}; }}"
    for x in (3, -5):
        assert run_function(compile_slang(src, "c.slang"), "f", x) == (want(x),)


def test_flat_boolean_chain_and_constant_chains():
    ones = " + ".join(["1"] * 3000)
    src = f"""static const int N = {ones} - 2998;
enum E {{ A = {ones}, B }};
int f(int x) {{
    float arr[{ones} - 2996];
    bool all = {' && '.join(['x > 0'] * 3000)};
    bool any = {' || '.join(['x > 10'] * 3000)};
    return N * 100 + (int(E.B) - 3000) * 10 + (all ? 1 : 0) + (any ? 1000 : 0) + 0 * int(arr[0]);
}}"""
    module = compile_slang(src, "b.slang")
    assert run_function(module, "f", 4) == (2 * 100 + 1 * 10 + 1,)
    assert run_function(module, "f", 11) == (2 * 100 + 1 * 10 + 1 + 1000,)


def test_deep_nesting_is_still_a_located_error():
    """Parentheses nest for real: past the cap the error names the place."""
    src = "float f(float x) { return " + "(" * 300 + "x" + ")" * 300 + "; }"
    with pytest.raises(DiffcError) as info:
        compile_slang(src, "n.slang")
    assert str(info.value).startswith("n.slang:1:"), str(info.value)
    assert "nested more than" in str(info.value)


# ---- diffc run: the file's errors name their place ----

def test_no_entry_point_names_the_file(tmp_path):
    f = tmp_path / "lib.slang"
    f.write_text("float f(float x) { return x; }\n")
    assert _head(diffc("run", str(f))).startswith(f"{f}:1:1: error: no entry point")


def test_several_entry_points_name_the_second(tmp_path):
    f = tmp_path / "two.slang"
    f.write_text("RWStructuredBuffer<float> b;\n[numthreads(1, 1, 1)] void one(uint3 t : SV_DispatchThreadID) { b[0] = 1.0; }\n"
                 "[numthreads(1, 1, 1)] void two(uint3 t : SV_DispatchThreadID) { b[0] = 2.0; }\n")
    head = _head(diffc("run", str(f)))
    assert head.startswith(f"{f}:3:28: error: several compute entry points (one, two)"), head


RUN = """\
//TEST_INPUT:ubuffer(data=[0.0 0.0], stride=4):out,name=b
RWStructuredBuffer<float> b;
{decl}
[numthreads(2, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID) {{ b[tid.x] = {use}; }}
"""


@pytest.mark.parametrize("decl,use,words", [
    ("RWStructuredBuffer<float> a;", "a[tid.x]", "buffer 'a' is used by 'computeMain' but no //TEST_INPUT declares it"),
    ("//TEST_INPUT:ubuffer(data=[1.0 2.0], stride=4):name=a\nRWStructuredBuffer<bool> a;", "float(a[tid.x])",
     "buffer 'a' holds i1 values, which diffc run does not read"),
    ("Texture2D<float> a;", "a.Load(int3(0, 0, 0))", "texture 'a' is used by 'computeMain' but no //TEST_INPUT"),
])
def test_run_names_the_buffer_declaration(tmp_path, decl, use, words):
    f = tmp_path / "k.slang"
    f.write_text(RUN.format(decl=decl, use=use))
    line = 3 + decl.count("\n")
    result = diffc("run", str(f))
    head = _head(result)
    assert head.startswith(f"{f}:{line}:1: error[run-input]: {words}"), head
    assert result.stderr.splitlines()[1].strip() == decl.splitlines()[-1]  # the declaration, with a caret


def test_literal_2_pow_63_reaches_the_device_as_an_unsigned_value(tmp_path, capsys):
    """9223372036854775808 is a uint64_t (Slang's reading, with its warning): the kernel sees 2^63,
    not a negative number."""
    from diffc import cli

    f = tmp_path / "big.slang"
    f.write_text("""//TEST_INPUT:ubuffer(data=[0 0 0 0], stride=4):out,name=b
RWStructuredBuffer<float> b;
[numthreads(1, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID)
{
    uint64_t x = 9223372036854775808;
    b[0] = float(x);
    b[1] = (x > 5) ? 1.0 : 0.0;
    b[2] = float(x / 2);
    b[3] = float(x >> 63);
}
""")
    assert cli.main(["run", str(f)]) == 0
    out = capsys.readouterr()
    assert "big.slang:6:18: warning: integer literal is too large" in out.err
    assert [float(v) for v in out.out.split()[2:]] == [2.0**63, 1.0, 2.0**62, 1.0]
