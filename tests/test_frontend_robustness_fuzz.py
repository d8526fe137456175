"""Inputs found by fuzzing the front end (mutations of Slang's autodiff tests and of the
groupshared / Optional / declared-Differential programs) that crashed it: each now gets a located
diagnostic naming the rule it breaks, or (where the input was valid) the right result."""

from __future__ import annotations

import pytest
from slang_harness import compile_error

REFUSED = [
    # `var` with neither a type nor a value: nothing to give the variable its type
    ("float f(float x) {\n  var q;\n  return x;\n}\n", 2, 8, "E0001", "a 'var' needs a type or a value"),
    # a struct that holds itself, directly, through another struct, an array, an Optional, a pair
    ("struct A { float x; A y; };\nfloat f(A a) { return a.x; }\n", 1, 21, "E0003",
     "'A' would contain itself: field 'y' of 'A'"),
    ("struct A : IDifferentiable { float x; A y; };\n[Differentiable] float f(A a) { return a.x; }\n", 1, 39,
     "E0003", "'A' would contain itself"),
    ("struct B : IDifferentiable { A a; };\nstruct A : IDifferentiable { float x; B y; };\n"
     "[Differentiable] float f(A a) { return a.x; }\n", 2, 39, "E0003", "'B' would contain itself: field 'y' of 'A'"),
    ("struct A { float x; A y[2]; };\nfloat f(A a) { return a.x; }\n", 1, 21, "E0003", "holds a A[2]"),
    ("struct N { float v; Optional<N> next; };\nfloat f(N n) { return n.v; }\n", 1, 21, "E0003",
     "'N' would contain itself: field 'next'"),
    ("struct A : IDifferentiable { float x; DifferentialPair<A> p; };\nfloat f(A a) { return a.x; }\n", 1, 39,
     "E0003", "holds a DifferentialPair<A>"),
    ("struct L<T> { T v; L<T> next; };\nfloat f(L<float> n) { return n.v; }\n", 1, 20, "E0003", "would contain itself"),
    # a linked list: valid Slang, but diffc passes a pointer to a struct holding pointers by value
    ("struct N { float v; N* next; };\nfloat f(N n) { return n.v; }\n", 1, 21, "E0008",
     "a pointer to 'N' inside 'N' itself (a recursive pointer type, field 'next') is not supported"),
    # a constant index past an array's or a vector's end, read or written
    ("float f(float x) {\n  float a[2] = { x, x };\n  return a[2];\n}\n", 3, 12, "E0003",
     "index 2 is out of bounds for float[2] (0 to 1)"),
    ("struct D { float n; };\nfloat f(float x) {\n  D t[1][2];\n  t[1][0].n = x;\n  return x;\n}\n", 4, 5, "E0003",
     "index 1 is out of bounds for D[2][1]"),
    ("float f(float3 v) {\n  v[3] = 1.0;\n  return v.x;\n}\n", 2, 5, "E0003", "index 3 is out of bounds for float3"),
    # huge arrays (as values or work-group memory) exhausted memory or never finished; empty ones
    # had no element for a runtime index to select
    ("float f(float x) {\n  float a[100000000];\n  return x;\n}\n", 2, 3, "E0008",
     "an array of 100000000 scalars (float[100000000]) is not supported (at most 65536"),
    ("groupshared float3 t[4294967296];\n", 1, 13, "E0008", "an array of 12884901888 scalars"),
    ("struct S { float a[2]; float b; };\nfloat f(S s[40000]) { return s[0].b; }\n", 2, 9, "E0008",
     "an array of 120000 scalars (S[40000])"),
    ("float f(Array<float, 70000> a) { return a[0]; }\n", 1, 9, "E0008", "an array of 70000 scalars"),
    # values (SSA leaves) of more than 1024 scalars took minutes to compile (4096: over three)
    ("float f(int i) {\n  float a[4096];\n  for (int k = 0; k < 4096; k++) a[k] = float(k);\n  return a[i];\n}\n", 2, 3,
     "E0008", "a value of type float[4096] (4096 scalars) is not supported (at most 1024 in a local"),
    ("struct Big { float4 rows[300]; };\nfloat f(Big b) { return b.rows[0].x; }\n", 1, 14, "E0008",
     "a value of type float4[300] (1200 scalars)"),
    ("float[2000] f() { float a[2]; return a; }\n", 1, 1, "E0008", "a value of type float[2000]"),
    ("float f(Optional<float> a[0], int i) {\n  if (let x = a[i]) return x;\n  return 0.0;\n}\n", 2, 17,
     "E0003", "Optional<float>[0] has no elements to index"),
    # a custom backward derivative that is the function itself, or returns a value
    ("[BackwardDerivative(g)]\nfloat g(float x) { return x * x; }\n", 1, 2, "E0003",
     "[BackwardDerivative] names the function it is on: a function cannot be its own derivative"),
    ("[ForwardDerivative(g)]\nOptional<float> g(Optional<float> x) { return x; }\n", 1, 2, "E0003",
     "a function cannot be its own derivative"),
    ("float h(float x) { return x; }\n[BackwardDerivative(h)]\nfloat g(float x) { return x; }\n", 2, 2, "E0003",
     "a backward derivative returns void (its gradients go to its 'inout DifferentialPair' parameters), "
     "but [BackwardDerivative] names one that returns float"),
    # a compound bitwise or shift assignment on floats (the binary operator was refused already)
    ("float f(float x) {\n  double s = x;\n  s >>= 1;\n  return float(s);\n}\n", 3, 3, "E0003",
     "operator '>>=' needs integers, got double and int"),
    ("float f(float x) {\n  x &= 3;\n  return x;\n}\n", 2, 3, "E0003", "operator '&=' needs integers"),
    ("int f(int x) {\n  x <<= 1.5;\n  return x;\n}\n", 2, 3, "E0003", "operator '<<=' needs integers, got int and float"),
    # a negative or folded constant index: lowering selected element 0 for it, silently
    ("float f(float x) {\n  float a[2] = { x, x };\n  return a[-1];\n}\n", 3, 12, "E0003",
     "index -1 is out of bounds for float[2] (0 to 1)"),
    ("float f(float3 v) {\n  return v[1 + 2];\n}\n", 2, 12, "E0003", "index 3 is out of bounds for float3 (0 to 2)"),
    ("float f(float2x2 m) {\n  return m[-1][0];\n}\n", 2, 12, "E0003", "row -1 is out of range for float2x2 (rows 0 to 1)"),
    # a primal substitute of another signature: derivative code called it with the wrong arguments
    ("float g(float x, Optional<bool> b) { return x; }\n[Differentiable, PrimalSubstituteOf(g)]\n"
     "float g2(float x, bool b) { return x * x; }\n", 2, 18, "E0003",
     "[PrimalSubstituteOf]: a primal substitute takes and returns what the function it replaces does, but one is "
     "(float, Optional<bool>) -> float and the other (float, bool) -> float"),
    # dzero/dadd of a type that has no Differential
    ("struct M { float a; };\nfloat f(float x) {\n  M m = M.dzero();\n  return x;\n}\n", 3, 9, "E0003",
     "type M is not differentiable (it has no dzero)"),
    ("float f(int x) {\n  return float(int.dadd(x, x));\n}\n", 2, 16, "E0003", "type int is not differentiable"),
    # '!' of what has no truth value (it reached lowering as a value of no leaves)
    ("float f(float x) {\n  return !none ? x : 0.0;\n}\n", 2, 11, "E0003", "operator '!' needs a bool or a number, got none"),
    ("struct S { float a; };\nfloat f(S s) {\n  return !s ? 1.0 : 0.0;\n}\n", 3, 11, "E0003",
     "operator '!' needs a bool or a number, got S"),
    # Optional of a differentiable struct inside that struct's own declaration: its Differential is
    # not known yet
    ("struct A : IDifferentiable {\n  float x;\n  typealias Differential = Optional<A>;\n};\n", 3, 28, "E0008",
     "Optional<A> inside the declaration of 'A' itself is not supported"),
    ("struct A : IDifferentiable {\n  float x;\n  typealias M = Optional<A>;\n};\n", 3, 17, "E0008",
     "Optional<A> inside the declaration of 'A' itself is not supported"),
]


