"""diffc-opt as a user meets it: bad input gives a located message, exit code 1, no Python
traceback, and no output file; good input round-trips; stock xdsl-opt reads diff IR."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_opt

INPUTS = Path(__file__).parent / "filecheck" / "Inputs"

GOOD = """\
func.func @square(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %r = arith.mulf %x, %y : f32
  func.return %r : f32
}
func.func @use(%x: f32, %y: f32, %one: f32) -> (f32, f32) {
  %gx, %gy = "diff.bwd_diff"(%x, %y, %one) <{callee = @square}> : (f32, f32, f32) -> (f32, f32)
  func.return %gx, %gy : f32, f32
}
"""

# One failure per entry: (name, file text, line, column, message fragment). line/col None: the
# failure has no place in the file (the pipeline, a flag).
SYNTAX = "func.func @f(%x: f32) {\n  %p = diff.make_pair %x, %x f32\n  func.return\n}\n"
VERIFY = GOOD.replace("-> (f32, f32)\n  func", "-> (f32, f64)\n  func", 1).replace(
    "func.return %gx, %gy : f32, f32", "func.return %gx, %gx : f32, f32"
)
BAD_TYPE = "func.func @f(%p: !diff.pair<i32>) {\n  func.return\n}\n"
UNDEFINED = "func.func @f() {\n  %z = diff.add %a, %a : f32\n  func.return\n}\n"
FACTS = 'func.func @f(%x: f32) -> f32 attributes {diff.prefer = "never"}\n'


@pytest.fixture
def opt(capfd, monkeypatch):
    """diffc-opt's main in this process, as a user runs it (no DIFFC_TRACEBACK), with what it
    writes to stdout and stderr and its exit status: no Python start-up a call. Runs that load a
    pass plugin stay in a process of their own (run_opt), so that the plugin's passes do not
    stay registered here."""
    from diffc.tools.diffc_opt import main

    monkeypatch.delenv("DIFFC_TRACEBACK", raising=False)

    def run(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
        assert not any(a.startswith("--load-pass-plugin") for a in args), "a plugin: use run_opt"
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((stdin or "").encode()), encoding="utf-8"))
        capfd.readouterr()
        try:
            code = main(args)
        except SystemExit as e:  # argparse: --help
            code = e.code if isinstance(e.code, int) else int(e.code is not None)
        out, err = capfd.readouterr()
        return subprocess.CompletedProcess(["diffc-opt", *args], code, out, err)

    return run


def opt_or_process(opt, args: list[str]) -> subprocess.CompletedProcess:
    """`opt`, or run_opt for a run that loads a plugin."""
    return run_opt(args) if any(a.startswith("--load-pass-plugin") for a in args) else opt(args)


def assert_clean_failure(r: subprocess.CompletedProcess) -> None:
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    assert "Traceback" not in r.stdout
    assert r.stderr.strip(), "a failure must say why"


@pytest.mark.parametrize(
    "text, line, col, message",
    [
        (SYNTAX, 2, 30, "error: Expected ':'"),
        (VERIFY, 6, 3, "error: 'diff.bwd_diff' of @square: result 1 has type f64, expected f32"),
        (BAD_TYPE, 1, 28, "error: !diff.pair element type must be differentiable"),
        (UNDEFINED, 2, 17, "error: use of undefined value %a"),
        (FACTS, 1, 1, "error: 'func.func' @f: diff.prefer must be \"recompute\" or \"checkpoint\""),
    ],
    ids=["syntax", "verifier", "type-verifier", "undefined-value", "function-fact"],
)
def test_bad_ir_is_located(opt, tmp_path: Path, text: str, line: int, col: int, message: str):
    src = tmp_path / "bad.mlir"
    src.write_text(text)
    r = opt([str(src)])
    assert_clean_failure(r)
    first = r.stderr.splitlines()[0]
    assert first.startswith(f"{src}:{line}:{col}: "), r.stderr
    assert message in first
    # The offending line follows, with a caret under the column.
    lines = r.stderr.splitlines()
    source_line = text.splitlines()[line - 1]
    assert lines[1].endswith(source_line)
    margin = len(lines[1]) - len(source_line)
    assert lines[2].index("^") == margin + col - 1
    assert r.stdout == ""


def test_stdin_errors_are_located_as_stdin(opt):
    r = opt([], stdin=SYNTAX)
    assert_clean_failure(r)
    assert r.stderr.startswith("stdin:2:30: error: Expected ':'")


@pytest.mark.parametrize(
    "args, message",
    [
        (["-p", "no-such-pass"], "error: unknown pass 'no-such-pass'"),
        (["--pass-pipeline=builtin.module(no-such-pass)"], "error: unknown pass 'no-such-pass'"),
        (["-p", "canonicalize{bogus=1}"], "error: pass 'canonicalize' has no option 'bogus'"),
        (["-p", "expand-math-to-polynomials{terms=x}"], "error: pass 'expand-math-to-polynomials': bad option value"),
        (["--pass-pipeline=builtin.module(func.func(cse))"], "nested pipelines"),
        (["--pass-pipeline=cse"], "must have the form 'builtin.module("),
        (["-p", "cse{"], "Error parsing pass pipeline specification"),
        (["--load-pass-plugin=/nonexistent/plugin.py"], "no such file"),
        ([f"--load-pass-plugin={INPUTS / 'failing_pass_plugin.py'}", "-p", "always-fail"], "pass 'always-fail' failed"),
        ([f"--load-pass-plugin={INPUTS / 'crashing_pass_plugin.py'}", "-p", "crash"], "pass 'crash' crashed: KeyError"),
    ],
    ids=["unknown-pass", "unknown-pass-mlir", "unknown-option", "bad-option-value", "nested",
         "not-builtin-module", "pipeline-syntax", "missing-plugin", "failing-pass", "crashing-pass"],
)
def test_pipeline_errors(opt, tmp_path: Path, args: list[str], message: str):
    src = tmp_path / "good.mlir"
    src.write_text(GOOD)
    r = opt_or_process(opt, [str(src), *args])
    assert_clean_failure(r)
    assert message in r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize(
    "text, args",
    [
        (SYNTAX, []),
        (VERIFY, []),
        (GOOD, ["-p", "no-such-pass"]),
        (GOOD, ["-p", "canonicalize{bogus=1}"]),
        (GOOD, [f"--load-pass-plugin={INPUTS / 'failing_pass_plugin.py'}", "-p", "always-fail"]),
        (GOOD, [f"--load-pass-plugin={INPUTS / 'bad_output_plugin.py'}", "-p", "spoil-prefer"]),
        # The second chunk fails after the first one was already printed.
        (GOOD + "// -----\n" + VERIFY, ["--split-input-file"]),
    ],
    ids=["syntax", "verifier", "unknown-pass", "unknown-option", "failing-pass", "invalid-after-pass", "split"],
)
def test_failed_run_leaves_no_output_file(opt, tmp_path: Path, text: str, args: list[str]):
    src = tmp_path / "in.mlir"
    src.write_text(text)
    out = tmp_path / "out.mlir"
    r = opt_or_process(opt, [str(src), "-o", str(out), *args])
    assert_clean_failure(r)
    assert not out.exists()


def test_failed_run_keeps_an_existing_output_file(opt, tmp_path: Path):
    src = tmp_path / "in.mlir"
    src.write_text(VERIFY)
    out = tmp_path / "out.mlir"
    out.write_text("previous contents\n")
    r = opt([str(src), "-o", str(out)])
    assert_clean_failure(r)
    assert out.read_text() == "previous contents\n"


def test_successful_run_writes_output_file(opt, tmp_path: Path):
    src = tmp_path / "in.mlir"
    src.write_text(GOOD)
    out = tmp_path / "out.mlir"
    r = opt([str(src), "-o", str(out), "--pass-pipeline=builtin.module(canonicalize,cse)"])
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    text = out.read_text()
    assert "%gx, %gy = diff.bwd_diff @square(%x, %y, %one) : (f32, f32, f32) -> (f32, f32)" in text
    # The written file reads back to the same text.
    again = opt([str(out)])
    assert again.returncode == 0 and again.stdout == text


def test_verify_diagnostics_exit_zero_and_reports_every_chunk(opt, tmp_path: Path):
    src = tmp_path / "in.mlir"
    src.write_text(VERIFY + "// -----\n" + BAD_TYPE + "// -----\n" + GOOD)
    r = opt([str(src), "--split-input-file", "--verify-diagnostics"])
    assert r.returncode == 0, r.stderr
    assert f"{src}:6:3: error: 'diff.bwd_diff' of @square: result 1" in r.stdout
    # The second chunk starts after line 9 of the file: its line 1 is line 10.
    assert f"{src}:10:28: error: !diff.pair element type must be differentiable" in r.stdout
    assert "diff.bwd_diff @square(%x, %y, %one)" in r.stdout


def test_generic_and_custom_forms_round_trip(opt, tmp_path: Path):
    src = tmp_path / "in.mlir"
    src.write_text(GOOD)
    custom = opt([str(src)])
    generic = opt([str(src), "--print-op-generic"])
    assert custom.returncode == 0 and generic.returncode == 0
    assert '"diff.bwd_diff"(%x, %y, %one) <{callee = @square}> : (f32, f32, f32) -> (f32, f32)' in generic.stdout
    assert opt([], stdin=generic.stdout).stdout == custom.stdout
    assert opt(["--print-op-generic"], stdin=custom.stdout).stdout == generic.stdout


def test_traceback_only_on_request(tmp_path: Path):
    src = tmp_path / "in.mlir"
    src.write_text(GOOD)
    args = [str(src), f"--load-pass-plugin={INPUTS / 'crashing_pass_plugin.py'}", "-p", "crash"]
    env = dict(os.environ, DIFFC_TRACEBACK="1")
    r = subprocess.run([sys.executable, "-m", "diffc.tools.diffc_opt", *args], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode != 0
    assert "Traceback" in r.stderr and "KeyError" in r.stderr


def test_console_script_is_installed(tmp_path: Path):
    exe = shutil.which("diffc-opt")
    if exe is None:
        pytest.skip("diffc-opt is not on PATH")
    r = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0
    assert r.stdout.startswith("diffc-opt (xdsl ")


def test_stock_xdsl_opt_reads_diff_ir(tmp_path: Path):
    exe = shutil.which("xdsl-opt")
    if exe is None:
        pytest.skip("xdsl-opt is not on PATH")
    src = tmp_path / "in.mlir"
    src.write_text(GOOD)
    r = subprocess.run([exe, str(src)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "diff.bwd_diff @square(%x, %y, %one)" in r.stdout


def test_in_process_main_returns_one_on_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from diffc.tools.diffc_opt import main

    src = tmp_path / "bad.mlir"
    src.write_text(FACTS)
    assert main([str(src)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{src}:1:1: error: 'func.func' @f: diff.prefer")
    src.write_text(GOOD)
    assert main([str(src)]) == 0


def test_non_utf8_input_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from diffc.tools.diffc_opt import main

    src = tmp_path / "bin.mlir"
    src.write_bytes(b"func.func @f() {\n  func.return\xc3\x28\n}\n")
    out = tmp_path / "out.mlir"
    assert main([str(src), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{src}:2:14: error: the file is not UTF-8 text (byte 0xc3)"), err
    assert not out.exists()


def test_too_deep_nesting_is_an_error_not_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from diffc.tools.diffc_opt import main

    depth = 400
    body = "".join("  " * k + "scf.if %c {\n" for k in range(depth)) + "".join("  " * k + "}\n" for k in reversed(range(depth)))
    src = tmp_path / "deep.mlir"
    src.write_text(f"func.func @f(%c: i1) {{\n{body}  func.return\n}}\n")
    assert main([str(src)]) == 1
    err = capsys.readouterr().err
    assert err == "error: the input is nested too deeply for diffc-opt (Python's recursion limit)\n"


def test_unlocated_module_failure_names_the_module():
    # A module built in memory (no locations) whose symbol table is broken: the message used to
    # crash while printing the module without its region.
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.utils.exceptions import VerifyException

    from diffc.tools.diffc_opt import verify_located

    module = ModuleOp([func.FuncOp.external("f", [], []), func.FuncOp.external("f", [], [])])
    with pytest.raises(VerifyException) as e:
        verify_located(module, {})
    assert str(e.value).startswith("error: 'builtin.module' op") and str(e.value).endswith("in: builtin.module")


def test_plugin_that_exits_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    # A plugin file that is really a script calling sys.exit(3) used to end diffc-opt with
    # status 3 and no message.
    from diffc.tools.diffc_opt import main

    plugin = tmp_path / "script.py"
    plugin.write_text("import sys\nsys.exit(3)\n")
    src = tmp_path / "ok.mlir"
    src.write_text(GOOD)
    assert main([str(src), f"--load-pass-plugin={plugin}", "-p", "cse"]) == 1
    err = capsys.readouterr().err
    assert err == f"error: --load-pass-plugin: loading '{plugin}' failed: it called sys.exit(3)\n"


@pytest.mark.parametrize("text, line, col, message", [
    # ops whose constructors check their types raised VerifyException while parsing: it was printed
    # as `error: f16 should be of base attribute memref`, with no place
    ("func.func @f(%m: memref<4xf32>, %y: f32, %i: index) {\n  memref.store %y, %m[%i] : f16<4xf32>\n"
     "  func.return\n}\n", 2, 3, "error: f16 should be of base attribute memref"),
    ("func.func @f(%x: f32) -> f32 {\n  %a = arith.mulf %x, %x : index\n  func.return %a : f32\n}\n", 2, 3,
     "error: Unexpected attribute index"),
])
def test_op_construction_errors_while_parsing_are_located(tmp_path: Path, capsys, text, line, col, message):
    from diffc.tools.diffc_opt import main

    src = tmp_path / "bad.mlir"
    src.write_text(text)
    assert main([str(src)]) == 1
    head, shown, caret = capsys.readouterr().err.splitlines()
    assert head == f"{src}:{line}:{col}: {message}"
    assert shown.strip() == text.splitlines()[line - 1].strip() and caret.strip().startswith("^")


def test_forward_reference_never_defined_is_located(tmp_path: Path, capsys, monkeypatch):
    # %x is used by the loop but only "defined" as the parameter of a function nested inside it:
    # xDSL's parser leaves it forward-declared, and its IsolatedFromAbove check then raised
    # ValueError asking that value for its owner.
    from diffc.tools.diffc_opt import main

    monkeypatch.delenv("DIFFC_TRACEBACK", raising=False)
    src = tmp_path / "bad.mlir"
    src.write_text(
        '    %c1 = arith.constant 1 : i32\n'
        '  %c0 = arith.constant 0 : i32\n'
        '  %one = arith.constant 1.0 : f32\n'
        '  %half = arith.constant 0.5 : f32\n'
        '  %r:2 = scf.while (%v = %x, %k = %c0) : (f32, i32) -> (f32, i32) {\n'
        '    %more = arith.cmpf ogt, %v, %one : f32\n'
        '    scf.condition(%more) %v, %k : f32, i32\n'
        '  } do {\n'
        '  ^bb0(%w: f32, %count: i32):\n'
        '    %w2 = arith.mulf %w, %half : f32\n'
        'func.func @halvings(%x: f32) -> i32 {\n'
        '    %k2 = arith.addi %count, %c1 : i32\n'
        '    scf.yield %w2, %k2 : f32, i32\n'
        '  }\n'
        '  func.return %r#1 : i32\n'
        '}\n'
    )
    assert main([str(src)]) == 1
    head = capsys.readouterr().err.splitlines()[0]
    assert head == f"{src}:5:3: error: 'scf.while' op uses a value, which is never defined"


def test_crashing_verifier_is_an_error(tmp_path: Path, capsys, monkeypatch):
    from xdsl.dialects import arith

    from diffc.tools.diffc_opt import main

    def crash(self):
        raise ValueError("verifier bug")

    monkeypatch.delenv("DIFFC_TRACEBACK", raising=False)
    monkeypatch.setattr(arith.MulfOp, "verify_", crash)
    src = tmp_path / "ok.mlir"
    src.write_text(GOOD)
    assert main([str(src)]) == 1
    head = capsys.readouterr().err.splitlines()[0]
    assert head == f"{src}:2:3: error: 'arith.mulf' op cannot be verified (ValueError: verifier bug)"


ORDER = "func.func @f(%x: f32) -> f32 {\n  %n = arith.mulf %m, %x : f32\n  %m = arith.mulf %x, %x : f32\n  func.return %n : f32\n}\n"


def test_use_before_definition_is_located(tmp_path: Path, capsys):
    # xDSL does not check dominance: passes and the OpenCL emitter met %m before its definition
    # and failed with a KeyError / IndexError (diff-lower) on the value.
    from diffc.tools.diffc_opt import main

    src = tmp_path / "order.mlir"
    src.write_text(ORDER)
    for args in (["-t", "opencl"], ["-p", "diff-fwd,diff-rev,diff-checkpoint,diff-lower"]):
        assert main([str(src), *args]) == 1
        head, line, caret = capsys.readouterr().err.splitlines()
        assert head == f"{src}:2:3: error: 'arith.mulf' op uses %m before its definition"
        assert line.strip() == "%n = arith.mulf %m, %x : f32" and caret.strip() == "^"
    # unverified, the emitter still says where instead of failing on the value
    assert main([str(src), "--disable-verify", "-t", "opencl"]) == 1
    assert capsys.readouterr().err == (
        f"{src}:3:3: error: 'arith.mulf' defines %m after an op that uses it\n"
        "      %m = arith.mulf %x, %x : f32\n      ^\n"
    )


def test_use_outside_the_defining_region_is_located():
    # The parser refuses this; a pass can still produce it (here: an operand rewired by hand).
    from xdsl.dialects import arith
    from xdsl.utils.exceptions import VerifyException

    from diffc.interp import make_context
    from diffc.tools.diffc_opt import LocatingParser, verify_located

    text = ("func.func @f(%c: i1, %x: f32) -> f32 {\n  scf.if %c {\n    %m = arith.mulf %x, %x : f32\n  }\n"
            "  %n = arith.addf %x, %x : f32\n  func.return %n : f32\n}\n")
    module = LocatingParser(make_context(), text, "scope.mlir").parse_module()
    mul = next(o for o in module.walk() if isinstance(o, arith.MulfOp))
    add = next(o for o in module.walk() if isinstance(o, arith.AddfOp))
    add.operands[0] = mul.result
    with pytest.raises(VerifyException) as e:
        verify_located(module, {"scope.mlir": text}, after="some-pass")
    assert str(e.value).splitlines()[0] == (
        "scope.mlir:5:3: error: 'arith.addf' op uses %m outside the region that defines it "
        "(in the IR left by pass 'some-pass')")


def test_module_level_use_of_a_function_value_is_located(tmp_path: Path, capsys):
    # xDSL's parser resolves a module-level forward reference to a value a function defines
    # later; diff-lower then failed with IndexError on it.
    from diffc.tools.diffc_opt import main

    src = tmp_path / "leak.mlir"
    src.write_text("%n = arith.addf %m, %m : f32\nfunc.func @f(%x: f32) -> f32 {\n"
                   "  %m = arith.mulf %x, %x : f32\n  func.return %m : f32\n}\n")
    assert main([str(src), "-p", "diff-lower"]) == 1
    assert capsys.readouterr().err.splitlines()[0] == (
        f"{src}:1:1: error: 'arith.addf' op uses %m outside the region that defines it")


@pytest.mark.parametrize("text, line, col, message", [
    # an scf.if with a result whose then-branch lost its yield: the parser adds an empty implicit
    # scf.yield, xDSL's verifier accepts it, and diff-rev failed with IndexError
    ("func.func @f(%c: i1, %x: f32) -> f32 {\n  %r = scf.if %c -> (f32) {\n    %s = math.sin %x : f32\n"
     "  } else {\n    scf.yield %x : f32\n  }\n  func.return %r : f32\n}\n", 2, 3,
     "error: 'scf.if' op 'scf.yield' passes () where 'scf.if' expects (f32)"),
    ("func.func @f(%x: f32, %n: index) -> f32 {\n  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n"
     "  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (f32) {\n    scf.yield %n : index\n  }\n"
     "  func.return %r : f32\n}\n", 5, 5, "error: 'scf.yield' passes (index) where 'scf.for' expects (f32)"),
    # a block label defined twice after a forward use: KeyError inside xDSL's parser
    ("func.func @f(%x: f32, %c: i1) -> f32 {\n  cf.cond_br %c, ^bb1, ^bb2(%x : f32)\n^bb1:\n  cf.br ^bb2(%x : f32)\n"
     "^bb2(%r: f32):\n  func.return %r : f32\n^bb2(%q: f32):\n}\n", 7, 1, "error: block ^bb2 is defined twice"),
])
def test_structural_errors_are_located(tmp_path: Path, capsys, text, line, col, message):
    from diffc.tools.diffc_opt import main

    src = tmp_path / "bad.mlir"
    src.write_text(text)
    assert main([str(src), "-p", "diff-fwd,diff-rev"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[0] == f"{src}:{line}:{col}: {message}", err
    assert "Traceback" not in err


def test_constant_too_large_for_memory_is_located(tmp_path: Path, capsys):
    # xDSL expands a splat into a Python list: 2**32 lanes raised MemoryError, printed as "error: "
    from diffc.tools.diffc_opt import main

    src = tmp_path / "huge.mlir"
    src.write_text("func.func @f() -> vector<4294967296xf32> {\n"
                   "  %one = arith.constant dense<1.0> : vector<4294967296xf32>\n"
                   "  func.return %one : vector<4294967296xf32>\n}\n")
    assert main([str(src)]) == 1
    assert capsys.readouterr().err.splitlines()[0] == f"{src}:2:3: error: too large to build in memory"


def test_time_passes_prints_each_pass_on_stderr(opt, tmp_path: Path):
    """As mlir-opt's report: on stderr, so the IR on stdout still pipes into FileCheck."""
    src = tmp_path / "in.mlir"
    src.write_text(GOOD)
    r = opt([str(src), "--time-passes", "-p", "diff-fwd,canonicalize"])
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("Pass ")]
    assert [ln.split()[1] for ln in lines] == ["diff-fwd", "canonicalize"]
    for ln in lines:
        assert ln.endswith(" seconds") and float(ln.split()[3]) >= 0
    quiet = opt([str(src), "-p", "diff-fwd,canonicalize"])
    assert "took" not in quiet.stdout + quiet.stderr
    assert r.stdout == quiet.stdout and "func.func @square" in r.stdout


