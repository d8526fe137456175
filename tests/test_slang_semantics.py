"""Small Slang programs, compiled by the front end and run through the canonical pipeline in
diffc.interp (float64): values against Python/numpy references, derivatives against central
finite differences of the same lowered function, forward mode against reverse mode.

One parametrized test per builtin (scalar and float3 forms), then statements (switch with
fall-through, early exits from loops), then the located diagnostics for programs the passes
could not differentiate, then the rest of the language: out/inout, structs with no_diff
fields, dzero/dadd, loop attributes, higher-order derivatives."""

from __future__ import annotations

import math

import numpy as np
import pytest
from slang_harness import Compiled

from diffc.diagnostics import DiffcError
from diffc.frontend import compile_slang

RNG = np.random.default_rng(3)


def uniform(lo: float, hi: float):
    return lambda shape: RNG.uniform(lo, hi, shape)


def away_from_zero(lo: float, hi: float):
    return lambda shape: RNG.choice([-1.0, 1.0], shape) * RNG.uniform(lo, hi, shape)


def away_from_integers(lo: float, hi: float):
    """Values whose fractional part is in [0.1, 0.9]: floor/ceil/round/frac are smooth there."""
    return lambda shape: np.floor(RNG.uniform(lo, hi, shape)) + RNG.uniform(0.1, 0.4, shape) + 0.5 * RNG.integers(0, 2, shape)


