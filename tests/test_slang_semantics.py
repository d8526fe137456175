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
from slang_harness import Compiled, compile_error

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


def _check_program(src: str, ref, argsets, fname: str = "f"):
    """Values against `ref(*args)` (a tuple for several results), derivatives against finite
    differences and each other."""
    c = Compiled(src, fname)
    for args in argsets:
        got = c.primal(args)
        want = ref(*args)
        want = list(want) if isinstance(want, tuple) else [want]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)
        c.check_derivatives(args)
    return c


F32_TENTH = float(np.float32(0.1))  # `0.1` in a float context is the float32 constant


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


def _nested_switch_ref(x, a, b):
    y = x
    if a == 0:
        if b == 0:
            y *= x
        if b in (0, 1):
            y += 1.0
        else:
            y = -y
        y *= 2.0
    if a in (0, 1):
        y += x
    return y


def _case_loop_ref(x, a):
    y = x
    if a == 0:
        for i in range(5):
            if i == 2:
                break
            y *= x
    if a in (0, 1):
        y += x
    return y


def _while_switch_ref(x):
    y, i = x, 0
    while i < 6:
        i += 1
        if i == 2:
            continue
        if i == 3:
            y *= x
        elif i == 5 and y > 0.2:
            pass
        else:
            if i == 5:
                y += 1.0
            y += F32_TENTH
        y *= 1.25
    return y


def _return_in_fall_through_ref(x, k):
    y = x
    if k == 0:
        y *= 3.0
    if k in (0, 1):
        if x > 0.4:
            return y * x
        y += 1.0
    if k in (0, 1, 2):
        y *= x
    return y + 1.0


@pytest.mark.parametrize("src,ref,argsets", [
    ("[Differentiable] float f(float x, int a, int b) { float y = x; switch (a) { case 0: switch (b) { case 0: y *= x; "
     "case 1: y += 1.0; break; default: y = -y; } y *= 2.0; case 1: y += x; break; default: break; } return y; }",
     _nested_switch_ref, [[0.5, a, b] for a in range(3) for b in range(3)]),
    ("[Differentiable] float f(float x, int a) { float y = x; switch (a) { case 0: for (int i = 0; i < 5; i++) "
     "{ if (i == 2) break; y *= x; } case 1: y += x; break; } return y; }",
     _case_loop_ref, [[0.5, 0], [0.5, 1], [0.5, 2]]),
    ("[Differentiable] float f(float x) { float y = x; int i = 0; [MaxIters(6)] while (i < 6) { i++; switch (i) { "
     "case 2: continue; case 3: y *= x; break; case 5: if (y > 0.2) break; y += 1.0; default: y += 0.1; } y *= 1.25; } "
     "return y; }",
     _while_switch_ref, [[0.5], [0.9], [0.1]]),
    ("[Differentiable] float f(float x, uint k) { switch (k) { case 0u: return x; case 1u: return x * x; default: return -x; } }",
     lambda x, k: [x, x * x][k] if k < 2 else -x, [[0.5, 0], [0.5, 1], [0.5, 7]]),
    ("[Differentiable] float f(float x, int k) { float y = x; switch (k) { case 0: y *= 3.0; case 1: if (x > 0.4) "
     "return y * x; y += 1.0; case 2: y *= x; } return y + 1.0; }",
     _return_in_fall_through_ref, [[0.5, 0], [0.3, 0], [0.5, 1], [0.3, 1], [0.5, 2], [0.5, 5]]),
])
def test_switch_nesting_loops_and_returns(src, ref, argsets):
    _check_program(src, ref, argsets)


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


def test_unbounded_loop_in_a_forward_differentiable_callee_of_bwd_diff_is_located():
    src = """[ForwardDifferentiable] float g(float x) { float y = x; while (y < 10.0) { y = y * 2.0; } return y; }
[Differentiable] float f(float x) { return g(x) * x; }
void main() { var x = diffPair(1.5, 0.0); bwd_diff(f)(x, 1.0); }
"""
    msg = compile_error(src)
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
    msg = compile_error(src)
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


def test_builtin_without_a_derivative_rule_is_named_at_its_call_site(monkeypatch):
    """Every builtin has a rule today; one without (here: the rule of math.sin removed) must be
    refused where it is called, by name, instead of by diff-fwd without a location."""
    from xdsl.dialects import math as mathd

    from diffc import rules

    rules.lookup_rule(mathd.SinOp)  # load the builtin rules before removing one
    monkeypatch.delitem(rules.RULES, mathd.SinOp)
    src = "[Differentiable] float f(float x) {\n    float y = x * 2.0;\n    return sin(y) + cos(x);\n}\n" \
          "float g(float x) { return fwd_diff(f)(diffPair(x, 1.0)).d; }\n"
    msg = compile_error(src)
    assert msg.startswith("prog.slang:3:12: error[E0006]: builtin 'sin' receives a derivative-carrying value in 'f'")
    assert msg.splitlines()[2] == "               ^^^^^^"
    # no derivative asked for: nothing to refuse
    compile_slang(src.split("float g")[0])


