"""diffc.Tensor: round trips, grads, shapes and dtypes."""

from __future__ import annotations

import numpy as np
import pytest

import diffc
from diffc.runtime.errors import CallError


def test_round_trip_and_properties():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = diffc.Tensor.from_numpy(a)
    assert t.shape == (2, 3, 4) and t.dtype == np.float32 and t.size == 24
    np.testing.assert_array_equal(t.to_numpy(), a)
    assert t.grad is None


def test_with_grads_zeroes_and_copy_from_numpy():
    t = diffc.Tensor.from_numpy(np.array([1, 2, 3, 4], np.float32))
    assert t.with_grads(zero=True) is t
    assert t.grad.shape == t.shape and t.grad.dtype == t.dtype
    np.testing.assert_array_equal(t.grad.to_numpy(), np.zeros(4))
    t.grad.copy_from_numpy(np.array([1, 1, 1, 1], np.float32))
    np.testing.assert_array_equal(t.grad.to_numpy(), np.ones(4))
    t.with_grads(zero=True)  # zeroes an existing grad
    np.testing.assert_array_equal(t.grad.to_numpy(), np.zeros(4))


def test_zeros_fill_clone():
    z = diffc.Tensor.zeros((3, 2), np.float32)
    np.testing.assert_array_equal(z.to_numpy(), np.zeros((3, 2)))
    z.fill(2.5)
    c = z.clone()
    z.fill(0)
    np.testing.assert_array_equal(c.to_numpy(), np.full((3, 2), 2.5))


def test_int_and_float64():
    i = diffc.Tensor.from_numpy(np.array([1, -2, 3], np.int32))
    np.testing.assert_array_equal(i.to_numpy(), [1, -2, 3])
    if diffc.device().has_fp64:
        d = diffc.Tensor.from_numpy(np.array([0.1, 1e-300], np.float64))
        assert d.to_numpy()[1] == 1e-300


def test_float16_storage_round_trips():
    a = np.array([1.5, -0.0, 65504, 2.0**-24, np.inf], np.float16)
    h = diffc.Tensor.from_numpy(a)
    assert h.dtype == np.float16 and h.nbytes == 10
    np.testing.assert_array_equal(h.to_numpy().view(np.uint16), a.view(np.uint16))
    np.testing.assert_array_equal(diffc.Tensor.zeros(3, np.float16).fill(0.25).to_numpy(), [0.25] * 3)


def test_pointers_into_tensors():
    t = diffc.Tensor.zeros(6)
    p = t.at(4)
    assert p.tensor is t and p.offset == 4 and "at(4)" in repr(p)
    assert t.at(6).offset == 6  # one past the end, as in C
    with pytest.raises(CallError, match="outside"):
        t.at(7)
    with pytest.raises(CallError, match="integer"):
        t.at(1.5)


def test_bad_shapes_and_dtypes():
    t = diffc.Tensor.zeros((2, 2))
    with pytest.raises(CallError, match="shape"):
        t.copy_from_numpy(np.zeros(5, np.float32))
    with pytest.raises(CallError, match="int8"):
        diffc.Tensor.from_numpy(np.zeros(3, np.int8))
    with pytest.raises(CallError, match="negative"):
        diffc.Tensor.zeros((-1,))


@pytest.mark.parametrize("make,message", [
    # each used to fail inside numpy or pyopencl: TypeError, ValueError, LogicError
    (lambda: diffc.Tensor((3,), "nonsense"), "'nonsense' is not a dtype"),
    (lambda: diffc.Tensor("abc"), "a Tensor shape is an int or a sequence of ints, got 'abc'"),
    (lambda: diffc.Tensor((2, 3.0)), "a Tensor shape is an int or a sequence of ints, got (2, 3.0)"),
    (lambda: diffc.Tensor((2**40,)), "a Tensor of shape (1099511627776,) and dtype float32 needs 4398046511104 bytes"),
])
def test_bad_tensor_construction_is_a_call_error(make, message):
    with pytest.raises(CallError) as e:
        make()
    assert message in str(e.value)


