"""A custom derivative's signature is checked in the program's own types where the attribute names
it (frontend/checker/overloads.py, check_derivative_signature): a derivative that does not take
or return what fwd_diff / bwd_diff of its function does is a located E0003 in Slang's terms, not
an IR verifier message after lowering; a differentiable function whose result is an
IDifferentiablePtrType is refused (E0008). Signatures that fit, also in their Slang spellings,
still compile, with derivatives against float64 central differences in both modes."""

from __future__ import annotations

import os
import re

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slang_harness import Compiled
from slang_helpers import expect_error


def test_a_forward_derivative_that_returns_the_wrong_type_is_located_at_its_attribute():
    src = ("float sq_fwd(DifferentialPair<float> x) { return 2.0 * x.p * x.d; }\n"
           "[ForwardDerivative(sq_fwd)]\n"
           "float sq(float x) { return x * x; }\n")
    expect_error(src, "E0003", 2, 2, "[ForwardDerivative]: fwd_diff(sq) is (DifferentialPair<float>) -> "
                 "DifferentialPair<float>, but 'sq_fwd' is (DifferentialPair<float>) -> float")


def test_a_backward_derivative_with_the_wrong_parameters_is_located_at_its_attribute():
    src = ("void cube_bwd(float x, float dOut) { }\n"
           "[BackwardDerivative(cube_bwd)]\n"
           "float cube(float x) { return x * x * x; }\n")
    expect_error(src, "E0003", 2, 2, "[BackwardDerivative]: bwd_diff(cube) is (inout DifferentialPair<float>, "
                 "float), but 'cube_bwd' is (float, float)")
    # the pair taken `in`: its gradient could not come back
    src = src.replace("void cube_bwd(float x,", "void cube_bwd(DifferentialPair<float> x,")
    expect_error(src, "E0003", 2, 2, "but 'cube_bwd' is (DifferentialPair<float>, float)")


def test_a_derivative_of_form_that_does_not_fit_is_located_at_its_attribute():
    src = ("float cube(float x) { return x * x * x; }\n"
           "[ForwardDerivativeOf(cube)]\n"
           "DifferentialPair<float> cube_fwd(DifferentialPair<float> x, float extra)\n"
           "{ return diffPair(x.p * x.p * x.p, 3.0 * x.p * x.p * x.d); }\n")
    expect_error(src, "E0003", 2, 2, "[ForwardDerivativeOf]: fwd_diff(cube) is (DifferentialPair<float>) -> "
                 "DifferentialPair<float>, but 'cube_fwd' is (DifferentialPair<float>, float)")


PTR = """
struct Addr : IDifferentiablePtrType
{
    typealias Differential = Addr;
    float* base;
    int at;
    [Differentiable]
    RET shifted(int n) { Addr a = this; a.at = at + n; return a; }
    FWD
}
"""


def test_a_differentiable_function_returning_a_pointer_type_is_refused():
    # Slang's fwd_diff would return its DifferentialPtrPair: refused rather than another signature
    expect_error(PTR.replace("RET", "Addr").replace("FWD", ""), "E0008", 8, 5,
                 "an IDifferentiablePtrType result (Addr) of differentiable 'shifted' is not supported")


def test_a_no_diff_pointer_result_takes_a_forward_derivative_that_returns_it_alone():
    # no_diff: fwd_diff returns the Addr, so a derivative returning the pair does not fit
    fwd = ("static DifferentialPtrPair<Addr> shifted_fwd(DifferentialPtrPair<Addr> self, int n)\n"
           "    { return DifferentialPtrPair<Addr>(self.p.shifted(n), self.d.shifted(n)); }")
    src = PTR.replace("RET", "no_diff Addr").replace("FWD", fwd).replace("[Differentiable]", "[ForwardDerivative(shifted_fwd)]")
    expect_error(src, "E0003", 7, 6, "[ForwardDerivative]: fwd_diff(shifted) is (DifferentialPtrPair<Addr>, int) "
                 "-> Addr, but 'shifted_fwd' is (DifferentialPtrPair<Addr>, int) -> DifferentialPtrPair<Addr>")


