"""Pointers: `T*` as a (memref of T's scalars, index offset) pair; `p[i]`, `*p`, `p + i`, `p->f`;
a pointer to a struct of pointers passed by value; atomics, bit_cast, one-lane wave intrinsics;
entry-point parameters as kernel arguments."""

from __future__ import annotations

import struct

import pytest
from xdsl.dialects.builtin import IndexType, MemRefType
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.interpreters.utils.ptr import TypedPtr

from slang_helpers import expect_error, floats, front, funcs, ops_named, run


def ints(xs) -> ShapedArray:
    return ShapedArray(TypedPtr.new_int32(list(xs)), [len(xs)])


def test_pointer_parameter_is_a_memref_and_an_offset():
    m = front("float first(float* p) { return p[0]; }\n")
    f = funcs(m)["first"]
    t = f.function_type.inputs.data
    assert isinstance(t[0], MemRefType) and isinstance(t[1], IndexType)
    assert [a.name_hint for a in f.body.block.args] == ["p", "p_off"]


def test_index_deref_arithmetic_and_stores():
    src = """
void work(float* p, int i)
{
    float a = p[i];        // p[off + i]
    float b = *(p + 2);    // p[off + 2]
    var q = p + 1;
    q[i] = a + b;          // p[off + 1 + i]
    *p = 7.0;
}
"""
    mem = floats([1, 2, 3, 4, 5, 6])
    run(src, "work", mem, 1, 2)  # the pointer starts at element 1
    # a = mem[3] = 4, b = mem[3] = 4, mem[4] = 8, mem[1] = 7
    assert mem.data == [1, 7, 3, 4, 8, 6]


def test_pointers_to_vectors_and_structs_address_scalars():
    src = """
struct P { float x; float y; float z; };
float read(float2* v, P* p, int i)
{
    float2 a = v[i];            // two consecutive floats
    p->y = a.x + a.y;
    P whole = p[1];
    return whole.x * 100.0 + (*p).y + p[0].z;
}
"""
    v = floats([1, 2, 3, 4])
    p = floats([10, 20, 30, 40, 50, 60])
    (r,) = run(src, "read", v, 0, p, 0, 1)
    assert p.data == [10, 7, 30, 40, 50, 60]
    assert r == pytest.approx(40 * 100 + 7 + 30)


def test_pointer_struct_of_pointers_is_passed_by_value():
    src = """
struct Layer { float* w; float* b; };
struct Net { Layer a; Layer c; };
float eval(Net* net, int i) { return net->a.w[i] + (*net).c.b[0] + net[0].a.b[1]; }
"""
    m = front(src)
    names = [a.name_hint for a in funcs(m)["eval"].body.block.args]
    assert names[:4] == ["net_a_w", "net_a_w_off", "net_a_b", "net_a_b_off"]
    w, b = floats([1, 2, 3]), floats([10, 20, 30])
    (r,) = run(src, "eval", w, 0, b, 0, w, 1, b, 2, 2)
    assert r == pytest.approx(3 + 30 + 20)


@pytest.mark.parametrize("body,col,words", [
    ("return net[1].a.w[0];", 32, "indexing Net* with anything but 0"),
    ("return (net + 1)->a.w[0];", 29, "arithmetic on Net*"),
])
def test_struct_of_pointers_pointer_limits(body, col, words):
    src = "struct L { float* w; };\nstruct Net { L a; };\nfloat f(Net* net) { " + body + " }\n"
    expect_error(src, "E0008", 3, col, words)


def test_write_through_by_value_pointer_is_unsupported():
    src = "struct L { float* w; };\nstruct Net { L a; };\nvoid f(Net* net, L l) { net->a = l; }\n"
    expect_error(src, "E0008", 3, 25, "passed by value")


def test_pointer_to_a_struct_holding_a_bool_is_unsupported():
    """(Mixed scalar types are memory of bytes: tests/test_byte_pointers.py; a bool has no bytes.)"""
    expect_error("struct M { float x; bool k; };\nvoid f(M* m) { }\n", "E0008", 2, 8, "laid out in memory as numbers")


def test_pointers_carry_no_derivative():
    src = """
[Differentiable]
float scaled(float* p, float x) { return p[0] * x * x; }
float grad(float* p, float x)
{
    var dx = diffPair(x);
    bwd_diff(scaled)(p, dx, 1.0);
    return dx.d;
}
"""
    m = front(src)
    from diffc.dialects import diff
    f = funcs(m)["scaled"]
    assert not diff.arg_is_differentiable(f, 0) and not diff.arg_is_differentiable(f, 1)
    assert run(src, "grad", floats([3.0]), 0, 2.0) == pytest.approx((2 * 3.0 * 2.0,))


def test_interlocked_add_f16_is_an_atomic_addf():
    src = """
half bump(half* p, int i, half v)
{
    half original;
    InterlockedAddF16Emulated(p + i, v, original);
    return original;
}
"""
    m = front(src)
    (op,) = ops_named(m, "memref.atomic_rmw")
    assert op.kind.value.data == 0  # addf
    mem = floats([1.0, 2.0])
    assert run(src, "bump", mem, 0, 1, 0.5) == (2.0,)
    assert mem.data == [1.0, 2.5]


