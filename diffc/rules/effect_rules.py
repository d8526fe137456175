"""Rules of ops that act on the outside world and have no derivative-carrying result
(data for the registry in diffc.rules).

printf prints the primal values of its arguments; a derivative passed to it goes nowhere, so
a debug print inside a differentiated function does not stop differentiation.
"""

from xdsl.dialects.printf import PrintFormatOp

from diffc.ad.partials import register_nondifferentiable

register_nondifferentiable(PrintFormatOp)
