"""The sanitizer mode's check of dispatches of entry points on PoCL (passes/uninit_check.py,
runtime/uninit.py): a kernel that reads an element of a buffer nobody wrote (Tensor.empty,
with_grads(zero=False)) raises UninitializedReadError (E0013) with the read's Slang line and the
argument's name; a kernel that writes an element before reading it reports nothing; the host
learns which elements a dispatch wrote."""

from __future__ import annotations

import os

import numpy as np
import pytest

import diffc
from diffc.runtime.errors import UninitializedReadError
from diffc.runtime.module import load_module_from_string

os.environ.setdefault("DIFFC_DEVICE", "cpu")

SRC = """
float get(float* p, uint i)
{
    return p[i];
}

[shader("compute")]
[numthreads(16, 1, 1)]
void twice(uint3 tid: SV_DispatchThreadID, float* src, float* dst, uint n)
{
    if (tid.x >= n) return;
    dst[tid.x] = 2.0 * get(src, tid.x);
}

[shader("compute")]
[numthreads(16, 1, 1)]
void writeThenRead(uint3 tid: SV_DispatchThreadID, float* dst, uint n)
{
    if (tid.x >= n) return;
    dst[tid.x] = float(tid.x);
    dst[tid.x] += 1.0;
}

[shader("compute")]
[numthreads(16, 1, 1)]
void addInto(uint3 tid: SV_DispatchThreadID, float* acc, uint n)
{
    if (tid.x >= n) return;
    acc[tid.x] += 1.0;
}
"""


@pytest.fixture(scope="module")
def checked():
    return load_module_from_string(SRC, "uninit.slang", check=True)


def _t(a):
    return diffc.Tensor.from_numpy(np.asarray(a, np.float32))


def test_reading_an_empty_tensor_is_reported_at_the_read(checked):
    src = diffc.Tensor.empty(32)
    dst = diffc.Tensor.zeros(32)
    with pytest.raises(UninitializedReadError) as e:
        checked.twice.dispatch(thread_count=32, src=src, dst=dst, n=32)
    text = str(e.value)
    assert e.value.argument == "src"
    assert "uninit.slang:4:12: error[E0013]" in text  # the read in get(), through its pointer
    assert "element 31 of 'src' (through 'p' in function 'get')" in text
    assert src.uninitialized  # still nothing wrote it


def test_written_inputs_and_outputs_are_not_reported(checked):
    src = _t(np.arange(32))
    dst = diffc.Tensor.empty(32)  # an output: written, never read
    checked.twice.dispatch(thread_count=32, src=src, dst=dst, n=32)
    np.testing.assert_array_equal(dst.to_numpy(), 2 * np.arange(32))
    assert not dst.uninitialized  # every element written: the host knows


def test_a_kernel_that_writes_before_it_reads_reports_nothing(checked):
    dst = diffc.Tensor.empty(40)
    checked.writeThenRead.dispatch(thread_count=40, dst=dst, n=40)
    np.testing.assert_array_equal(dst.to_numpy(), np.arange(40) + 1.0)
    assert not dst.uninitialized


def test_the_host_remembers_which_elements_a_dispatch_wrote(checked):
    part = diffc.Tensor.empty(32)
    checked.writeThenRead.dispatch(thread_count=16, dst=part, n=16)  # elements 0 .. 15
    assert part.uninitialized
    out = diffc.Tensor.zeros(32)
    checked.twice.dispatch(thread_count=16, src=part, dst=out, n=16)  # reads 0 .. 15 only: fine
    np.testing.assert_array_equal(out.to_numpy()[:16], 2 * (np.arange(16) + 1.0))
    with pytest.raises(UninitializedReadError, match=r"element (1[6-9]|2\d|3[01]) of 'src'"):
        checked.twice.dispatch(thread_count=32, src=part, dst=out, n=32)


def test_adding_into_an_uninitialized_gradient_is_reported(checked):
    x = diffc.Tensor.zeros(20).with_grads(zero=False)
    with pytest.raises(UninitializedReadError, match="reads element 19 of 'acc'") as e:
        checked.addInto.dispatch(thread_count=20, acc=x.grad, n=20)
    assert e.value.argument == "acc" and "uninit.slang:29:5: error[E0013]" in str(e.value)
    x.grad.fill(0)
    checked.addInto.dispatch(thread_count=20, acc=x.grad, n=20)
    np.testing.assert_array_equal(x.grad.to_numpy(), np.ones(20))


def test_without_the_sanitizer_nothing_is_tracked():
    m = load_module_from_string(SRC, "uninit.slang")
    dst = diffc.Tensor.zeros(8)
    m.twice.dispatch(thread_count=8, src=diffc.Tensor.empty(8), dst=dst, n=8)  # garbage in, no error
    dst.to_numpy()


# atomic adds into a global buffer: accumulate-gradients' kernels run them (private sums, then
# one add per group or the finish kernel's), and their adds read what is there
SUMS = """
RWStructuredBuffer<Atomic<float>> sums;

[shader("compute")]
[numthreads(64, 1, 1)]
void learn(uint32_t tid : SV_DispatchThreadID, uniform float* values, uniform uint32_t count)
{
    if (tid >= count) return;
    sums[1] += values[tid];
}
"""


@pytest.mark.parametrize("deterministic", [False, True])
def test_atomic_adds_into_an_empty_buffer_are_reported(deterministic):
    m = load_module_from_string(SUMS, "sums.slang", check=True)
    values = _t(np.ones(100))
    with pytest.raises(UninitializedReadError, match="adds into \\(reads\\) element 1 of 'sums'") as e:
        m.learn.dispatch(thread_count=100, sums=diffc.Tensor.empty(2), values=values, count=100,
                         deterministic=deterministic)
    assert "sums.slang:9:5: error[E0013]" in str(e.value)
    sums = diffc.Tensor.zeros(2)
    m.learn.dispatch(thread_count=100, sums=sums, values=values, count=100, deterministic=deterministic)
    np.testing.assert_array_equal(sums.to_numpy(), [0.0, 100.0])


def test_the_element_is_named_relative_to_the_pointer_given(checked):
    base = diffc.Tensor.empty(40)
    checked.writeThenRead.dispatch(thread_count=4, dst=base, n=4)  # elements 0 .. 3 written
    out = diffc.Tensor.zeros(8)
    with pytest.raises(UninitializedReadError, match=r"element 7 of 'src' \(element 9 of its tensor\)"):
        checked.twice.dispatch(thread_count=8, src=base.at(2), dst=out, n=8)  # reads 2 .. 9
