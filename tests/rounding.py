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


def half_accumulation_error(magnitudes, adds: int) -> np.ndarray:
    """The largest |stored - exact sum| of n values (rows of `magnitudes`: their sizes) that
    accumulate-gradients adds into a zeroed half buffer: a float32 sum in any order (gamma_{n-1}
    of the sizes' sum), then `adds` adds of float32 totals into the buffer, each rounding twice
    (the total to half, old + total to half) by 2^-11 of at most the running magnitude."""
    m = np.abs(np.asarray(magnitudes, np.float64))
    total = m.sum(axis=0)
    f32 = gamma(max(len(m) - 1, 0)) * total
    return f32 + gamma(2 * adds, U16) * (total + f32)


def assert_sum_within(got, exact, magnitudes, roundings_per_term: int = 0, u: float = U32) -> None:
    bound = sum_bound(magnitudes, roundings_per_term, u)
    err = abs(float(got) - float(exact))
    assert err <= bound, f"|{float(got)!r} - {float(exact)!r}| = {err:.3g} > the rounding bound {bound:.3g}"


# Half-precision arithmetic, where an op may also run in float32 and be rounded to half after:
# fl16(fl32(x)) is within (2^-11 + 2^-24 + 2^-35) |x| of x, below 2^-11 (1 + 2^-12).
U16_OPS = U16 * (1 + 2.0**-12)


class Rounded:
    """A value computed in floating point, elementwise over numpy arrays: `v` is what exact
    arithmetic gives on the exact operands, `e` bounds |computed - v|. Each op propagates the
    operands' bounds to first and second order and adds its own rounding, u of the computed
    magnitude (at most |v| + e). Running error analysis (Higham ch. 3) done numerically: the
    bound is exact arithmetic on the worst case, not an estimate."""

    def __init__(self, v, e=0.0, u: float = U16_OPS):
        self.v = np.asarray(v, np.float64)
        self.e = np.broadcast_to(np.asarray(e, np.float64), self.v.shape).copy()
        self.u = u

    @classmethod
    def constant(cls, used: float, exact: float, u: float = U16_OPS) -> "Rounded":
        """A constant the kernel writes as `used` (0.01h) where the model has `exact` (0.01)."""
        return cls(exact, abs(used - exact), u)

    def _rounded(self, v, e) -> "Rounded":
        return Rounded(v, e * (1 + self.u) + self.u * np.abs(v), self.u)

    @staticmethod
    def of(x, u: float = U16_OPS) -> "Rounded":
        return x if isinstance(x, Rounded) else Rounded(x, 0.0, u)

    def __add__(self, other) -> "Rounded":
        o = Rounded.of(other, self.u)
        return self._rounded(self.v + o.v, self.e + o.e)

    __radd__ = __add__

    def __sub__(self, other) -> "Rounded":
        o = Rounded.of(other, self.u)
        return self._rounded(self.v - o.v, self.e + o.e)

    def __mul__(self, other) -> "Rounded":
        o = Rounded.of(other, self.u)
        return self._rounded(self.v * o.v, np.abs(self.v) * o.e + np.abs(o.v) * self.e + self.e * o.e)

    __rmul__ = __mul__

    def __truediv__(self, other) -> "Rounded":
        o = Rounded.of(other, self.u)
        assert (np.abs(o.v) > o.e).all(), "a divisor that may be 0"
        q = self.v / o.v
        return self._rounded(q, (self.e + np.abs(q) * o.e) / (np.abs(o.v) - o.e))

    def exact_times(self, k: float) -> "Rounded":
        """Multiplication by a power of two: exact."""
        return Rounded(self.v * k, self.e * abs(k), self.u)

    def may_be_negative(self) -> np.ndarray:
        return self.v - self.e < 0

    def sign_uncertain(self) -> np.ndarray:
        return np.abs(self.v) <= self.e


def accumulated_half_adds(module, entry: str, n: int, deterministic: bool) -> int:
    """How many adds into a half gradient buffer one dispatch of `entry` over n work-items
    makes per slot: the finish kernel's one (deterministic), else one per launched group of the
    accumulated kernel (runtime/accumulate.py). Raises LookupError where the entry point was
    not rewritten (its adds are then reduce-atomics', which this count does not describe)."""
    from diffc.runtime.accumulate import launched_groups
    from diffc.runtime.dispatch import entry_program

    acc = entry_program(module).accumulated.get(entry)
    if acc is None:
        raise LookupError(f"{entry} is not accumulated")
    if deterministic:
        return 1
    return launched_groups(acc, -(-n // acc.entry_group) * acc.entry_group)
