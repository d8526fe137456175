"""Helpers shared by the tests (import them with `from conftest import ...`): run a pass
pipeline over IR text and interpret the result, wrap a function in an `@main` that calls
diff.bwd_diff / diff.fwd_diff on it, finite differences, and diffc-opt as a subprocess."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer

from diffc import interp
from diffc.compiler import AD_PIPELINE_SPEC, build_pipeline
from diffc.dialects import diff

CANONICAL = AD_PIPELINE_SPEC  # the driver's pipeline (diffc.compiler)

# every kernel pipeline the tests run (and their subprocesses) ends with xDSL's verifier
os.environ.setdefault("DIFFC_VERIFY", "1")


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _no_pending_status_reads():
    """A dispatch's check error waits for the next read of values (diffc/runtime/pending.py):
    one a test leaves unread must not be raised in the next test."""
    yield
    from diffc.runtime import pending

    pending.AT_SYNC.reads.items.clear()


# ---- pipelines and the interpreter --------------------------------------------------------------


# SlangPy's polynomial example as IR: the runtime tests call it over tensors.
POLYNOMIAL_IR = """
func.func @polynomial(%a: f32, %b: f32, %c: f32, %x: f32) -> f32 attributes {diff.differentiable} {
  %ax = arith.mulf %a, %x : f32
  %axx = arith.mulf %ax, %x : f32
  %bx = arith.mulf %b, %x : f32
  %s = arith.addf %axx, %bx : f32
  %r = arith.addf %s, %c : f32
  func.return %r : f32
}
"""

def print_module(module: ModuleOp) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def run_pipeline(text: str, pipeline: str) -> ModuleOp:
    """IR text through `pipeline` (xDSL's pass syntax), verified."""
    module = interp.parse_module(text)
    build_pipeline(pipeline).apply(interp.make_context(), module)
    module.verify()
    return module


def lower_reparsed(text: str, pipeline: str = CANONICAL) -> ModuleOp:
    """`run_pipeline`, then printed and parsed back (the text is the contract between stages);
    no diff op or type may be left in the text."""
    printed = print_module(run_pipeline(text, pipeline))
    assert "!diff." not in printed and "= diff." not in printed
    return interp.parse_module(printed)


def assert_no_diff(module: ModuleOp) -> None:
    for op in module.walk():
        assert not op.name.startswith("diff."), f"{op.name} left in\n{module}"
        for v in (*op.operands, *op.results):
            assert "!diff." not in str(v.type), f"{v.type} left in\n{module}"


def run(module: ModuleOp | str, name: str, *args):
    """Calls `@name` with diffc's interpreter (float64-exact)."""
    return interp.run_function(module, name, *args)


# ---- wrappers that call the derivatives ----------------------------------------------------------


def function_named(text: str, name: str) -> func.FuncOp:
    return next(o for o in interp.parse_module(text).walk() if isinstance(o, func.FuncOp) and o.sym_name.data == name)


def with_bwd_main(text: str, fname: str = "f") -> str:
    """Appends `@main(primals..., douts...) -> grads` calling diff.bwd_diff @fname."""
    sig = diff.bwd_signature(function_named(text, fname))
    ins = ", ".join(f"%a{i}: {t}" for i, t in enumerate(sig.inputs.data))
    args = ", ".join(f"%a{i}" for i in range(len(sig.inputs.data)))
    tin = ", ".join(str(t) for t in sig.inputs.data)
    tout = ", ".join(str(t) for t in sig.outputs.data)
    n = len(sig.outputs.data)
    res = f"%r:{n}" if n > 1 else "%r"
    rets = ", ".join(f"%r#{i}" for i in range(n)) if n > 1 else "%r"
    main = (
        f"func.func @main({ins}) -> ({tout}) {{\n"
        f"  {res} = diff.bwd_diff @{fname}({args}) : ({tin}) -> ({tout})\n"
        f"  func.return {rets} : {tout}\n}}\n"
    )
    body = text.strip()
    if body.startswith("builtin.module"):
        body = body[body.index("{") + 1 : body.rindex("}")]
    return body + "\n" + main


def with_fwd_main(text: str, fname: str = "f") -> str:
    """`with_bwd_main`, and `@main_fwd(primals..., tangents of the differentiable params...)`
    returning the tangents of the differentiable results, through diff.fwd_diff @fname."""
    fn = function_named(text, fname)
    ins = fn.function_type.inputs.data
    outs = fn.function_type.outputs.data
    dins = [i for i in range(len(ins)) if diff.arg_is_differentiable(fn, i)]
    douts = [i for i in range(len(outs)) if diff.result_is_differentiable(fn, i)]
    sig = diff.fwd_signature(fn)
    params = [f"%x{i}: {t}" for i, t in enumerate(ins)] + [f"%v{i}: {ins[i]}" for i in dins]
    lines = [f"func.func @main_fwd({', '.join(params)}) -> ({', '.join(str(outs[i]) for i in douts)}) {{"]
    args = []
    for i, t in enumerate(ins):
        if i in dins:
            lines.append(f"  %p{i} = diff.make_pair %x{i}, %v{i} : {t}")
            args.append(f"%p{i}")
        else:
            args.append(f"%x{i}")
    tin = ", ".join(str(t) for t in sig.inputs.data)
    tout = ", ".join(str(t) for t in sig.outputs.data)
    n = len(outs)
    lines.append(f"  %r{':' + str(n) if n > 1 else ''} = diff.fwd_diff @{fname}({', '.join(args)}) : ({tin}) -> ({tout})")
    rets = []
    for i in douts:
        r = f"%r#{i}" if n > 1 else "%r"
        lines.append(f"  %d{i} = diff.differential {r} : {sig.outputs.data[i]}")
        rets.append(f"%d{i}")
    lines.append(f"  func.return {', '.join(rets)} : {', '.join(str(outs[i]) for i in douts)}")
    lines.append("}")
    return with_bwd_main(text, fname) + "\n".join(lines) + "\n"


def gradient(text: str, args, douts, fname: str = "f", pipeline: str = CANONICAL):
    """The gradients diff-rev computes for `@fname` at `args`, weighted by `douts`."""
    module = run_pipeline(with_bwd_main(text, fname), pipeline)
    assert_no_diff(module)
    return run(module, "main", *args, *douts)


# ---- finite differences -------------------------------------------------------------------------


def finite_difference(text: str, args, douts, diff_args, fname: str = "f", h: float = 1e-6):
    """sum_j dout_j * d f_j / d args[i] for each i in diff_args, by central differences in
    float64 on the primal function (interpreted before any pass)."""
    module = interp.parse_module(text)
    grads = []
    for i in diff_args:
        plus = list(args)
        minus = list(args)
        plus[i] += h
        minus[i] -= h
        fp = run(module, fname, *plus)
        fm = run(module, fname, *minus)
        grads.append(sum(d * (a - b) / (2 * h) for d, a, b in zip(douts, fp, fm)))
    return grads


def central(f: Callable[[list[float]], float], x: Sequence[float], v: Sequence[float], h: float = 1e-6) -> float:
    """The derivative of f at x along v, by a central difference."""
    plus = f([a + h * d for a, d in zip(x, v)])
    minus = f([a - h * d for a, d in zip(x, v)])
    return (plus - minus) / (2 * h)


# ---- the diffc command ----------------------------------------------------------------------------


@pytest.fixture
def diffc_cli(capfd, monkeypatch):
    """`diffc ARGS` as its console entry runs it (diffc.cli.main) on the CPU device, in the test's
    process: its exit status and what it writes to stdout and stderr (the device's printf too),
    as a CompletedProcess, without a Python start-up a call. test_bad_input_fuzz.py and
    test_cli.py run the console entry itself in a process of its own."""
    from diffc import cli

    monkeypatch.setenv("DIFFC_DEVICE", "cpu")

    def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        capfd.readouterr()
        try:
            code = cli.main(list(args))
        except SystemExit as e:  # argparse: --help, --version, a malformed command line
            code = e.code if isinstance(e.code, int) else int(e.code is not None)
        out, err = capfd.readouterr()
        return subprocess.CompletedProcess(["diffc", *args], code, out, err)

    return run


# ---- diffc-opt ------------------------------------------------------------------------------------


def run_opt(
    args: list[str], stdin: str | None = None, cwd: Path | None = None, pythonpath: Path | None = None
) -> subprocess.CompletedProcess:
    """diffc-opt in a fresh interpreter (as a user runs it: no DIFFC_TRACEBACK); `pythonpath`
    is put in front of PYTHONPATH."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("DIFFC_TRACEBACK", None)
    return subprocess.run(
        [sys.executable, "-m", "diffc.tools.diffc_opt", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