@pytest.mark.parametrize("call,message", [
    # numpy's ValueError / AttributeError before, or complex data silently made real
    (lambda t: t.copy_from_numpy(np.array(["a", "b", "c"])), "copy_from_numpy: data of dtype <U1"),
    (lambda t: t.copy_from_numpy(np.ones(3, np.complex64)), "copy_from_numpy: data of dtype complex64"),
    (lambda t: t.fill("x"), "fill: data of dtype <U1"),
    (lambda t: t.with_grads("x"), "with_grads: grad must be a Tensor, got str"),
    (lambda t: diffc.Tensor.from_numpy([[1, 2], [3]]), "Tensor.from_numpy: cannot make an array of list"),
    (lambda t: diffc.Tensor((2,), np.int32).fill(2**40), "fill: 1099511627776 does not fit in int32"),
    (lambda t: t.fill([]), "fill takes one number, got []"),  # clEnqueueFillBuffer's INVALID_VALUE before
])
def test_bad_tensor_data_is_a_call_error(call, message):
    t = diffc.Tensor((3,))
    with pytest.raises(CallError) as e:
        call(t)
    assert message in str(e.value)
    assert t.fill(2.5).to_numpy().tolist() == [2.5, 2.5, 2.5]


def test_repr_shows_shape_dtype_device_and_values():
    big = diffc.Tensor.from_numpy(np.arange(100, dtype=np.float32) * 0.5).with_grads()
    r = repr(big)
    assert "shape=(100,)" in r and "dtype=float32" in r and diffc.device().name in r and "with grad" in r
    head, tail = r.split("...")
    assert "0.5" in head and "49.5" in tail and "48.5" in tail
    assert "25." not in r  # only the ends are read
    small = repr(diffc.Tensor.from_numpy(np.array([[7, -3], [11, 2]], np.int32)))
    assert "[ 7, -3, 11,  2]" in small and "..." not in small and "dtype=int32" in small
    assert "Tensor([]" in repr(diffc.Tensor((0, 3), np.float32))


POLY = """
[Differentiable]
float polynomial(float a, float b, float c, float x) { return a * x * x + b * x + c; }
"""


def test_numpy_reads_a_result_tensor():
    """np.asarray and numpy's functions take a Tensor (a host copy of its contents)."""
    from diffc.runtime.module import load_module_from_string

    m = load_module_from_string(POLY, "poly.slang")
    x = np.array([1, 2, 3, 4], np.float32)
    y = m.polynomial(a=2.0, b=8.0, c=-1.0, x=diffc.Tensor.from_numpy(x), _result="tensor")
    assert isinstance(y, diffc.Tensor)
    want = 2 * x.astype(np.float64) ** 2 + 8 * x - 1
    got = np.asarray(y)
    assert got.dtype == np.float32 and got.shape == (4,)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.asarray(y, dtype=np.float64), want)
    assert np.sum(y) == want.sum() and np.array(y).tolist() == want.tolist()
    got[0] = 123.0  # a copy: the tensor keeps its values
    assert y.to_numpy()[0] == want[0]


def test_numpy_cannot_view_device_memory_without_a_copy():
    t = diffc.Tensor.from_numpy(np.arange(3, dtype=np.float32))
    if np.lib.NumpyVersion(np.__version__) < "2.0.0":
        pytest.skip("numpy before 2 has no copy=False that asks for a view")
    with pytest.raises(ValueError, match="device memory"):
        np.array(t, copy=False)


def test_dlpack_exports_a_host_copy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = diffc.Tensor.from_numpy(a)
    assert t.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(t), a)
    with pytest.raises(BufferError):
        t.__dlpack__(copy=False)
    torch = pytest.importorskip("torch")
    got = torch.from_dlpack(t)
    assert got.dtype == torch.float32 and got.shape == (3, 4)
    np.testing.assert_array_equal(got.numpy(), a)


def test_numpy_raises_a_pending_launch_error_before_the_values():
    from diffc.runtime.module import load_module_from_string

    m = load_module_from_string("""
[shader("compute")]
[numthreads(8, 1, 1)]
void fill(uint3 tid : SV_DispatchThreadID, RWStructuredBuffer<float> dst) { dst[tid.x] = 1.0; }
""", "fill.slang")
    short = diffc.Tensor.zeros(4, np.float32)
    m.fill.dispatch(thread_count=8, dst=short)
    with pytest.raises(Exception, match="outside its 4 elements"):
        np.asarray(short)