def test_a_function_defined_twice_is_refused_located():
    msg = compile_error("[Differentiable] float g(float x) { return x * 2.0; }\n"
                 "[Differentiable] float g(float y) { return y * y; }\n")
    assert msg.startswith("prog.slang:2:24: error[E0009]: function 'g' is defined twice with the same parameter types")


def test_a_declaration_before_the_definition_is_not_a_second_definition():
    src = ("[Differentiable] float g(float x);\n[Differentiable] float f(float x) { return g(x) * 3.0; }\n"
           "[Differentiable] float g(float x) { return x * x; }\n")
    _check_program(src, lambda x: 3 * x * x, [[2.0], [-0.5]])


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


# -- the rest of the language -----------------------------------------------------------------------


def _arrays_ref(x, k):
    a = [x, x * x, 1.0, -x]
    a[k] = sum(v * (i + 1) for i, v in enumerate(a))
    return a[k] * a[0] + a[1]


@pytest.mark.parametrize("name,src,ref,argsets", [
    ("ternary_and_logical",
     "[Differentiable] float f(float x, float y) { bool c = x > 0.0 && !(y < -0.5 || y > 0.5); "
     "return c ? x * y : (x > y ? x - y : y * y); }",
     lambda x, y: x * y if (x > 0 and not (y < -0.5 or y > 0.5)) else (x - y if x > y else y * y),
     [[0.3, 0.2], [0.3, 0.7], [-0.4, 0.1], [-0.1, -0.6]]),
    ("compound_assignment_and_increments",
     "[Differentiable] float f(float x) { float y = x; y += x; y *= x; y -= 0.5; y /= (x + 2.0); "
     "int i = 0; i++; ++i; i--; i += 3; i -= 1; i *= 2; y *= float(i); return y; }",
     lambda x: ((2 * x) * x - 0.5) / (x + 2.0) * 6.0, [[0.4], [1.3]]),  # i: 1 2 1 4 3 6
    ("casts_and_scalar_types",
     "[Differentiable] float f(float x, int k) { double d = double(x) * 2.0; half h = half(0.5); uint u = uint(k + 4) + 2u; "
     "return float(d) * float(h) * float(u) + (float)k * x + float(int(2.7)); }",
     lambda x, k: 2 * x * 0.5 * (k + 6) + k * x + 2.0, [[0.4, 3], [1.25, -1]]),
    ("literal_suffixes",
     "[Differentiable] float f(float x) { return x * 1.5f + 2.0h * x * x + 0.25 + float(3) * x; }",
     lambda x: 1.5 * x + 2 * x * x + 0.25 + 3 * x, [[0.7]]),
    ("typedef_let_var_swizzles",
     "typedef float3 V; [Differentiable] float f(V v) { let a = v * 2.0; var b = a.yzx; b.x += 1.0; return dot(a, b); }",
     lambda v: (2 * v) @ (2 * v[[1, 2, 0]] + np.array([1.0, 0, 0])), [[np.array([0.1, 0.2, 0.3])]]),
    ("arrays_with_initializer_lists",
     "[Differentiable] float f(float x, int k) { float a[4] = {x, x * x, 1.0, -x}; float s = 0.0; "
     "for (int i = 0; i < 4; i++) { s += a[i] * float(i + 1); } a[k] = s; return a[k] * a[0] + a[1]; }",
     lambda x, k: _arrays_ref(x, k), [[0.7, 1], [0.7, 3], [-0.4, 0]]),
    ("two_dimensional_array",
     "[Differentiable] float f(float x) { float m[2][2] = {{x, 1.0}, {2.0, x * x}}; m[1][0] = m[0][0] * m[1][1]; "
     "return m[0][0] + m[0][1] + m[1][0] + m[1][1]; }",
     lambda x: x + 1 + x**3 + x * x, [[0.6]]),
    ("while_with_continue_and_break",
     "[Differentiable] float f(float x) { float y = x; int i = 0; [MaxIters(8)] while (i < 6) { i++; "
     "if (i == 2) continue; if (i == 5) break; y = y * x + 0.1; } return y; }",
     lambda x: ((x * x + F32_TENTH) * x + F32_TENTH) * x + F32_TENTH, [[0.8], [1.1]]),
    ("nested_loops_with_break",
     "[Differentiable] float f(float x) { float s = 0.0; for (int i = 0; i < 3; i++) { for (int j = 0; j < 3; j++) { "
     "if (j > i) break; s += x * float(i + j) + sin(s); } } return s; }",
     None, [[0.5], [1.5]]),
    ("do_while_with_max_iters",
     "[Differentiable] float f(float x) { float y = x; int n = 0; [MaxIters(5)] do { y = y * y + 0.5; n++; } while (n < 3); return y; }",
     lambda x: ((x * x + 0.5) ** 2 + 0.5) ** 2 + 0.5, [[0.5], [-0.9]]),
    ("for_with_runtime_bound_and_max_iters",
     "[Differentiable] float f(float x, int n) { float y = 1.0; [MaxIters(6)] for (int i = 0; i < n; i++) { y = y * x + 1.0; } return y; }",
     lambda x, n: sum(x**i for i in range(n + 1)), [[0.7, 0], [0.7, 3], [1.2, 6]]),
])
def test_language_feature(name, src, ref, argsets):
    if ref is None:  # the reference is the program itself, run with Python semantics
        def ref(x):
            s = 0.0
            for i in range(3):
                for j in range(3):
                    if j > i:
                        break
                    s += x * (i + j) + math.sin(s)
            return s
    _check_program(src, ref, argsets)


