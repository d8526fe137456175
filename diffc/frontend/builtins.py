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

# Built-ins that Slang's standard library does not differentiate. diffc still differentiates
# smoothstep (an extension); the difference shows only under `no_diff f(x)`, where Slang's meaning
# applies: a call of a non-differentiable function is constant. (floor, ceil, round, sign and step
# have a zero derivative either way.)
SLANG_NON_DIFFERENTIABLE = {"smoothstep", "step", "sign", "floor", "ceil", "round"}


def slang_differentiable(name: str) -> bool:
    """Whether Slang itself treats the built-in `name` as differentiable."""
    return name in BUILTINS and name not in SLANG_NON_DIFFERENTIABLE


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

# Wave intrinsics. diffc runs waves of one lane (as Slang's CPU target does): a reduction over
# the wave is its one value, and the lane is always the first.
WAVE_IDENTITY = {"WaveActiveMax", "WaveActiveMin", "WaveActiveSum", "WaveActiveProduct", "WaveReadLaneFirst"}
# name -> (result type, value); types imported lazily below to keep this table plain
WAVE_CONSTANT: dict[str, tuple] = {}

# Methods of `Atomic<T>` (through a pointer or a buffer element) -> MLIR atomic_rmw kinds
# (AtomicRMWKind values) by element kind: float, signed int, unsigned int.
ATOMIC_KINDS: dict[str, tuple[int, int, int]] = {
    "add": (0, 1, 1),  # addf, addi
    "max": (3, 4, 5),  # maximumf, maxs, maxu
    "min": (6, 7, 8),  # minimumf, mins, minu
}


def _wave_constants() -> None:
    from diffc.frontend import types as T

    WAVE_CONSTANT.update({
        "WaveIsFirstLane": (T.BOOL, 1),
        "WaveGetLaneCount": (T.UINT, 1),
        "WaveGetLaneIndex": (T.UINT, 0),
    })


_wave_constants()