@pytest.mark.parametrize("src, line, col, code, words", REFUSED)
def test_fuzz_found_inputs_get_located_errors(src, line, col, code, words):
    msg = compile_error(src, "fz.slang")
    assert f"fz.slang:{line}:{col}: error[{code}]" in msg, msg
    assert words in msg, msg


def test_a_struct_used_by_a_later_struct_that_holds_it_is_not_recursive():
    """A method's signature naming a struct that holds this one is no cycle (only fields count):
    d/dx of B.a.x * 3 where make() copies x."""
    import numpy as np
    from slang_harness import Compiled

    src = """
struct A : IDifferentiable { float x; [Differentiable] B make() { B b; b.a = this; return b; } };
struct B : IDifferentiable { A a; };
[Differentiable] float f(float x) { A a; a.x = x; return a.make().a.x * 3.0 * x; }
"""
    Compiled(src, "f").check_derivatives([np.float64(0.7)])


def test_groupshared_memory_beyond_the_device_is_an_error_not_an_abort(tmp_path, capsys):
    """PoCL aborts the process when a kernel's __local arrays exceed the device's local memory;
    the build checks each kernel's use first. The kernel asks for more than this device has
    (PoCL's is its L2 cache: 512 KiB to 2 MiB; GPUs' at most a few hundred KiB)."""
    from diffc import cli

    src = """//TEST_INPUT: set out = out ubuffer(data=[0 0 0 0], stride=4)
RWStructuredBuffer<float> out;
groupshared float a[65536];
groupshared float b[65536];
groupshared float c[65536];
[shader("compute")]
[numthreads(4, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID) {
    a[tid.x] = 1.0;
    b[tid.x] = 2.0;
    c[tid.x] = 3.0;
    GroupMemoryBarrierWithGroupSync();
    out[tid.x] = a[3 - tid.x] * b[tid.x] * c[tid.x] / 6.0;
}
"""
    path = tmp_path / "k.slang"
    path.write_text(src)
    import diffc

    # as many more 256 KiB arrays as take the kernel past this device's work-group memory
    more = diffc.device().cl_device.local_mem_size // 262144
    big = src.replace("groupshared float c[65536];", "groupshared float c[65536];" + "".join(
        f"\ngroupshared float m{k}[65536];" for k in range(more)))
    big = big.replace("c[tid.x] = 3.0;", "c[tid.x] = 3.0;" + "".join(f" m{k}[tid.x] = 1.0;" for k in range(more)))
    path.write_text(big)
    rc = cli.main(["run", str(path)])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert f"error: kernel 'computeMain' needs {(3 + more) * 262144} bytes of work-group memory" in err, err
    # the same kernel with small arrays runs
    path.write_text(src.replace("65536", "4"))
    rc = cli.main(["run", str(path)])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert [float(v) for v in out.out.split()[2:]] == [1.0] * 4


