"""Slang's `__atomic_add(p[i], v)` on memory behind a pointer (frontend/features/atomic_intrinsics.py):
every thread's add lands, and each gets the value from before its own add; anything but an
element behind a pointer is a located E0008."""

from __future__ import annotations

import numpy as np
from slang_helpers import expect_error

from diffc.runtime.module import load_module_from_string
from diffc.runtime.tensor import Tensor

SRC = """
struct Sums { float* f; int* n; };
void count(Sums s, uint i, float v) { __atomic_add(s.f[i % 2], v); __atomic_add(*s.n, 1); }
// an element of an atomic pointer: its add is the pointer's
void tally(Atomic<float>* g, uint i) { g[i % 3].add(1.0); }
[shader("compute")][numthreads(8, 1, 1)]
void hist(uint3 t : SV_DispatchThreadID, uniform Atomic<float>* g) { tally(g, t.x); }
[shader("compute")][numthreads(8, 1, 1)]
void run(uint3 t : SV_DispatchThreadID, uniform Sums s, uniform float* old)
{
    count(s, t.x, float(t.x) + 0.5);
    old[t.x] = __atomic_add(s.f[2], 1.0);
}
"""


def test_every_add_lands_and_returns_the_old_value():
    m = load_module_from_string(SRC, "atomics.slang")
    f = Tensor.from_numpy(np.zeros(3, np.float32))
    n = Tensor.from_numpy(np.zeros(1, np.int32))
    old = Tensor.from_numpy(np.zeros(64, np.float32))
    m.run.dispatch(64, s={"f": f, "n": n}, old=old)
    k = np.arange(64) + 0.5
    assert np.allclose(f.to_numpy(), [k[0::2].sum(), k[1::2].sum(), 64.0])
    assert n.to_numpy().tolist() == [64]
    assert sorted(old.to_numpy().tolist()) == [float(i) for i in range(64)]  # each add saw its own old value


def test_an_add_into_a_local_is_located():
    expect_error("void f() { float x = 0.0; __atomic_add(x, 1.0); }", "E0008", 1, 40, "__atomic_add")


def test_an_element_of_an_atomic_pointer_adds_atomically():
    m = load_module_from_string(SRC, "atomics.slang")
    g = Tensor.from_numpy(np.zeros(3, np.float32))
    m.hist.dispatch(64, g=g)
    assert g.to_numpy().tolist() == [22.0, 21.0, 21.0]
