"""Custom backward derivatives that act on buffers run in the reverse sweep inside branches and
loops too, when no argument of theirs carries a derivative (a bounds check's early return is the
common shape: the gradients were silently zero).

Every kernel here is float64; gradients are checked against central finite differences of the
primal kernel's loss L = <S, P_out>, where store_bwd seeds the output gradient from S."""

from __future__ import annotations

import numpy as np
import pytest

import diffc

SOURCE = """
RWStructuredBuffer<double> P;
RWStructuredBuffer<double> G;
RWStructuredBuffer<double> S;

struct View {
  uint base;
  [BackwardDerivative(load_bwd)] double load(uint i) { return P[base + i]; }
  void load_bwd(uint i, double d) { G[base + i] += d; }
  [BackwardDerivative(store_bwd)] void store(uint i, double v) { P[base + i] = v; }
  void store_bwd(uint i, inout DifferentialPair<double> v) { v = diffPair(v.p, S[base + i]); }
};

[Differentiable] void early_return(View x, View y, uint n) {
  if (n > 5) return;
  y.store(0, sin(x.load(0)) * x.load(1));
}
[Differentiable] void loop(View x, View y, uint n) {
  for (int i = 0; i < 2; i++) { y.store(i, x.load(i) * x.load(1 - i)); }
}
[Differentiable] void branch(View x, View y, uint n) {
  switch (n) {
  case 0: y.store(0, x.load(0) * x.load(1)); break;
  default: y.store(1, exp(x.load(1))); break;
  }
}

[numthreads(1, 1, 1)] void primal(uint3 t : SV_DispatchThreadID, uniform int which, uniform uint n) {
  View x = { 0 }; View y = { 2 };
  if (which == 0) early_return(x, y, n);
  else if (which == 1) loop(x, y, n);
  else branch(x, y, n);
}
[numthreads(1, 1, 1)] void grad(uint3 t : SV_DispatchThreadID, uniform int which, uniform uint n) {
  View x = { 0 }; View y = { 2 };
  if (which == 0) bwd_diff(early_return)(x, y, n);
  else if (which == 1) bwd_diff(loop)(x, y, n);
  else bwd_diff(branch)(x, y, n);
}
"""

EARLY_RETURN, LOOP, BRANCH = 0, 1, 2


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    path = tmp_path_factory.mktemp("cf") / "views.slang"
    path.write_text(SOURCE)
    return diffc.load_module(str(path))


def _gradient(m, which, n, p, s):
    T = diffc.Tensor.from_numpy
    g = T(np.zeros(4))
    m.grad.dispatch(thread_count=1, which=which, n=n, P=T(p.copy()), G=g, S=T(s))
    return g.to_numpy()[:2]


def _loss(m, which, n, p, s):
    P = diffc.Tensor.from_numpy(p.copy())
    m.primal.dispatch(thread_count=1, which=which, n=n, P=P)
    return float(P.to_numpy()[2:] @ s[2:])


@pytest.mark.parametrize(
    "which,n", [(EARLY_RETURN, 3), (EARLY_RETURN, 7), (LOOP, 0), (BRANCH, 0), (BRANCH, 4)]
)
def test_gradients_match_finite_differences(module, which, n):
    rng = np.random.default_rng(which * 10 + n)
    p = np.concatenate([rng.uniform(-1.5, 1.5, 2), [0.0, 0.0]])
    s = np.concatenate([[0.0, 0.0], rng.uniform(-2, 2, 2)])
    h = 1e-6
    fd = []
    for i in range(2):
        e = np.zeros(4)
        e[i] = h
        fd.append((_loss(module, which, n, p + e, s) - _loss(module, which, n, p - e, s)) / (2 * h))
    np.testing.assert_allclose(_gradient(module, which, n, p, s), fd, rtol=1e-6, atol=1e-8)


def test_taken_branch_reaches_the_buffer(module):
    # the early return not taken: the gradient is not zero (the bug's symptom)
    p = np.array([0.7, -1.3, 0, 0])
    s = np.array([0, 0, 0.5, -2.0])
    g = _gradient(module, EARLY_RETURN, 3, p, s)
    assert np.all(np.abs(g) > 0.1)