@pytest.mark.parametrize("name, want", [
    # by hand: weigh(x, i) = x^2 partial[i], partial = [10, 6, ...] after the reduction of 1..4
    ("groupshared_reduce", [10 + 20 * x + 24 for x in (1.0, 2.0, 3.0, 4.0)]),
    # Square(2) picked; d/dx (2 sqrt(x) + 0.5) at 4 is 0.5, plus 1 for maybe[1]; 2 sqrt(9) + 0.5
    ("optional_values", [2.0, 0.0, 1.5, 6.5]),
    # 2 is true; the loop never runs (Slang: 2, then d/dx = 1); 6 halves three times (d = 1/8);
    # 300 in 8 bits is 44
    ("loops_and_conversions", [1.0, 2.0, 1.0, 0.125, 44.0]),
    # 1000 x y + 1000 x at (0.5, 2): 1500; d/dx = 1000 y + 1000, d/dy = 1000 x
    ("flat_chain", [1500.0, 3000.0, 500.0]),
])
def test_fuzz_seeds_run_and_give_the_right_numbers(tmp_path, capsys, name, want):
    """The seeds tests/test_bad_input_fuzz.py mutates are themselves valid programs."""
    from pathlib import Path

    from diffc import cli

    rc = cli.main(["run", str(Path(__file__).parent / "fuzz_seeds" / f"{name}.slang")])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert [float(v) for v in out.out.split()[2:]] == pytest.approx(want)