def test_out_and_inout_parameters():
    src = "[Differentiable] void f(float x, inout float z, out float y) { y = x * z; z = z * z + x; }"
    c = _check_program(src, lambda x, z: (z * z + x, x * z), [[0.6, 0.8], [-1.1, 0.3]])
    # Slang: bwd_diff(f)(x, z, dy): the out parameter's derivative is an input, inout z takes its .d in
    (gx, gz) = c.bwd([0.6, 0.8], [2.0, 3.0])  # adjoints of (z_out, y)
    assert (gx, gz) == pytest.approx((2.0 * 1.0 + 3.0 * 0.8, 2.0 * 2 * 0.8 + 3.0 * 0.6))


INOUT_SLANG = """
[Differentiable] void f(float x, out float y, inout float z) { y = x * z; z = z * z + x; }
[Differentiable] float g(float x) { float y; float z = x; f(x, y, z); return y + z; }
float dg_fwd(float x) { return fwd_diff(g)(diffPair(x, 1.0)).d; }
float dg_bwd(float x) { var p = diffPair(x, 0.0); bwd_diff(g)(p, 1.0); return p.d; }
float2 df_bwd(float x, float z, float dy, float dz) {
    var xp = diffPair(x, 0.0);
    var zp = diffPair(z, dz);
    bwd_diff(f)(xp, dy, zp);
    return float2(xp.d, zp.d);
}
"""


def test_out_inout_through_fwd_diff_and_bwd_diff_calls_in_slang():
    from slang_harness import run_function, run_pipeline

    m = compile_slang(INOUT_SLANG)
    run_pipeline(m)
    x = 0.6
    assert run_function(m, "dg_fwd", x) == pytest.approx((4 * x + 1,))  # g = 2x^2 + x
    assert run_function(m, "dg_bwd", x) == pytest.approx((4 * x + 1,))
    # bwd_diff overwrites x.d with dy*z + dz; z.d (in: dz for the new z) becomes dy*x + dz*2z
    (g,) = run_function(m, "df_bwd", 0.6, 0.8, 2.0, 3.0)
    np.testing.assert_allclose(g, [2.0 * 0.8 + 3.0, 2.0 * 0.6 + 3.0 * 1.6])


STRUCTS = """
struct P : IDifferentiable { float3 pos; float w; no_diff float tag; };
[Differentiable] P advance(P p, float s) { P q = p; q.pos = p.pos * s + p.w; q.w = p.w * p.tag; q.tag = p.tag + 1.0; return q; }
[Differentiable] float f(P p, float s) { P q = advance(advance(p, s), s); return dot(q.pos, q.pos) + q.w * q.tag; }
"""


def test_struct_with_a_no_diff_field():
    def ref(pos, w, tag, s):
        for _ in range(2):
            pos, w, tag = pos * s + w, w * tag, tag + 1.0
        return pos @ pos + w * tag

    c = _check_program(STRUCTS, ref, [[np.array([0.1, 0.2, 0.3]), 0.5, 2.0, 0.7]])
    assert c.diff_args == [0, 1, 3]  # pos, w, s: the no_diff tag carries no derivative


def test_dzero_and_dadd_of_a_struct_differential():
    from slang_harness import run_function, run_pipeline

    src = STRUCTS + """
float4 sums(float3 a, float b) {
    P.Differential z = P.dzero();
    P.Differential d;
    d.pos = a; d.w = b;
    P.Differential e = P.dadd(d, P.dadd(d, z));
    return float4(e.pos, e.w + z.w + z.pos.y);
}
"""
    m = compile_slang(src)
    run_pipeline(m)
    (out,) = run_function(m, "sums", np.array([0.5, -1.0, 2.0]), 0.25)
    np.testing.assert_allclose(out, [1.0, -2.0, 4.0, 0.5])


def test_no_diff_parameter_call_and_detach_drop_derivatives():
    src = """float g(float x) { return x * x; }
[Differentiable] float f(float x, no_diff float y) { return x * no_diff g(x) + detach(x) * x + x * y; }"""
    c = Compiled(src, "f")
    assert c.diff_args == [0]
    x, y = 0.5, 0.3
    (val,) = c.primal([x, y])
    assert val == pytest.approx(x**3 + x * x + x * y)
    # g(x) and detach(x) are constants to the derivative: d/dx = g(x) + x + y
    _, (t,) = c.fwd([x, y], [1.0])
    (gx,) = c.bwd([x, y], [1.0])
    assert t == pytest.approx(x * x + x + y) and gx == pytest.approx(t)


