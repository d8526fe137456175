"""How the parameters of a custom backward derivative (a function named by
[BackwardDerivative(f)] / [BackwardDerivativeOf(f)]) map onto the IR signature of its primal's
bwd_diff: the primal's inputs first, then the cotangents of the primal's outputs. Derived once
per function (when it is declared); declaring its IR signature and binding its arguments in
its body both read the same `BwdParams`.

Roles, per Slang parameter:
  PAIR        `inout DifferentialPair<T>`: a primal input (T) whose gradient is a result;
  PAIR_INOUT  the same, where the primal's parameter is itself inout: it also takes the
              incoming cotangent (a T.Differential argument among the cotangents);
  COTANGENT   the `T.Differential` of a primal `out` parameter;
  DOUT        the trailing derivative of the primal's result;
  PLAIN       anything else: an argument as it is (a no_diff parameter, an ordinary function's).
"""

from __future__ import annotations

from dataclasses import dataclass

from diffc.frontend import types as T
from diffc.frontend.checker.symbols import FuncInfo

PLAIN, PAIR, PAIR_INOUT, COTANGENT, DOUT = "plain", "pair", "pair-inout", "cotangent", "dout"


@dataclass(frozen=True)
class BwdParams:
    roles: tuple[str, ...]  # one per Slang parameter
    # (parameter, whether this is its cotangent argument) in the order of the IR's arguments: the
    # primal inputs in parameter order, then the cotangents, the result's (dOut) first, then the
    # out / inout parameters' in parameter order
    order: tuple[tuple[int, bool], ...]


def plain_params(f: FuncInfo) -> BwdParams:
    """An ordinary function's: every parameter an argument, in order."""
    return BwdParams((PLAIN,) * len(f.params), tuple((i, False) for i in range(len(f.params))))


def bwd_params(f: FuncInfo, primal: FuncInfo | None) -> BwdParams:
    """The roles and IR order of the parameters of `f`, a custom backward derivative of
    `primal` (None when the primal is not known: every parameter is then matched on its own
    type and direction)."""
    dout = primal is not None and not isinstance(primal.ret, T.Void)
    aligned = primal is not None and len(f.params) == len(primal.params) + dout
    roles = []
    for i, p in enumerate(f.params):
        pp = primal.params[i] if aligned and i < len(primal.params) else None  # type: ignore[union-attr]
        if isinstance(p.ty, T.Pair) and p.direction == "inout":
            roles.append(PAIR_INOUT if pp is not None and pp.direction == "inout" else PAIR)
        elif aligned and pp is None:
            roles.append(DOUT)
        elif pp is not None and pp.direction == "out":
            roles.append(COTANGENT)
        else:
            roles.append(PLAIN)
    inputs = [(i, False) for i, r in enumerate(roles) if r not in (COTANGENT, DOUT)]
    cotangents = [i for i, r in enumerate(roles) if r == DOUT]
    cotangents += [i for i, r in enumerate(roles) if r in (COTANGENT, PAIR_INOUT)]
    return BwdParams(tuple(roles), tuple(inputs + [(i, True) for i in cotangents]))