def test_atomic_methods_and_bit_cast():
    src = """
RWStructuredBuffer<Atomic<int>> counters;
uint track(Atomic<uint32_t>* best, float value)
{
    let old = best.max(bit_cast<uint32_t>(value));
    best->add(0u);
    return old;
}
int lowest(int v) { return counters[1].min(v); }
"""
    m = front(src)
    kinds = [op.kind.value.data for op in ops_named(m, "memref.atomic_rmw")]
    assert kinds == [5, 1, 7]  # maxu, addi, mins
    assert len(ops_named(m, "arith.bitcast")) == 1
    best = ints([0, 0])
    run(src, "track", best, 1, 2.5)
    run(src, "track", best, 1, 1.5)
    assert best.data[1] == struct.unpack("<i", struct.pack("<f", 2.5))[0]


def test_bit_cast_needs_equal_sizes():
    expect_error("uint f(half x) { return bit_cast<uint>(x); }\n", "E0003", 1, 25, "same size")


def test_wave_intrinsics_run_one_lane():
    src = """
float f(float x)
{
    float r = WaveActiveMax(x) + WaveActiveSum(x) + WaveActiveMin(x);
    if (WaveIsFirstLane())
        r += 100.0 * float(WaveGetLaneCount());
    return r;
}
"""
    assert run(src, "f", 2.0) == pytest.approx((106.0,))


def test_entry_point_uniform_parameters_are_kernel_arguments():
    src = """
struct L { half* w; };
struct Net { L first; };
[shader("compute")]
[numthreads(64, 1, 1)]
void k(uint32_t tid : SV_DispatchThreadID, uniform Net* network, uniform float2* inputs, uniform uint32_t count)
{
    if (tid >= count) return;
    network->first.w[tid] = (half)inputs[tid].x;
}
"""
    m = front(src)
    f = funcs(m)["k"]
    assert [a.name_hint for a in f.body.block.args] == [
        "tid", "network_first_w", "network_first_w_off", "inputs", "inputs_off", "count"]
    assert "diffc.semantic" in f.arg_attrs.data[0].data
    w = floats([0, 0, 0])
    for tid in range(3):
        run(src, "k", tid, w, 0, floats([1, 2, 3, 4, 5, 6]), 0, 2)
    assert w.data == [1, 3, 0]


def test_unknown_atomic_method():
    expect_error("void f(Atomic<uint>* a) { a->exchange(1u); }\n", "E0004", 1, 30, "has no method 'exchange'")


def test_mlp_entry_points_compile_to_opencl():
    import subprocess
    import sys
    from pathlib import Path

    mlp = Path(__file__).resolve().parent.parent / "examples" / "mlp" / "mlp.slang"
    out = {}
    for entry in ("learnGradient", "adjustParameters"):
        r = subprocess.run([sys.executable, "-m", "diffc.cli", "compile", str(mlp), "--emit", "opencl",
                            "--entry", entry], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert f"void {entry}(" in r.stdout
        out[entry] = r.stdout
    assert "__global half* network_layer1_weights, long network_layer1_weights_off" in out["learnGradient"]
    assert "__global half* params, long params_off, __global half* gradients" in out["adjustParameters"]


def test_compound_assignment_through_atomic_pointers_is_atomic(tmp_path):
    """`p[i] += v`, `*p -= v` on `Atomic<T>*` are atomic adds: 1000 work-items hitting 3 slots
    lose nothing (a plain load/add/store would race)."""
    import numpy as np

    import diffc

    src = tmp_path / "hist.slang"
    src.write_text("""
[shader("compute")]
[numthreads(64, 1, 1)]
void hist(uint tid : SV_DispatchThreadID, uniform Atomic<float>* sums, uniform Atomic<int>* counts,
          uniform uint n)
{
    if (tid >= n) return;
    sums[tid % 3] += 1.0;
    counts[tid % 3] += 2;
    *counts -= 1;
}
""")
    m = diffc.load_module(src)
    sums, counts = diffc.Tensor.zeros(3), diffc.Tensor.zeros(3, np.int32)
    m.hist.dispatch(thread_count=1000, sums=sums, counts=counts, n=1000)
    per_slot = np.bincount(np.arange(1000) % 3)
    np.testing.assert_array_equal(sums.to_numpy(), per_slot)
    np.testing.assert_array_equal(counts.to_numpy(), 2 * per_slot - np.array([1000, 0, 0]))
    ops = {o.name for o in front(src.read_text()).walk()}
    assert "memref.atomic_rmw" in ops and "memref.store" not in ops


def test_other_compound_assignments_on_atomics_are_unsupported():
    expect_error("void f(Atomic<float>* p) { p[0] *= 2.0; }\n", "E0008", 1, 28, "only += and -=")


def test_writes_through_a_pointer_or_buffer_in_a_loop_do_not_carry_it(tmp_path, capsys):
    # the loop writes memory; the pointer (a memref and an offset) stays what it was, so it is not
    # a loop-carried value (a memref has no OpenCL C loop variable)
    from diffc import cli

    path = tmp_path / "k.slang"
    path.write_text("""
//TEST_INPUT:ubuffer(data=[0 0 0 0 0 0], stride=4):out,name=outputBuffer
RWStructuredBuffer<float> outputBuffer;
void fill(float* xyz, uint t) { for (int k = 0; k < 3; k++) xyz[3 * t + k] = float(k + 1); }
[numthreads(2, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID) {
    RWStructuredBuffer<float> b = outputBuffer;
    for (int k = 0; k < 3; k++) b[3 * tid.x + k] = float(10 * tid.x + k);
}
""")
    assert cli.main(["run", str(path)]) == 0
    assert [float(v) for v in capsys.readouterr().out.split()[2:]] == [0.0, 1.0, 2.0, 10.0, 11.0, 12.0]
    assert cli.main(["compile", "--emit", "opencl", str(path)]) == 0
    assert "for (" in capsys.readouterr().out