def _smoothstep(e0, e1, x):
    t = np.clip((x - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def _fmod_away_from_jumps(shape):
    # x / y stays 0.1 .. 0.9 away from an integer, so fmod is smooth at the sample
    return np.floor(RNG.uniform(-3, 3, shape)) + RNG.uniform(0.1, 0.9, shape)


# name -> (argument samplers, numpy reference); both forms take every argument as float / float3
ELEMENTWISE = {
    "exp": ([uniform(-1, 1)], np.exp),
    "exp2": ([uniform(-1, 1)], np.exp2),
    "log": ([uniform(0.5, 2)], np.log),
    "log2": ([uniform(0.5, 2)], np.log2),
    "log10": ([uniform(0.5, 2)], np.log10),
    "sqrt": ([uniform(0.5, 2)], np.sqrt),
    "rsqrt": ([uniform(0.5, 2)], lambda x: 1.0 / np.sqrt(x)),
    "pow": ([uniform(0.5, 2), uniform(-1.5, 1.5)], np.power),
    "sin": ([uniform(-2, 2)], np.sin),
    "cos": ([uniform(-2, 2)], np.cos),
    "tan": ([uniform(-1, 1)], np.tan),
    "asin": ([uniform(-0.8, 0.8)], np.arcsin),
    "acos": ([uniform(-0.8, 0.8)], np.arccos),
    "atan": ([uniform(-2, 2)], np.arctan),
    "atan2": ([uniform(-1, 1), away_from_zero(0.3, 2)], np.arctan2),
    "sinh": ([uniform(-1, 1)], np.sinh),
    "cosh": ([uniform(-1, 1)], np.cosh),
    "tanh": ([uniform(-1, 1)], np.tanh),
    "abs": ([away_from_zero(0.2, 1)], np.abs),
    "min": ([uniform(-1, 1), uniform(-1, 1)], np.minimum),
    "max": ([uniform(-1, 1), uniform(-1, 1)], np.maximum),
    "clamp": ([uniform(-2, 2), uniform(-1, -0.2), uniform(0.2, 1)], lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi)),
    "saturate": ([uniform(-0.5, 1.5)], lambda x: np.clip(x, 0.0, 1.0)),
    "lerp": ([uniform(-1, 1), uniform(-1, 1), uniform(0, 1)], lambda a, b, t: a + (b - a) * t),
    "smoothstep": ([uniform(-1, -0.5), uniform(0.5, 1), uniform(-1.2, 1.2)], _smoothstep),
    "fma": ([uniform(-1, 1)] * 3, lambda a, b, c: a * b + c),
    "mad": ([uniform(-1, 1)] * 3, lambda a, b, c: a * b + c),
    "frac": ([away_from_integers(-3, 3)], lambda x: x - np.floor(x)),
    "fmod": ([_fmod_away_from_jumps, lambda shape: np.ones(shape) if shape else 1.0], np.fmod),
    # no derivative: the check below also asserts the derivatives are exactly zero
    "floor": ([away_from_integers(-3, 3)], np.floor),
    "ceil": ([away_from_integers(-3, 3)], np.ceil),
    "round": ([away_from_integers(-3, 3)], np.round),
    "sign": ([away_from_zero(0.1, 1)], np.sign),
    "step": ([uniform(-1, 1), uniform(-1, 1)], lambda e, x: np.asarray(x >= e, dtype=float)),
}
ZERO_DERIVATIVE = {"floor", "ceil", "round", "sign", "step"}


def _sample(sampler, shape):
    v = sampler(shape)
    return float(v) if shape == () else np.asarray(v, dtype=float)


@pytest.mark.parametrize("form", ["float", "float3"])
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_builtin(name, form):
    samplers, ref = ELEMENTWISE[name]
    shape = () if form == "float" else (3,)
    params = ", ".join(f"{form} a{i}" for i in range(len(samplers)))
    args_src = ", ".join(f"a{i}" for i in range(len(samplers)))
    c = Compiled(f"[Differentiable] {form} f({params}) {{ return {name}({args_src}); }}", "f")
    for trial in range(2):
        args = [_sample(s, shape) for s in samplers]
        (val,) = c.primal(args)
        np.testing.assert_allclose(val, ref(*args), rtol=1e-12, atol=1e-15)
        c.check_derivatives(args, seed=trial)
        if name in ZERO_DERIVATIVE:
            _, tangents = c.fwd(args, [np.ones_like(a) if form != "float" else 1.0 for a in args])
            assert np.all(np.asarray(tangents) == 0.0)


GEOMETRIC = {
    # name -> (arity, returns a vector, numpy reference)
    "dot": (2, False, lambda a, b: a @ b),
    "cross": (2, True, np.cross),
    "length": (1, False, np.linalg.norm),
    "distance": (2, False, lambda a, b: np.linalg.norm(a - b)),
    "normalize": (1, True, lambda a: a / np.linalg.norm(a)),
    "reflect": (2, True, lambda i, n: i - 2.0 * (n @ i) * n),
}


@pytest.mark.parametrize("name", sorted(GEOMETRIC))
def test_geometric_builtin(name):
    arity, returns_vector, ref = GEOMETRIC[name]
    for n in (3,) if name == "cross" else (2, 3, 4):
        ty = f"float{n}"
        params = ", ".join(f"{ty} a{i}" for i in range(arity))
        args_src = ", ".join(f"a{i}" for i in range(arity))
        c = Compiled(f"[Differentiable] {ty if returns_vector else 'float'} f({params}) {{ return {name}({args_src}); }}", "f")
        args = [RNG.uniform(-1, 1, n) for _ in range(arity)]
        (val,) = c.primal(args)
        np.testing.assert_allclose(val, ref(*args), rtol=1e-12)
        c.check_derivatives(args)


@pytest.mark.parametrize("name,arity,ref", [
    ("length", 1, abs), ("distance", 2, lambda a, b: abs(a - b)), ("normalize", 1, lambda a: math.copysign(1.0, a)),
])
def test_geometric_builtin_on_scalars(name, arity, ref):
    params = ", ".join(f"float a{i}" for i in range(arity))
    c = Compiled(f"[Differentiable] float f({params}) {{ return {name}({', '.join(f'a{i}' for i in range(arity))}); }}", "f")
    for args in ([0.7, -0.4][:arity], [-0.3, 0.9][:arity]):
        (val,) = c.primal(args)
        assert val == pytest.approx(ref(*args), rel=1e-12)
        c.check_derivatives(args)


# -- switch ---------------------------------------------------------------------------------------

SWITCH_FALL_THROUGH = """
[Differentiable]
float f(float x, int k) {
    float y = x;
    switch (k) {
    case 0: y = y * x;
    case 1: y = y + 2.0 * x; break;
    case 2: if (x > 1.0) break; y = sin(y);
    default: y = y * 3.0;
    case 7:
    case 8: y = y + exp(x); break;
    case 9: return y * y;
    }
    return y;
}
"""


def _switch_ref(x: float, k: int) -> float:
    y = x
    if k == 0:
        y = y * x
    if k in (0, 1):
        return y + 2.0 * x
    if k == 9:
        return y * y
    if k == 2:
        if x > 1.0:
            return y
        y = math.sin(y)
    if k not in (7, 8):  # 2 falls into default, any other value starts there
        y = y * 3.0
    return y + math.exp(x)


@pytest.mark.parametrize("k", [0, 1, 2, 3, 7, 8, 9, -4])
@pytest.mark.parametrize("x", [0.4, 1.3])
def test_switch_fall_through_values_and_derivatives(x, k):
    c = Compiled(SWITCH_FALL_THROUGH, "f")
    (val,) = c.primal([x, k])
    assert val == pytest.approx(_switch_ref(x, k), rel=1e-12)
    c.check_derivatives([x, k])


SWITCH_IN_LOOP = """
[Differentiable]
float f(float x) {
    float y = x;
    for (int i = 0; i < 6; i++) {
        switch (i % 4) {
        case 1: continue;
        case 2: y *= x;
        case 3: y += 0.5; break;
        default: y = y * 0.5 + x;
        }
        y = y + 0.25;
    }
    return y;
}
"""


def test_switch_inside_a_loop_with_continue_and_fall_through():
    def ref(x):
        y = x
        for i in range(6):
            m = i % 4
            if m == 1:
                continue
            if m == 2:
                y *= x
            if m in (2, 3):
                y += 0.5
            else:
                y = y * 0.5 + x
            y += 0.25
        return y

    c = Compiled(SWITCH_IN_LOOP, "f")
    for x in (0.3, 1.1):
        (val,) = c.primal([x])
        assert val == pytest.approx(ref(x), rel=1e-12)
        c.check_derivatives([x])


# -- early exits from loops -------------------------------------------------------------------------

EARLY_RETURN_IN_FOR = """
[Differentiable] float f(float x) {
    if (x > 2) return x * x;
    for (int i = 0; i < 4; i++) { if (x > 1) return x * 3; x = x + 0.5; }
    return x;
}
"""


def _early_ref(x: float) -> float:
    if x > 2:
        return x * x
    for _ in range(4):
        if x > 1:
            return x * 3
        x = x + 0.5
    return x


@pytest.mark.parametrize("x", [-1.3, -0.7, -0.1, 0.3, 0.8, 1.4, 1.9, 2.6])
def test_early_return_from_a_constant_bounds_for_loop(x):
    c = Compiled(EARLY_RETURN_IN_FOR, "f")
    (val,) = c.primal([x])
    assert val == pytest.approx(_early_ref(x), rel=1e-12)
    c.check_derivatives([x])


def test_early_exit_loop_gets_its_trip_count_as_max_iters():
    from xdsl.dialects import scf

    from diffc.dialects import diff

    m = compile_slang(EARLY_RETURN_IN_FOR, "t.slang")
    (loop,) = [op for op in m.walk() if isinstance(op, scf.WhileOp)]
    assert diff.max_iters(loop) == 4


@pytest.mark.parametrize("header,trips", [
    ("for (int i = 0; i < 5; i++)", 5), ("for (int i = 1; i <= 5; i++)", 5), ("for (int i = 0; i < 7; i += 3)", 3),
    ("for (int i = 2; i <= 2; i++)", 1),
])
def test_break_out_of_constant_for_loops(header, trips):
    src = f"""[Differentiable] float f(float x) {{
        float y = x;
        {header} {{ y = y * x + 0.25; if (y > 2.0) break; }}
        return y;
    }}"""

    def ref(x):
        y = x
        for _ in range(trips):
            y = y * x + 0.25
            if y > 2.0:
                break
        return y

    c = Compiled(src, "f")
    for x in (0.5, 1.2, 1.6):
        (val,) = c.primal([x])
        assert val == pytest.approx(ref(x), rel=1e-12)
        c.check_derivatives([x])


def test_inclusive_for_loop_is_reversible():
    src = "[Differentiable] float f(float x) { float y = x; for (int i = 1; i <= 3; i++) { y = y * x; } return y; }"
    c = Compiled(src, "f")
    (g,) = c.bwd([1.5], [1.0])
    assert g == pytest.approx(4 * 1.5**3)
    c.check_derivatives([1.5])


# -- located diagnostics instead of pass errors ------------------------------------------------------


def _error(src: str) -> str:
    with pytest.raises(DiffcError) as e:
        compile_slang(src, "prog.slang")
    return str(e.value)


def test_unbounded_loop_in_a_forward_differentiable_callee_of_bwd_diff_is_located():
    src = """[ForwardDifferentiable] float g(float x) { float y = x; while (y < 10.0) { y = y * 2.0; } return y; }
[Differentiable] float f(float x) { return g(x) * x; }
void main() { var x = diffPair(1.5, 0.0); bwd_diff(f)(x, 1.0); }
"""
    msg = _error(src)
    assert msg.startswith("prog.slang:1:57: error[E0007]: 'while' loop in 'g' has no bound")
    assert msg.splitlines()[2].strip() == "^^^^^"


def test_unbounded_loop_under_fwd_diff_only_is_accepted():
    from slang_harness import run_function, run_pipeline

    src = """[ForwardDifferentiable] float g(float x) { float y = x; while (y < 10.0) { y = y * 2.0; } return y; }
float dg(float x) { return fwd_diff(g)(diffPair(x, 1.0)).d; }"""
    m = compile_slang(src)
    run_pipeline(m)
    assert run_function(m, "dg", 1.5) == pytest.approx((8.0,))  # 1.5 -> 3 -> 6 -> 12
    assert run_function(m, "dg", 11.0) == pytest.approx((1.0,))


def test_derivative_into_a_buffer_store_is_located():
    src = """RWStructuredBuffer<float> buf;
[Differentiable] float f(float x) { float y = x * 2.0; buf[0] = y; return x * buf[1]; }
void main() { let r = fwd_diff(f)(diffPair(1.5, 1.0)); }
"""
    msg = _error(src)
    assert msg.startswith("prog.slang:2:56: error[E0006]: the write to buffer 'buf' receives a derivative-carrying value")
    assert "detach" in msg
    assert msg.splitlines()[2].strip() == "^" * len("buf[0] = y")


def test_detached_buffer_store_is_accepted():
    from slang_harness import run_pipeline

    src = """RWStructuredBuffer<float> buf;
[Differentiable] float f(float x) { buf[0] = detach(x); return x * x; }
void main() { var x = diffPair(1.5, 0.0); bwd_diff(f)(x, 1.0); buf[1] = x.d; }
"""
    m = compile_slang(src)
    run_pipeline(m)


def test_buffer_store_in_a_function_nobody_differentiates_is_accepted():
    src = """RWStructuredBuffer<float> buf;
[Differentiable] float f(float x) { buf[0] = x; return x * x; }
void main() { buf[1] = f(2.0); }
"""
    compile_slang(src)


def test_printf_inside_a_differentiated_function_drops_the_derivative():
    src = '[Differentiable] float f(float x) { printf("%f\\n", x * x); return sin(x) * x; }'
    c = Compiled(src, "f")
    (val,) = c.primal([0.8])
    assert val == pytest.approx(math.sin(0.8) * 0.8)
    c.check_derivatives([0.8])


def test_ops_carry_the_source_position_of_their_expression():
    from xdsl.dialects import math as mathd
    from xdsl.dialects.builtin import FileLineColLoc

    m = compile_slang("[Differentiable]\nfloat f(float x) {\n    return x * sin(x);\n}", "loc.slang")
    (sin_op,) = [op for op in m.walk() if isinstance(op, mathd.SinOp)]
    loc = sin_op.location
    assert isinstance(loc, FileLineColLoc)
    assert (loc.filename.data, loc.line.data, loc.column.data) == ("loc.slang", 3, 16)