def test_fwd_diff_of_fwd_diff_is_the_second_derivative():
    from slang_harness import run_function, run_pipeline

    src = """[Differentiable] float f(float x) { return sin(x) * x * x; }
float2 second(float x) {
    let h = fwd_diff(fwd_diff(f))(diffPair(diffPair(x, 1.0), diffPair(1.0, 0.0)));
    return float2(h.p.d, h.d.d);
}"""
    m = compile_slang(src)
    run_pipeline(m)
    for x in (0.9, -1.7):
        (out,) = run_function(m, "second", x)
        d1 = 2 * x * math.sin(x) + x * x * math.cos(x)
        d2 = 2 * math.sin(x) + 4 * x * math.cos(x) - x * x * math.sin(x)
        np.testing.assert_allclose(out, [d1, d2], rtol=1e-12)


def test_bwd_diff_of_a_function_that_uses_fwd_diff():
    src = """[Differentiable] float f(float x, float y) { return exp(x * y) + x * x; }
[Differentiable] float dfdx(float x, float y) { return fwd_diff(f)(diffPair(x, 1.0), diffPair(y, 0.0)).d; }"""
    # dfdx = y e^{xy} + 2x: reverse mode of it is the mixed second derivatives
    c = _check_program(src, lambda x, y: y * math.exp(x * y) + 2 * x, [[0.4, 0.7], [-0.3, 1.2]], fname="dfdx")
    x, y = 0.4, 0.7
    gx, gy = c.bwd([x, y], [1.0])
    assert gx == pytest.approx(y * y * math.exp(x * y) + 2)
    assert gy == pytest.approx(math.exp(x * y) * (1 + x * y))


@pytest.mark.parametrize("attr", ["[PreferRecompute]", "[PreferCheckpoint]", ""])
def test_prefer_recompute_and_checkpoint_keep_the_derivatives(attr):
    src = f"""{attr} [Differentiable] float a(float x) {{ return exp(x) * x; }}
[Differentiable] {attr} float f(float x) {{
    float y = x;
    for (int i = 0; i < 3; i++) {{ y = y * 0.5 + a(y) * 0.25; }}
    return sin(y) * a(x);
}}"""

    def ref(x):
        y = x
        for _ in range(3):
            y = y * 0.5 + math.exp(y) * y * 0.25
        return math.sin(y) * math.exp(x) * x

    _check_program(src, ref, [[0.3], [-0.8]])


def test_force_unroll_and_max_iters_keep_values_and_derivatives():
    src = """[Differentiable] float f(float x) {
    float y = x;
    [ForceUnroll] for (int i = 0; i < 3; i++) { y = y * x + 0.5; }
    [MaxIters(10)] while (y < 4.0) { y = y * 1.5 + x; }
    return y;
}"""

    def ref(x):
        y = x
        for _ in range(3):
            y = y * x + 0.5
        while y < 4.0:
            y = y * 1.5 + x
        return y

    _check_program(src, ref, [[0.9], [1.4], [2.0]])


def test_differential_pair_parameters_and_custom_derivatives():
    src = """
float sq(float x) { return x * x; }
[ForwardDerivativeOf(sq)] DifferentialPair<float> sq_fwd(DifferentialPair<float> x) { return diffPair(x.p * x.p, 2.0 * x.p * x.d); }
[BackwardDerivativeOf(sq)] void sq_bwd(inout DifferentialPair<float> x, float d) { x = diffPair(x.p, 2.0 * x.p * d); }
[Differentiable] float f(float x, float y) { return sq(x) * y + sq(y); }
"""
    _check_program(src, lambda x, y: x * x * y + y * y, [[0.6, -1.2]])


def test_wrong_custom_derivative_is_used_as_given():
    """The passes must call the user's derivative, not derive their own: a deliberately wrong
    derivative (3x instead of 2x) shows up in both modes."""
    src = """
float sq(float x) { return x * x; }
[ForwardDerivativeOf(sq)] DifferentialPair<float> sq_fwd(DifferentialPair<float> x) { return diffPair(x.p * x.p, 3.0 * x.p * x.d); }
[BackwardDerivativeOf(sq)] void sq_bwd(inout DifferentialPair<float> x, float d) { x = diffPair(x.p, 3.0 * x.p * d); }
[Differentiable] float f(float x) { return sq(x) + x; }
"""
    c = Compiled(src, "f")
    _, (t,) = c.fwd([0.5], [1.0])
    (g,) = c.bwd([0.5], [1.0])
    assert t == pytest.approx(2.5) and g == pytest.approx(2.5)


# -- through `diffc run` on OpenCL ------------------------------------------------------------------


