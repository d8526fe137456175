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
