"""The differentiation core: one derivative interface per op type, one registry, one activity
analysis, and the two drivers (forward, reverse) the diff-fwd and diff-rev passes run.

  interface.py   DerivativeRule (activity, jvp_op, primal_op, vjp_op), RULES, register, lookup
  partials.py    partial-derivative rules (arith / math / vector data in diffc/rules/)
  rules/         one file per op kind: scf.if / for / while / index_switch, func.call, the diff
                 dialect's ops, memory effects
  registry.py    the registry with every built-in rule loaded
  activity.py    which values carry derivatives (Activity, active_values, reaches_custom)
  forward.py     forward-mode driver (FwdGenerator, FuncDiff)
  reverse.py     reverse-mode driver (BwdGenerator, FuncReverser)
  tape.py        reverse mode's tapes, loop nests and marks for diff-checkpoint

Nothing is imported here, so `import diffc.ad.interface` (a plugin's) stays light.
"""