EARLY_RETURN_KERNEL = """\
//TEST_INPUT: set xs = ubuffer(data=[-1.3 -0.7 -0.1 0.3 0.8 1.4 1.9 2.6], stride=4)
RWStructuredBuffer<float> xs;
//TEST_INPUT: set out = out ubuffer(data=[0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0], stride=4)
RWStructuredBuffer<float> out;

[Differentiable] float f(float x) {
    if (x > 2) return x*x;
    for (int i = 0; i < 4; i++) { if (x > 1) return x*3; x = x + 0.5; }
    return x;
}

[Differentiable] float g(float x, int k) {
    float y = x;
    switch (k) {
    case 0: y = y * x;
    case 1: y = y + 2.0 * x; break;
    default: y = exp(y);
    }
    return y;
}

[shader("compute")]
[numthreads(8, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID) {
    int i = int(tid.x);
    var p = diffPair(xs[i], 0.0);
    bwd_diff(f)(p, 1.0);
    out[i] = fwd_diff(f)(diffPair(xs[i], 1.0)).d;
    out[8 + i] = p.d;
    var q = diffPair(xs[i], 0.0);
    bwd_diff(g)(q, i % 3, 1.0);
    out[16 + i] = q.d;
}
"""


def test_early_return_and_switch_derivatives_through_diffc_run(tmp_path, diffc_cli):
    f = tmp_path / "k.slang"
    f.write_text(EARLY_RETURN_KERNEL)
    r = diffc_cli("run", str(f))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split()
    assert lines[:2] == ["out:", "float"]  # the out buffer, by name
    got = np.array([float(v) for v in lines[2:]])
    xs = np.float32([-1.3, -0.7, -0.1, 0.3, 0.8, 1.4, 1.9, 2.6]).astype(float)
    # the early-return reference: finite differences of the Python program
    d_early = [(_early_ref(x + 1e-6) - _early_ref(x - 1e-6)) / 2e-6 for x in xs]
    d_switch = [[2 * x + 2, 3.0, math.exp(x)][i % 3] for i, x in enumerate(xs)]  # x^2 + 2x, 3x, e^x
    np.testing.assert_allclose(got[:8], d_early, rtol=1e-5)
    np.testing.assert_allclose(got[8:16], d_early, rtol=1e-5)
    np.testing.assert_allclose(got[16:], d_switch, rtol=1e-5)


@pytest.mark.parametrize("src,where,code", [
    ("[ForwardDifferentiable] float g(float x) { float y = x; while (y < 10.0) { y = y * 2.0; } return y; }\n"
     "[Differentiable] float f(float x) { return g(x) * x; }\n"
     "void main() { var x = diffPair(1.5, 0.0); bwd_diff(f)(x, 1.0); printf(\"%f\\n\", x.d); }\n", ":1:57:", "E0007"),
    ("RWStructuredBuffer<float> buf;\n"
     "[Differentiable] float f(float x) { buf[0] = x; return x * x; }\n"
     "void main() { var x = diffPair(1.5, 0.0); bwd_diff(f)(x, 1.0); printf(\"%f\\n\", x.d); }\n", ":2:37:", "E0006"),
])
def test_refused_programs_fail_located_through_diffc_run(tmp_path, diffc_cli, src, where, code):
    f = tmp_path / "bad.slang"
    f.write_text(src)
    for args in (("run", str(f)), ("compile", str(f), "--emit", "opencl")):
        r = diffc_cli(*args)
        assert r.returncode == 1
        assert r.stderr.startswith(f"{f}{where} error[{code}]"), r.stderr
        assert "<unknown location>" not in r.stderr and "Traceback" not in r.stderr
        assert r.stdout == ""


# -- loop bounds the front end works out ---------------------------------------------------------


@pytest.mark.parametrize("header,counter", [
    ("for (int i = 3; i > 0; i--)", [3, 2, 1]),
    ("for (int i = 3; i >= 0; --i)", [3, 2, 1, 0]),
    ("for (int i = 0; i < 8; i = i + 3)", [0, 3, 6]),
    ("for (int i = 10; i > -3; i -= 4)", [10, 6, 2, -2]),
    ("for (int i = 0; i != 6; i += 2)", [0, 2, 4]),
    ("for (uint i = 3u; i > 0u; i--)", [3, 2, 1]),
    ("for (int i = -2; i <= 2; i++)", [-2, -1, 0, 1, 2]),
])
def test_constant_for_loops_of_any_direction_and_step_are_reversible(header, counter):
    src = f"[Differentiable] float f(float x) {{ float y = x; {header} {{ y = y * x + float(i) * 0.25; }} return y; }}"

    def ref(x):
        y = x
        for i in counter:
            y = y * x + i * 0.25
        return y

    _check_program(src, ref, [[0.7], [-1.2]])