def test_declared_differential_seed_against_finite_differences():
    """tests/fuzz_seeds/declared_differential.slang's `total`: both modes against float64 central
    differences (the seed's main prints the same derivatives)."""
    from pathlib import Path

    from slang_harness import Compiled

    src = (Path(__file__).parent / "fuzz_seeds" / "declared_differential.slang").read_text()
    Compiled(src, "total").check_derivatives([2.0, 0.5, 3, 1.5, -0.5, 2.0])


def test_custom_derivatives_seed_gives_the_right_numbers_in_both_modes(capfd):
    """tests/fuzz_seeds/custom_derivatives.slang: its printf against derivatives by hand, and
    `total` in both modes against float64 central differences (its custom derivatives are right)."""
    from pathlib import Path

    from slang_harness import Compiled

    from diffc import cli

    path = Path(__file__).parent / "fuzz_seeds" / "custom_derivatives.slang"
    rc = cli.main(["run", str(path)])
    out = capfd.readouterr()  # (printf writes through the C library)
    assert rc == 0, out.err
    # total = a x^2 (u^2 + 3 v^2) + x^2 at a = 2, (u, v) = (1, 0.5), x = 1.5:
    # d/da = x^2 1.75, d/du = 4.5 * 2u, d/dv = 4.5 * 6v, d/dx = 2 a x 1.75 + 2x (also fwd with dx = 1)
    assert [float(v) for v in out.out.split()] == pytest.approx([3.9375, 9.0, 13.5, 13.5, 13.5])
    Compiled(path.read_text(), "total").check_derivatives([2.0, 1.0, 0.5, 1.5])


def test_compound_bitwise_and_shift_assignments_on_integers_still_compute():
    from diffc.interp import run_function
    from diffc.frontend import compile_slang

    src = """int f(int x) {
  int y = x; y >>= 1u; y &= 6; uint z = 5; z <<= 2; int v = 1; v ^= 3;
  bool b = true; b &= false; b |= true; y |= 1; y ^= 8;
  return y * 1000 + int(z) * 10 + v + int(b) * 100000;
}"""
    for x in (0, 5, 13, -7):
        y = ((x >> 1) & 6 | 1) ^ 8
        want = y * 1000 + 20 * 10 + (1 ^ 3) + 100000
        assert run_function(compile_slang(src, "b.slang"), "f", x) == (want,), x


def test_a_static_field_of_the_struct_own_type_is_not_recursive():
    """`static const A zero` is no part of an A's value: d/dy (A.zero.x + y * y) = 2 y."""
    import numpy as np
    from slang_harness import Compiled

    src = """
struct A : IDifferentiable { float x; static const A zero = { 0.5 }; };
[Differentiable] float f(float y) { A a = A.zero; return a.x + y * y; }
"""
    Compiled(src, "f").check_derivatives([np.float64(0.3)])


def test_folded_constant_indices_in_range_pick_their_element():
    """`a[2 - 1]` and `v[1 + 1]` name elements 1 and 2 (lowering selects them at run time)."""
    import numpy as np
    from slang_harness import Compiled

    src = """[Differentiable] float f(float x) {
  float a[2] = { x, x * x }; float3 v = float3(1.0, 2.0, x * x * x);
  return a[2 - 1] + v[1 + 1] + a[4 / 4 - 1];
}"""
    c = Compiled(src, "f")
    c.check_derivatives([np.float64(0.7)])
    from diffc.interp import run_function
    from diffc.frontend import compile_slang

    (got,) = run_function(compile_slang(src, "i.slang"), "f", 0.5)
    assert got == pytest.approx(0.5 ** 2 + 0.5 ** 3 + 0.5)


def test_groupshared_memory_may_be_larger_than_a_value():
    """The 1024-scalar limit is for values (SSA leaves); a groupshared tile of 64 x 64 is memory."""
    from diffc.frontend import compile_slang

    compile_slang("""groupshared float tile[64][64];
RWStructuredBuffer<float> out;
[shader("compute")] [numthreads(4, 1, 1)]
void computeMain(uint3 t : SV_DispatchThreadID) { tile[t.x][63] = 1.0; out[t.x] = tile[3 - t.x][63]; }
""", "tile.slang")
