"""Structs that hold buffers or pointers (issue 22: B2, B3, B6), dispatched on PoCL: a `set`
accessor (a mutating method) of a struct holding a buffer or a pointer, a `T*` field of a
generic struct, a buffer of float2 bound by dispatch. Expected values from numpy."""

from __future__ import annotations

import numpy as np
import pytest

import diffc
from diffc.runtime.errors import CallError
from diffc.runtime.tensor import Tensor


def _load(tmp_path, text):
    p = tmp_path / "m.slang"
    p.write_text(text)
    return diffc.load_module(str(p))


def test_set_accessor_of_struct_holding_buffer(tmp_path):  # B2
    m = _load(tmp_path, """
struct View { RWStructuredBuffer<float> d;
  __subscript(uint i) -> float { get { return d[i]; } set { d[i] = newValue; } }
  [mutating] void twice(uint i) { this[i] = this[i] * 2.0 + 1.0; } };
RWStructuredBuffer<float> buf;
[shader("compute")][numthreads(1, 1, 1)]
void main(uint3 t : SV_DispatchThreadID) { View v; v.d = buf; v.twice(t.x); v[t.x] = v[t.x] - 0.5; }
""")
    a = np.array([1.0, -2.0, 3.5], np.float32)
    t = Tensor.from_numpy(a)
    m.main.dispatch(thread_count=3, buf=t)
    np.testing.assert_allclose(t.numpy(), a * 2 + 0.5)


def test_set_accessor_of_struct_holding_pointer(tmp_path):  # B2, through a pointer
    m = _load(tmp_path, """
struct View { float* d; uint n;
  __subscript(uint i, uint j) -> float { get { return d[i * n + j]; } set { d[i * n + j] = newValue; } } };
[shader("compute")][numthreads(1, 1, 1)]
void main(uint3 t : SV_DispatchThreadID, uniform float* p) { View v = { p, 2 }; v[t.x, 1] = v[t.x, 0] + v[t.x, 1]; }
""")
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    t = Tensor.from_numpy(a.copy())
    m.main.dispatch(thread_count=3, p=t)
    want = a.copy()
    want[:, 1] = a[:, 0] + a[:, 1]
    np.testing.assert_allclose(t.numpy(), want)


def test_pointer_field_of_generic_struct(tmp_path):  # B3
    m = _load(tmp_path, """
struct View<T> { T* data; __subscript(uint i) -> T { get { return data[i]; } set { data[i] = newValue; } } };
[shader("compute")][numthreads(1, 1, 1)]
void main(uint3 t : SV_DispatchThreadID, uniform float* f, uniform int* k) {
  View<float> a = { f }; View<int> b = { k }; a[t.x] = a[t.x] * float(b[t.x]); b[t.x] = b[t.x] + 1; }
""")
    f = np.array([1.5, 2.0, -1.0], np.float32)
    k = np.array([2, -3, 4], np.int32)
    tf, tk = Tensor.from_numpy(f), Tensor.from_numpy(k)
    m.main.dispatch(thread_count=3, f=tf, k=tk)
    np.testing.assert_allclose(tf.numpy(), f * k)
    np.testing.assert_array_equal(tk.numpy(), k + 1)


def test_dispatch_binds_buffer_of_float2(tmp_path):  # B6
    m = _load(tmp_path, """
RWStructuredBuffer<float2> buf;
[shader("compute")][numthreads(1, 1, 1)]
void main(uint3 t : SV_DispatchThreadID) { buf[t.x] = float2(buf[t.x].y, buf[t.x].x * 3.0); }
""")
    a = np.arange(8, dtype=np.float32).reshape(4, 2)
    t = Tensor.from_numpy(a)
    m.main.dispatch(thread_count=4, buf=t)
    np.testing.assert_allclose(t.numpy(), np.stack([a[:, 1], a[:, 0] * 3], axis=1))


def test_dispatch_vector_buffer_wrong_shape_is_a_call_error(tmp_path):
    m = _load(tmp_path, """
RWStructuredBuffer<float3> buf;
[shader("compute")][numthreads(1, 1, 1)]
void main(uint3 t : SV_DispatchThreadID) { buf[t.x] = buf[t.x] * 2.0; }
""")
    with pytest.raises(CallError, match="last dimension of 4"):
        m.main.dispatch(thread_count=2, buf=Tensor.from_numpy(np.zeros((2, 3), np.float32)))
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    t = Tensor.from_numpy(a)
    m.main.dispatch(thread_count=2, buf=t)
    np.testing.assert_allclose(t.numpy()[:, :3], a[:, :3] * 2)
