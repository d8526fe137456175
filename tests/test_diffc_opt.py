"""diffc-opt as a user meets it: bad input gives a located message, exit code 1, no Python
traceback, and no output file; good input round-trips; stock xdsl-opt reads diff IR."""

from __future__ import annotations

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
def test_bad_ir_is_located(tmp_path: Path, text: str, line: int, col: int, message: str):
    src = tmp_path / "bad.mlir"
    src.write_text(text)
    r = run_opt([str(src)])
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


def test_stdin_errors_are_located_as_stdin():
    r = run_opt([], stdin=SYNTAX)
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
def test_pipeline_errors(tmp_path: Path, args: list[str], message: str):
    src = tmp_path / "good.mlir"
    src.write_text(GOOD)
    r = run_opt([str(src), *args])
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
def test_failed_run_leaves_no_output_file(tmp_path: Path, text: str, args: list[str]):
    src = tmp_path / "in.mlir"
    src.write_text(text)
    out = tmp_path / "out.mlir"
    r = run_opt([str(src), "-o", str(out), *args])
    assert_clean_failure(r)
    assert not out.exists()


def test_failed_run_keeps_an_existing_output_file(tmp_path: Path):
    src = tmp_path / "in.mlir"
    src.write_text(VERIFY)
    out = tmp_path / "out.mlir"
    out.write_text("previous contents\n")
    r = run_opt([str(src), "-o", str(out)])
    assert_clean_failure(r)
    assert out.read_text() == "previous contents\n"


def test_successful_run_writes_output_file(tmp_path: Path):
    src = tmp_path / "in.mlir"
    src.write_text(GOOD)
    out = tmp_path / "out.mlir"
    r = run_opt([str(src), "-o", str(out), "--pass-pipeline=builtin.module(canonicalize,cse)"])
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    text = out.read_text()
    assert "%gx, %gy = diff.bwd_diff @square(%x, %y, %one) : (f32, f32, f32) -> (f32, f32)" in text
    # The written file reads back to the same text.
    again = run_opt([str(out)])
    assert again.returncode == 0 and again.stdout == text


def test_verify_diagnostics_exit_zero_and_reports_every_chunk(tmp_path: Path):
    src = tmp_path / "in.mlir"
    src.write_text(VERIFY + "// -----\n" + BAD_TYPE + "// -----\n" + GOOD)
    r = run_opt([str(src), "--split-input-file", "--verify-diagnostics"])
    assert r.returncode == 0, r.stderr
    assert f"{src}:6:3: error: 'diff.bwd_diff' of @square: result 1" in r.stdout
    # The second chunk starts after line 9 of the file: its line 1 is line 10.
    assert f"{src}:10:28: error: !diff.pair element type must be differentiable" in r.stdout
    assert "diff.bwd_diff @square(%x, %y, %one)" in r.stdout


def test_generic_and_custom_forms_round_trip(tmp_path: Path):
    src = tmp_path / "in.mlir"
    src.write_text(GOOD)
    custom = run_opt([str(src)])
    generic = run_opt([str(src), "--print-op-generic"])
    assert custom.returncode == 0 and generic.returncode == 0
    assert '"diff.bwd_diff"(%x, %y, %one) <{callee = @square}> : (f32, f32, f32) -> (f32, f32)' in generic.stdout
    assert run_opt([], stdin=generic.stdout).stdout == custom.stdout
    assert run_opt(["--print-op-generic"], stdin=custom.stdout).stdout == generic.stdout


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