def test_fitting_signatures_in_their_slang_spellings_compile_and_differentiate():
    # a static method's derivative takes the pair of `this` first; a struct that is its own
    # Differential may be spelled as itself where the signature says S.Differential
    src = """
struct Lin : IDifferentiable
{
    float a;
    [ForwardDerivative(eval_fwd)]
    float eval(float x) { return a * x * x; }
    static DifferentialPair<float> eval_fwd(DifferentialPair<Lin> self, DifferentialPair<float> x)
    {
        return diffPair(self.p.a * x.p * x.p, self.d.a * x.p * x.p + 2.0 * self.p.a * x.p * x.d);
    }
}
struct P : IDifferentiable { typealias Differential = P; float u; float v; }
[BackwardDerivative(norm2_bwd)]
float norm2(P p) { return p.u * p.u + 3.0 * p.v * p.v; }
void norm2_bwd(inout DifferentialPair<P> p, float dOut)
{
    P g = { 2.0 * p.p.u * dOut, 6.0 * p.p.v * dOut };
    p = diffPair(p.p, g);
}
[Differentiable]
float use(Lin l, P p, float x) { return l.eval(x) * norm2(p) + x; }
"""
    Compiled(src, "use").check_derivatives([np.float64(1.5), np.float64(0.4), np.float64(-0.3), np.float64(-0.7)])


# ---- generated signatures (hypothesis) ---------------------------------------------------------
# A differentiable f of one to three parameters (a function, or a method of Lin whose derivative
# is a static method), and a custom derivative of it, named from either side, whose signature is
# the right one or a mutation of it; either the program compiles (the signature fits) or it gets
# E0003 at the attribute in the program's types, never an IR verifier message.

TYPES = ["float", "float3", "P"]
ZERO = {"float": "0.0", "float3": "float3(0.0, 0.0, 0.0)", "P": "mkp(0.0, 0.0)"}
TERM = {"float": "{x} * {x}", "float3": "dot({x}, {x})", "P": "{x}.u * {x}.v"}
RESULT = {"float": "s", "float3": "float3(s, 2.0 * s, 3.0 * s)", "P": "mkp(s, 2.0 * s)"}
REDUCE = {"float": "r", "float3": "r.x + r.y + r.z", "P": "r.u + r.v"}
PRELUDE = """struct P : IDifferentiable { typealias Differential = P; float u; float v; }
[Differentiable] P mkp(float a, float b) { P r = { a, b }; return r; }
"""


def _zero(t: str) -> str:
    return f"diffPair({ZERO[t[17:-1]]}, {ZERO[t[17:-1]]})" if t.startswith("DifferentialPair<") else ZERO[t]


def _right_signature(params, ret, mode, method):
    """(direction, type) of each parameter and the result of mode's derivative (Slang's rule); a
    method's derivative, a static method, takes the pair of `this` first."""
    out = [("in" if mode == "fwd" else "inout", "DifferentialPair<Lin>")] if method else []
    for t, nd in params:
        if mode == "fwd":
            out.append(("in", t if nd else f"DifferentialPair<{t}>"))
        else:
            out.append(("in", t) if nd else ("inout", f"DifferentialPair<{t}>"))
    if mode == "bwd":
        out.append(("in", ret))  # dOut: these types are their own Differentials
    return out, (f"DifferentialPair<{ret}>" if mode == "fwd" else "void")


