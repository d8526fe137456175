"""Rounding-error bounds for the tests' float sums, derived from the arithmetic (Higham,
Accuracy and Stability of Numerical Algorithms, ch. 3-4) instead of tolerances read off a run.

A float sum of n terms, added in any order (sequentially, as a tree, in parallel parts that are
then combined), does n - 1 additions, each of which rounds by at most u relative to its result;
so |computed - exact| <= gamma_{n-1} * sum |x_i|, gamma_k = k u / (1 - k u). A term that itself
took r roundings (a product, an add before the atomic) adds r to k. Adding 0 is exact, so
inactive work-items' zero sums do not count."""

from __future__ import annotations

import numpy as np

U32 = 2.0**-24  # float32's unit roundoff (round to nearest)
U16 = 2.0**-11  # half's


def gamma(k: int, u: float = U32) -> float:
    assert k * u < 1, (k, u)
    return k * u / (1 - k * u)


def sum_bound(magnitudes, roundings_per_term: int = 0, u: float = U32) -> float:
    """The largest |computed - exact| of a float sum of len(magnitudes) terms in any order, each
    term computed with `roundings_per_term` roundings from operands whose sizes add up to
    `magnitudes[i]` (for a product a * b: |a b|, one rounding)."""
    m = np.abs(np.asarray(magnitudes, np.float64)).ravel()
    if m.size == 0:
        return 0.0
    return gamma(m.size - 1 + roundings_per_term, u) * float(m.sum())


def assert_sum_within(got, exact, magnitudes, roundings_per_term: int = 0, u: float = U32) -> None:
    bound = sum_bound(magnitudes, roundings_per_term, u)
    err = abs(float(got) - float(exact))
    assert err <= bound, f"|{float(got)!r} - {float(exact)!r}| = {err:.3g} > the rounding bound {bound:.3g}"