@pytest.mark.parametrize("header", [
    "for (int i = 0; i < 4; i--)",  # moves away from its bound
    "for (int i = 0; i != 5; i += 2)",  # steps over it
    "for (uint i = 3u; i >= 0u; i--)",  # wraps around
])
def test_for_loops_that_never_end_need_max_iters(header):
    msg = compile_error(f"[Differentiable] float f(float x) {{ float y = x; {header} {{ y = y * x; }} return y; }}")
    assert "error[E0007]: 'for' loop in backward-differentiable function 'f' has no bound" in msg


# -- more of the language ------------------------------------------------------------------------

V3 = np.array([0.3, -0.5, 0.8])
V4 = np.array([0.1, 0.2, 0.3, 0.4])


def _swizzle_compound_ref(v, x):
    v = v.copy()
    v[:2] += x
    v[2:] *= v[[1, 0]]
    v[3] += 1.0
    v[0] = -v[0]
    return v


def _vector_loop_ref(v, x):
    acc = np.zeros(3)
    for i in range(3):
        acc = acc * x + v * i
        acc[1] = max(acc[1], acc[0])
    return acc


def _early_while_ref(x):
    y, i = x, 0
    while True:
        if y > 3.0:
            return y * 2.0
        y = y * 1.5 + x
        i += 1
        if i > 8:
            return y


def _nested_calls_ref(x):
    def g(x):
        y = x
        for _ in range(3):
            if y > 2.0:
                return y
            y *= 1.5
        return -y

    return g(x) + g(x + 1.0)


@pytest.mark.parametrize("name,src,ref,argsets", [
    ("backward_differentiable_attribute", "[BackwardDifferentiable] float f(float x) { return x * exp(x); }",
     lambda x: x * math.exp(x), [[0.3]]),
    ("double_precision", "[Differentiable] double f(double x, double y) { return x * y + sin(x); }",
     lambda x, y: x * y + math.sin(x), [[0.3, 0.4]]),
    ("half_precision", "[Differentiable] half f(half x) { return x * x + x; }", lambda x: x * x + x, [[0.5]]),
    ("vector_ternary", "[Differentiable] float3 f(float3 a, float3 b, float x) { return x > 0.0 ? a * x : b * b; }",
     lambda a, b, x: a * x if x > 0 else b * b, [[V3, V3[::-1].copy(), 0.4], [V3, V3[::-1].copy(), -0.4]]),
    ("swizzle_compound_assignment",
     "[Differentiable] float4 f(float4 v, float x) { v.xy += x; v.zw *= v.yx; v.w++; v.x = -v.x; return v; }",
     _swizzle_compound_ref, [[V4, 0.7]]),
    ("float_increment", "[Differentiable] float f(float x) { float y = x; y++; y *= y; --y; return y; }",
     lambda x: (x + 1) ** 2 - 1, [[0.3]]),
    ("vector_carried_through_a_loop",
     "[Differentiable] float3 f(float3 v, float x) { float3 acc = float3(0.0); for (int i = 0; i < 3; i++) "
     "{ acc = acc * x + v * float(i); acc.y = max(acc.y, acc.x); } return acc; }",
     _vector_loop_ref, [[V3, 0.6], [-V3, 1.3]]),
    ("array_of_vectors",
     "[Differentiable] float f(float3 v) { float3 a[2] = {v, v.zyx}; a[1].x = a[0].y * 2.0; return dot(a[0], a[1]); }",
     lambda v: v @ np.array([2 * v[1], v[1], v[0]]), [[V3]]),
    ("struct_with_an_array_field",
     "struct S : IDifferentiable { float a[2]; float3 v; }; "
     "[Differentiable] float f(S s) { s.a[1] = s.a[0] * s.v.z; return s.a[1] + dot(s.v, s.v) * s.a[0]; }",
     lambda a0, a1, v: a0 * v[2] + (v @ v) * a0, [[0.3, 0.4, V3]]),
    ("vector_out_parameters",
     "[Differentiable] void f(float3 v, out float3 o, out float l) { o = normalize(v); l = length(v); }",
     lambda v: (v / np.linalg.norm(v), np.linalg.norm(v)), [[V3]]),
    ("early_return_in_callee_inside_a_loop",
     "[Differentiable] float g(float x) { float y = x; for (int i = 0; i < 3; i++) { if (y > 2.0) return y; y = y * 1.5; } return -y; } "
     "[Differentiable] float f(float x) { float s = 0.0; for (int j = 0; j < 2; j++) { s += g(x + float(j)); } return s; }",
     _nested_calls_ref, [[0.5], [0.9], [1.6]]),
    ("return_from_an_infinite_loop_with_max_iters",
     "[Differentiable] float f(float x) { float y = x; int i = 0; [MaxIters(10)] while (true) { if (y > 3.0) return y * 2.0; "
     "y = y * 1.5 + x; i++; if (i > 8) break; } return y; }",
     _early_while_ref, [[0.5], [0.05], [3.5]]),
    ("differentiable_struct_built_and_passed",
     "struct P : IDifferentiable { float a; float b; }; [Differentiable] float h(P p) { return p.a * p.b; } "
     "[Differentiable] float f(float x, float y) { P p; p.a = x; p.b = y; return h(p) + x; }",
     lambda x, y: x * y + x, [[0.3, 0.7]]),
    ("unsigned_loop_counter",
     "[Differentiable] float f(float x) { float y = 0.0; for (uint i = 0u; i < 4u; i++) { y += x * float(i); } return y; }",
     lambda x: 6 * x, [[0.3]]),
    ("vector_builtins_with_scalar_arguments",
     "[Differentiable] float3 f(float3 v, float lo) { return clamp(v, lo, 0.5) + lerp(v, v.yzx, 0.3) + pow(abs(v), 1.5); }",
     lambda v, lo: np.clip(v, lo, 0.5) + v + (v[[1, 2, 0]] - v) * float(np.float32(0.3)) + np.abs(v) ** 1.5, [[V3, -0.2]]),
    ("int_to_float_promotion",
     "[Differentiable] float f(float x, int n) { return x * n + n / 2 + x / 2; }", lambda x, n: x * n + n // 2 + x / 2,
     [[0.3, 5]]),
    ("two_argument_builtins_on_float2",
     "[Differentiable] float2 f(float2 y, float2 x) { return atan2(y, x) + fmod(y * 3.0, x + 2.0); }",
     lambda y, x: np.arctan2(y, x) + np.fmod(y * 3.0, x + 2.0), [[np.array([0.3, -0.4]), np.array([0.8, 1.1])]]),
])
def test_more_language_features(name, src, ref, argsets):
    _check_program(src, ref, argsets)