@st.composite
def derivative_programs(draw):
    params = draw(st.lists(st.tuples(st.sampled_from(TYPES), st.booleans()), min_size=1, max_size=3))
    ret = draw(st.sampled_from(TYPES))
    mode = draw(st.sampled_from(["fwd", "bwd"]))
    method = draw(st.booleans())  # f a method of Lin, its derivative a static method
    right, right_ret = _right_signature(params, ret, mode, method)
    sig, dret = list(right), right_ret
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["drop", "extra", "unpair", "pair", "retype", "direction", "result"]))
        k = draw(st.integers(0, max(0, len(sig) - 1)))
        if kind == "drop" and sig:
            del sig[k]
        elif kind == "extra":
            sig.insert(k, ("in", "float"))
        elif kind == "unpair" and sig and sig[k][1].startswith("DifferentialPair<"):
            sig[k] = (sig[k][0], sig[k][1][17:-1])
        elif kind == "pair" and sig and not sig[k][1].startswith("DifferentialPair<"):
            sig[k] = (sig[k][0], f"DifferentialPair<{sig[k][1]}>")
        elif kind == "retype" and sig:
            new = draw(st.sampled_from(TYPES))
            sig[k] = (sig[k][0], f"DifferentialPair<{new}>" if sig[k][1].startswith("DifferentialPair<") else new)
        elif kind == "direction" and sig:
            sig[k] = ("in" if sig[k][0] == "inout" else "inout", sig[k][1])
        elif kind == "result" and mode == "fwd":
            new = draw(st.sampled_from(TYPES))
            dret = draw(st.sampled_from([new, f"DifferentialPair<{new}>"]))
    fits = sig == right and dret == right_ret
    names = [f"x{k}" for k in range(len(params))]
    decl = ", ".join(("no_diff " if nd else "") + f"{t} {n}" for (t, nd), n in zip(params, names))
    s = ("a * " if method else "") + "(" + " + ".join(TERM[t].format(x=n) for (t, _), n in zip(params, names)) + ")"
    dparams = ", ".join(("" if d == "in" else d + " ") + f"{t} a{k}" for k, (d, t) in enumerate(sig))
    body = "{ }" if mode == "bwd" else f"{{ {dret} z = {_zero(dret)}; return z; }}"
    on_f = draw(st.booleans())
    attr = {"fwd": "ForwardDerivative", "bwd": "BackwardDerivative"}[mode]
    deriv = (f"{'' if on_f else f'[{attr}Of(f)]'}\n{'static ' if method else ''}{dret} df({dparams}) {body}\n")
    primal = (f"{f'[{attr}(df)]' if on_f else '[Differentiable]'}\n"
              f"{ret} f({decl}) {{ float s = {s}; return {RESULT[ret]}; }}\n")
    args = ", ".join(names)
    if method:
        use = (f"[Differentiable]\nfloat use(Lin l, {decl}) {{ {ret} r = l.f({args}); return {REDUCE[ret]}; }}\n")
        return PRELUDE + f"struct Lin : IDifferentiable\n{{\n    float a;\n{primal}{deriv}}}\n" + use, fits
    use = f"[Differentiable]\nfloat use({decl}) {{ {ret} r = f({args}); return {REDUCE[ret]}; }}\n"
    return PRELUDE + deriv + primal + use, fits


IR_WORDS = ("func.func", "!diff.", "memref<", "diff.fwd_derivative", "diff.bwd_derivative")
SCALE = int(os.environ.get("DIFFC_FUZZ_SCALE", "1"))


@given(case=derivative_programs())
@settings(max_examples=40 * SCALE, deadline=None, derandomize=SCALE == 1, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_generated_custom_derivative_signatures_fit_or_get_a_located_e0003(tmp_path, capsys, case):
    from diffc import cli

    src, fits = case
    f = tmp_path / "sig.slang"
    f.write_text(src)
    rc = cli.main(["compile", str(f), "--emit", "lowered"])
    err = capsys.readouterr().err
    if fits:
        assert rc == 0, f"{err}\n--- input ---\n{src}"
        return
    assert rc == 1, f"a derivative that does not fit compiled\n--- input ---\n{src}"
    head = err.splitlines()[0]
    assert re.match(r"\S+sig\.slang:\d+:\d+: error\[E0003\]: \[(Forward|Backward)Derivative(Of)?\]: ", head), \
        f"{err}\n--- input ---\n{src}"
    assert not any(w in err for w in IR_WORDS), err
