"""The registry with every built-in rule loaded: importing this module imports each rule file
(they register themselves in diffc.ad.interface.RULES): the partials data of diffc/rules/ and
every module of diffc/ad/rules/, found on disk, so a new op's rule is one new file there. The
drivers and the activity analysis look rules up here.

Built-in rules, one file per kind of op:
  diffc/rules/arith_rules.py, math_rules.py, vector_rules.py   partial derivatives (data)
  diffc/rules/effect_rules.py                                  printf: no derivative
  diffc/ad/rules/diff_ops.py       the diff dialect's own ops (detach, zero, add, pairs)
  diffc/ad/rules/func_call.py      func.call (custom derivatives included)
  diffc/ad/rules/scf_if.py, scf_for.py, scf_while.py, scf_index_switch.py   control flow
  diffc/ad/rules/effects.py        memory and atomics: no derivative flows through them
"""

from __future__ import annotations

import importlib
import pkgutil

from xdsl.ir import Operation

from diffc.ad import rules as _rule_files
from diffc.ad.interface import DerivativeRule, lookup
from diffc.ad.partials import Rule, partials_rule_of
from diffc.rules import arith_rules, effect_rules, math_rules, vector_rules  # noqa: F401

for _info in sorted(pkgutil.iter_modules(_rule_files.__path__), key=lambda m: m.name):
    importlib.import_module(f"{_rule_files.__name__}.{_info.name}")

__all__ = ["DerivativeRule", "lookup", "lookup_partials"]


def lookup_partials(op: Operation | type[Operation]) -> Rule | None:
    """The partials rule of `op`, or None (see diffc.ad.partials)."""
    return partials_rule_of(op)
