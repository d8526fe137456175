"""The intrinsic functions the front end knows: their shape (arity, parameter and result types)
and whether Slang's own standard library differentiates them.

`slang_differentiable(name)` is Slang's view, kept as data apart from what diffc does: diffc gives
every float intrinsic a derivative (floor, sign, step: zero; through their lowering otherwise),
while Slang's stdlib only differentiates the ones it declares derivatives for (its
diff.meta.slang): `floor(x)` in a differentiable Slang function is a call of a non-differentiable
function, which matters for `no_diff` and for Slang's "not differentiable" diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Builtin:
    """`result`: how the result type follows from T, the common type of the arguments:
      "same"        T (ints stay ints: abs, min, max, clamp)
      "float_same"  T with integer elements promoted to float
      "scalar"      the element of float T (dot, length, distance)
      "int_same"    T with int elements (sign)
      "bool_same"   T with bool elements (isnan, isinf, isfinite)
      "bool"        bool (any, all)
      "bits"        T's bits as another 32-bit element type (asfloat, asint, asuint)
      "void"        nothing (sincos: its results are out parameters)
    `params`: one letter per parameter where they are not all T: "T" the common type, "S" its
    scalar element (refract's eta), "o" an out parameter of type T (sincos).
    `elementwise`: applied lane by lane, so also row by row to a matrix."""

    arity: int
    result: str
    slang_diff: bool
    params: str = ""
    elementwise: bool = True


BUILTINS: dict[str, Builtin] = {}


def _add(names: str, *args, **kw) -> None:
    for n in names.split():
        BUILTINS[n] = Builtin(*args, **kw)


_add("exp exp2 log log2 log10 sqrt rsqrt rcp sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh "
     "saturate frac radians degrees", 1, "float_same", True)
_add("floor ceil round trunc", 1, "float_same", False)
_add("abs", 1, "same", True)
_add("sign", 1, "int_same", False)
_add("isnan isinf isfinite", 1, "bool_same", False)
_add("any all", 1, "bool", False, elementwise=False)
_add("asfloat asint asuint", 1, "bits", False)
_add("normalize", 1, "float_same", True, elementwise=False)
_add("length", 1, "scalar", True, elementwise=False)
_add("pow atan2 fmod copysign", 2, "float_same", True)
_add("step", 2, "float_same", False)
_add("min max", 2, "same", True)
_add("dot distance", 2, "scalar", True, elementwise=False)
_add("cross reflect", 2, "float_same", True, elementwise=False)
_add("clamp", 3, "same", True)
_add("lerp fma mad", 3, "float_same", True)
_add("smoothstep", 3, "float_same", False)  # Slang's primal substitute for it is not [Differentiable]
_add("refract", 3, "float_same", True, params="TTS", elementwise=False)
_add("sincos", 3, "void", True, params="Too")


def slang_differentiable(name: str) -> bool:
    """Whether Slang's standard library differentiates intrinsic `name` (False for names that
    are not intrinsics diffc knows)."""
    b = BUILTINS.get(name)
    if b is not None:
        return b.slang_diff
    return name in SLANG_DIFFERENTIABLE_OTHERS


# Intrinsics checked elsewhere (matrices.py, calls.py) that Slang differentiates.
SLANG_DIFFERENTIABLE_OTHERS = frozenset({"mul", "transpose", "determinant", "detach"})

# Constants of the float types, called as `float.getPi()` (Slang's IFloat).
FLOAT_CONSTANTS = {"getPi": 3.14159265358979323846264338328}

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
    "asinh": "AsinhOp",
    "acosh": "AcoshOp",
    "atanh": "AtanhOp",
    "floor": "FloorOp",
    "ceil": "CeilOp",
    "round": "RoundOp",
    "trunc": "TruncOp",
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