def test_no_diff_return_drops_the_derivative():
    src = "[Differentiable] no_diff float g(float x) { return x * x; } [Differentiable] float f(float x) { return g(x) * x + x; }"
    c = Compiled(src, "f")
    (val,) = c.primal([0.5])
    assert val == pytest.approx(1.0 / 8 + 0.5)
    _, (t,) = c.fwd([0.5], [1.0])
    (g,) = c.bwd([0.5], [1.0])
    assert t == pytest.approx(0.25 + 1.0) and g == pytest.approx(t)  # g(x) is a constant


HIGHER_ORDER = """
[Differentiable] float f(float3 v) { float3 w = v.zxy * v.x; return dot(w, normalize(v)) + length(v.xy); }
[Differentiable] float loopy(float x) { float y = x; for (int i = 0; i < 3; i++) { if (y > 2.0) break; y = y * x + sin(y); } return y; }
[Differentiable] float df(float3 v, float3 dir) { return fwd_diff(f)(diffPair(v, dir)).d; }
float hvp_fwd(float3 v, float3 a, float3 b) { return fwd_diff(fwd_diff(f))(diffPair(diffPair(v, a), diffPair(b, float3(0.0)))).d.d; }
float3 hvp_bwd(float3 v, float3 a) { var vp = diffPair(v); var ap = diffPair(a); bwd_diff(df)(vp, ap, 1.0); return vp.d; }
float3 hvp_bwd_of_fwd(float3 v, float3 a) { var p = diffPair(diffPair(v, a)); bwd_diff(fwd_diff(f))(p, diffPair(0.0, 1.0)); return p.d.p; }
float2 loopy_second(float x) {
    let h = fwd_diff(fwd_diff(loopy))(diffPair(diffPair(x, 1.0), diffPair(1.0, 0.0)));
    var p = diffPair(x);
    bwd_diff(loopy)(p, 1.0);
    return float2(h.d.d, p.d);
}
"""


def test_second_derivatives_through_swizzles_and_loops_in_every_mode_combination():
    from slang_harness import run_function, run_pipeline

    m = compile_slang(HIGHER_ORDER)
    run_pipeline(m)

    def f(v):
        return run_function(m, "f", v)[0]

    h = 1e-4
    v = np.array([0.3, -0.5, 0.8])
    e = np.eye(3)
    hess = np.array([[(f(v + h * e[i] + h * e[j]) - f(v + h * e[i] - h * e[j]) - f(v - h * e[i] + h * e[j])
                       + f(v - h * e[i] - h * e[j])) / (4 * h * h) for j in range(3)] for i in range(3)])
    a, b = np.array([1.0, 0.2, -0.3]), np.array([0.4, 0.1, 0.5])
    (fwd_fwd,) = run_function(m, "hvp_fwd", v, a, b)
    assert fwd_fwd == pytest.approx(b @ hess @ a, rel=1e-6)
    (bwd_of_user,) = run_function(m, "hvp_bwd", v, a)
    (bwd_of_fwd,) = run_function(m, "hvp_bwd_of_fwd", v, a)
    np.testing.assert_allclose(bwd_of_user, hess @ a, rtol=1e-6)
    np.testing.assert_allclose(bwd_of_fwd, bwd_of_user, rtol=1e-12)
    assert b @ bwd_of_user == pytest.approx(fwd_fwd, rel=1e-12)

    def loopy(x):
        return run_function(m, "loopy", x)[0]

    for x in (0.5, 1.1):
        (got,) = run_function(m, "loopy_second", x)
        second = (loopy(x + h) - 2 * loopy(x) + loopy(x - h)) / (h * h)
        first = (loopy(x + 1e-6) - loopy(x - 1e-6)) / 2e-6
        np.testing.assert_allclose(got, [second, first], rtol=1e-5)