def test_help_lists_each_diffc_pass_with_what_it_does(opt):
    r = opt(["--help"])
    assert r.returncode == 0, r.stderr
    rows = {ln.split()[0]: ln.split(None, 1)[1] for ln in r.stdout.split("diffc's passes")[1].splitlines()[1:]
            if ln.startswith("  ")}
    from diffc.registry import PASSES

    assert set(PASSES) <= set(rows)
    assert rows["diff-fwd"].startswith("Replaces every diff.fwd_diff with a call to a generated forward derivative")
    assert rows["diff-rev"].startswith("Replaces each diff.bwd_diff")
    assert rows["bounds-check"].startswith("Every access to a host buffer checks its index")
    assert all(w and "(no description)" not in w and not w.startswith(("Pass(", "(")) for w in rows.values())


def test_help_lists_a_plugin_pass_given_before_it():
    r = run_opt([f"--load-pass-plugin={INPUTS / 'tag_functions_plugin.py'}", "--help"])
    assert r.returncode == 0, r.stderr
    row = next(ln for ln in r.stdout.splitlines() if ln.split()[:1] == ["tag-functions"])
    assert "A pass plugin for diffc-opt's tests" in row


def test_pass_description_prefers_an_attribute_then_the_class_then_the_module():
    from dataclasses import dataclass

    from xdsl.passes import ModulePass

    from diffc.registry import pass_description

    class Described(ModulePass):
        name = "described"
        description = "Says so itself."

        def apply(self, ctx, op):
            pass

    @dataclass(frozen=True)
    class Documented(ModulePass):
        """First sentence, e.g. this one. Second sentence."""

        name = "documented"

        def apply(self, ctx, op):
            pass

    assert pass_description(Described) == "Says so itself."
    assert pass_description(Documented) == "First sentence, e.g. this one."
