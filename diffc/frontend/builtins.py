"""The intrinsic functions the front end knows: arity, result-type rule, differentiability."""

from __future__ import annotations

# name -> (arity, result rule, differentiable)
# result rules: "same" (common type of the arguments), "scalar" (element of the argument),
# "float_same" (like same, ints promoted to float)
BUILTINS: dict[str, tuple[int, str, bool]] = {}

for _n in "exp exp2 log log2 log10 sqrt rsqrt sin cos tan asin acos atan sinh cosh tanh saturate frac".split():
    BUILTINS[_n] = (1, "float_same", True)
for _n in ("abs",):
    BUILTINS[_n] = (1, "same", True)
for _n in ("normalize",):
    BUILTINS[_n] = (1, "float_same", True)
for _n in ("length",):
    BUILTINS[_n] = (1, "scalar", True)
for _n in "pow atan2 fmod reflect".split():
    BUILTINS[_n] = (2, "float_same", True)
for _n in "min max".split():
    BUILTINS[_n] = (2, "same", True)
for _n in ("dot", "distance"):
    BUILTINS[_n] = (2, "scalar", True)
BUILTINS["cross"] = (2, "float_same", True)
for _n in ("clamp",):
    BUILTINS[_n] = (3, "same", True)
for _n in "lerp smoothstep fma mad".split():
    BUILTINS[_n] = (3, "float_same", True)
for _n in "floor ceil round sign".split():
    BUILTINS[_n] = (1, "float_same", False)
BUILTINS["step"] = (2, "float_same", False)

# Math-dialect op class name of each one-argument builtin that maps to one op.
MATH_UNARY = {
    "exp": "ExpOp",
    "exp2": "Exp2Op",
    "log": "LogOp",
    "log2": "Log2Op",
    "log10": "Log10Op",
    "sqrt": "SqrtOp",
    "rsqrt": "RsqrtOp",
    "sin": "SinOp",
    "cos": "CosOp",
    "tan": "TanOp",
    "asin": "AsinOp",
    "acos": "AcosOp",
    "atan": "AtanOp",
    "sinh": "SinhOp",
    "cosh": "CoshOp",
    "tanh": "TanhOp",
    "floor": "FloorOp",
    "ceil": "CeilOp",
    "round": "RoundOp",
}

SPECIAL = {"diffPair", "detach", "printf", "fwd_diff", "bwd_diff", "__fwd_diff", "__bwd_diff"}