PAIRS_AND_CUSTOM = """
struct S : IDifferentiable { float a; float3 v; no_diff int id; };
[Differentiable] float e(S s, float k) { return s.a * dot(s.v, s.v) * k + float(s.id); }
DifferentialPair<float> sqf(DifferentialPair<float> x) { return diffPair(x.p * x.p, 2.0 * x.p * x.d); }
void sqb(inout DifferentialPair<float> x, float d) { x = diffPair(x.p, 2.0 * x.p * d); }
[ForwardDerivative(sqf)] [BackwardDerivative(sqb)] float sq(float x) { return x * x; }
[Differentiable] float useSq(float x) { return sq(x) * x; }

S make(float a, float3 v, int id) { S s; s.a = a; s.v = v; s.id = id; return s; }

float4 struct_grad(float a, float3 v, int id, float k) {
    var sp = diffPair(make(a, v, id));
    var kp = diffPair(k);
    __bwd_diff(e)(sp, kp, 1.0);
    return float4(sp.d.a, sp.d.v.y, kp.d, float(sp.p.id));
}

float2 struct_tangent(float a, float3 v, int id, float k) {
    S.Differential dir = S.dzero();
    dir.a = 1.0;
    dir.v = float3(0.0, 1.0, 0.0);
    let r = __fwd_diff(e)(diffPair(make(a, v, id), dir), diffPair(k, 0.0));
    return float2(r.p, r.d);
}

float3 custom(float x) {
    var p = diffPair(x);
    bwd_diff(useSq)(p, 1.0);
    let y = fwd_diff(useSq)(diffPair(x, 1.0));
    return float3(p.d, y.p, y.d);
}
"""


def test_struct_pairs_double_underscore_forms_and_custom_derivative_attributes():
    from slang_harness import run_function, run_pipeline

    m = compile_slang(PAIRS_AND_CUSTOM)
    run_pipeline(m)
    a, v, idx, k = 0.5, np.array([1.0, 2.0, 3.0]), 4, 2.0
    (g,) = run_function(m, "struct_grad", a, v, idx, k)
    np.testing.assert_allclose(g, [(v @ v) * k, 2 * a * k * v[1], a * (v @ v), idx])
    (t,) = run_function(m, "struct_tangent", a, v, idx, k)
    np.testing.assert_allclose(t, [a * (v @ v) * k + idx, (v @ v) * k + 2 * a * k * v[1]])
    (c,) = run_function(m, "custom", 3.0)
    np.testing.assert_allclose(c, [27.0, 27.0, 27.0])  # d(x^3)/dx at 3, through sq's own derivatives


def _do_while_continue_ref(x):
    y, i = x, 0
    while True:
        i += 1
        if i != 2:  # `continue` in a do-while goes to the condition
            y = y * x + 0.5
        if not i < 4:
            return y


def _while_nested_break_ref(x):
    y, i = x, 0
    while i < 10:
        i += 1
        if y > 1.0:
            if x > 0.3:
                break
            y *= 0.5
        y += x
    return y


def _endless_for_ref(x):
    y, i = x, 0
    while True:
        i += 1
        y *= x
        if i >= 3:
            return y


def _nested_return_ref(x):
    y = x
    for _ in range(3):
        for _ in range(3):
            y = y * 1.5 + x
            if y > 4.0:
                return y - x
    return y


@pytest.mark.parametrize("src,ref,argsets", [
    ("[Differentiable] float f(float x) { float y = x; int i = 0; [MaxIters(10)] do { i++; if (i == 2) continue; "
     "y = y * x + 0.5; } while (i < 4); return y; }", _do_while_continue_ref, [[0.5], [-1.1]]),
    ("[Differentiable] float f(float x) { float y = x; int i = 0; [MaxIters(10)] while (i < 10) { i++; "
     "if (y > 1.0) { if (x > 0.3) break; y = y * 0.5; } y = y + x; } return y; }",
     _while_nested_break_ref, [[0.55], [0.23]]),  # x = 0.5 would hit y == 1.0 exactly
    ("[Differentiable] float f(float x) { float y = x; int i = 0; [MaxIters(6)] for (;;) { i++; y = y * x; "
     "if (i >= 3) break; } return y; }", _endless_for_ref, [[0.5]]),
    ("[Differentiable] float f(float x) { float y = x; for (int i = 0; i < 3; i++) { for (int j = 0; j < 3; j++) { "
     "y = y * 1.5 + x; if (y > 4.0) return y - x; } } return y; }", _nested_return_ref, [[0.5], [1.0], [0.1]]),
])
def test_continue_break_and_return_inside_loops(src, ref, argsets):
    _check_program(src, ref, argsets)
