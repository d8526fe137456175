"""A pass's error about an op is a located diagnostic (`file:line:col: error: ...`, the source
line, a caret) through every door: diffc-opt, `diffc compile` / `diffc run`, load_module, and
for IR the front end built from a .slang file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FileLineColLoc, FloatAttr, IntAttr, ModuleOp, StringAttr, f32
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import PassFailedException

import diffc
from diffc.diagnostics import PassError, SourceLocation, pass_error, render_error
from diffc.runtime.errors import RuntimeDiffcError
from diffc.runtime.module import load_module_from_string

ROOT = Path(__file__).resolve().parents[1]

# A differentiable function that stores a derivative-carrying value into memory: diff-fwd and
# diff-rev both refuse the store. @main makes it a program `diffc compile` accepts as far as
# the passes.
STORE = """\
func.func @f(%x: f32) -> f32 attributes {diff.differentiable} {
  %c0 = arith.constant 0 : index
  %m = memref.alloca() : memref<1xf32>
  %y = math.sin %x : f32
  memref.store %y, %m[%c0] : memref<1xf32>
  func.return %y : f32
}
func.func @main() {
  %x = arith.constant 1.0 : f32
  %d = arith.constant 1.0 : f32
  %g = diff.bwd_diff @f(%x, %d) : (f32, f32) -> f32
  func.return
}
"""
STORE_LINE = "  memref.store %y, %m[%c0] : memref<1xf32>"
# The same @f under forward mode.
STORE_FWD = STORE.split("func.func @main")[0] + """\
func.func @main(%x: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @f(%x) : (!diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
"""

# The front end takes any system-value semantic; lower-entry-points knows three.
GROUP_INDEX = """\
RWStructuredBuffer<float> outputBuffer;

[shader("compute")]
[numthreads(4, 1, 1)]
void computeMain(uint3 tid : SV_GroupIndex)
{
    outputBuffer[tid.x] = 1.0;
}
"""
ENTRY_LINE = "void computeMain(uint3 tid : SV_GroupIndex)"


def where(text: str, line_text: str, word: str) -> tuple[int, int]:
    """1-based line and column of `word` on the line `line_text` of `text`."""
    line = text.split("\n").index(line_text)
    return line + 1, line_text.index(word) + 1


def assert_located(err: str, file: str, text: str, line_text: str, word: str, *needles: str) -> None:
    """`err` is one diagnostic: header at `word` of `line_text`, the line, a caret under `word`."""
    line, col = where(text, line_text, word)
    lines = err.rstrip("\n").split("\n")
    assert len(lines) == 3, err
    assert lines[0].startswith(f"{file}:{line}:{col}: error: "), err
    for n in needles:
        assert n in lines[0], err
    assert lines[1] == "    " + line_text
    assert lines[2] == "    " + " " * (col - 1) + "^"
    assert "Traceback" not in err


# -- the helper --------------------------------------------------------------------------------


def _located_func() -> tuple[func.FuncOp, arith.ConstantOp]:
    inner = arith.ConstantOp(FloatAttr(1.0, f32))
    fn = func.FuncOp("g", ((), ()), Region(Block([inner, func.ReturnOp()])))
    fn.location = FileLineColLoc(StringAttr("k.slang"), IntAttr(4), IntAttr(6))
    ModuleOp([fn])
    return fn, inner


def test_pass_error_is_a_pass_failed_exception_at_the_op():
    fn, inner = _located_func()
    inner.location = FileLineColLoc(StringAttr("k.slang"), IntAttr(5), IntAttr(9))
    e = pass_error(inner, "in function @g: no rule")
    assert isinstance(e, PassFailedException)
    assert e.location == SourceLocation("k.slang", 5, 9)
    assert e.detail == "in function @g: no rule"
    assert str(e) == "k.slang:5:9: in function @g: no rule"  # what xDSL's own driver prints


def test_pass_error_on_an_op_a_pass_built_points_at_the_enclosing_op():
    fn, inner = _located_func()  # inner has no location of its own
    assert pass_error(inner, "x").location == SourceLocation("k.slang", 4, 6)


def test_an_error_without_location_keeps_the_plain_form():
    e = pass_error(None, "in function @g: no rule")
    assert e.location is None and str(e) == "in function @g: no rule"
    assert render_error(e) == "error: in function @g: no rule"
    assert render_error(PassFailedException("plain")) == "error: plain"


def test_render_error_shows_the_source_line_from_the_given_text():
    text = "a\n  bc\n"
    e = PassError("'x.y' is wrong", SourceLocation("mem.mlir", 2, 3))
    assert render_error(e, {"mem.mlir": text}, prefix="pass 'p' failed: ") == (
        "mem.mlir:2:3: error: pass 'p' failed: 'x.y' is wrong\n      bc\n      ^"
    )
    # a file whose text is unknown and not on disk: the header alone
    assert render_error(e) == "mem.mlir:2:3: error: 'x.y' is wrong"


# -- diffc-opt ---------------------------------------------------------------------------------


def _diffc_opt(argv, capsys) -> tuple[int, str]:
    from diffc.tools.diffc_opt import main

    rc = main(argv)
    return rc, capsys.readouterr().err


@pytest.mark.parametrize(
    "pass_name, needle",
    [
        ("diff-fwd", "'memref.store' has no derivative rule, but its operand #0 carries a derivative"),
        ("diff-rev", "'memref.store' has no derivative rule but receives a derivative-carrying value"),
    ],
)
def test_diffc_opt_locates_a_differentiation_error(tmp_path, capsys, pass_name, needle):
    text = STORE_FWD if pass_name == "diff-fwd" else STORE
    f = tmp_path / "store.mlir"
    f.write_text(text)
    rc, err = _diffc_opt([str(f), "-p", pass_name], capsys)
    assert rc == 1
    assert_located(err, str(f), text, STORE_LINE, "memref", f"pass '{pass_name}' failed: in function @f: " + needle)


def test_diffc_opt_plugin_pass_can_raise_located_errors(tmp_path, capsys):
    plugin = tmp_path / "refuse_sin.py"
    plugin.write_text(
        "from dataclasses import dataclass\n"
        "from xdsl.passes import ModulePass\n"
        "from diffc.diagnostics import pass_error\n\n"
        "@dataclass(frozen=True)\n"
        "class RefuseSin(ModulePass):\n"
        "    name = 'refuse-sin'\n\n"
        "    def apply(self, ctx, op):\n"
        "        for o in op.walk():\n"
        "            if o.name == 'math.sin':\n"
        "                raise pass_error(o, 'no sines here')\n"
    )
    f = tmp_path / "store.mlir"
    f.write_text(STORE)
    rc, err = _diffc_opt([str(f), f"--load-pass-plugin={plugin}", "-p", "refuse-sin"], capsys)
    assert rc == 1
    assert_located(err, str(f), STORE, "  %y = math.sin %x : f32", "%y", "pass 'refuse-sin' failed: no sines here")


def test_diffc_opt_locates_a_pass_error_in_a_slang_file(tmp_path):
    f = tmp_path / "group_index.slang"
    f.write_text(GROUP_INDEX)
    r = subprocess.run([sys.executable, "-m", "diffc.tools.diffc_opt", str(f), "-p", "lower-entry-points"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1
    assert_located(r.stderr, str(f), GROUP_INDEX, ENTRY_LINE, "computeMain",
                   "@computeMain: semantic SV_GroupIndex is not supported")


# -- diffc compile / run -----------------------------------------------------------------------


def _diffc(argv, capsys) -> tuple[int, str]:
    from diffc import cli

    rc = cli.main(argv)
    return rc, capsys.readouterr().err


@pytest.mark.parametrize("command", [["compile"], ["compile", "--emit", "lowered"], ["run"]])
def test_diffc_command_locates_a_pass_error_in_mlir(tmp_path, capsys, command):
    f = tmp_path / "store.mlir"
    f.write_text(STORE)
    rc, err = _diffc([command[0], str(f), *command[1:]], capsys)
    assert rc == 1
    assert_located(err, str(f), STORE, STORE_LINE, "memref",
                   "pass 'diff-rev' failed: in function @f: 'memref.store' has no derivative rule")


def test_diffc_compile_locates_a_pass_error_in_a_slang_file(tmp_path):
    """The real command, as a user runs it: exit 1, the diagnostic, no traceback."""
    f = tmp_path / "group_index.slang"
    f.write_text(GROUP_INDEX)
    r = subprocess.run([sys.executable, "-m", "diffc.cli", "compile", str(f)], capture_output=True, text=True,
                       env={**os.environ, "DIFFC_DEVICE": "cpu"}, timeout=300)
    assert r.returncode == 1 and r.stdout == ""
    assert_located(r.stderr, str(f), GROUP_INDEX, ENTRY_LINE, "computeMain",
                   "pass 'lower-entry-points' failed:", "semantic SV_GroupIndex is not supported")


def test_diffc_run_locates_a_pass_error_in_a_slang_file(tmp_path, capsys):
    f = tmp_path / "group_index.slang"
    f.write_text(GROUP_INDEX)
    rc, err = _diffc(["run", str(f)], capsys)
    assert rc == 1
    assert_located(err, str(f), GROUP_INDEX, ENTRY_LINE, "computeMain", "semantic SV_GroupIndex is not supported")


# -- load_module -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mode, needle",
    [
        ("fwds", "fwds of @f: in function @f: 'memref.store' has no derivative rule, but its operand #0"),
        ("bwds", "bwds of @f: in function @f: 'memref.store' has no derivative rule but receives"),
    ],
)
def test_load_module_call_locates_a_pass_error(tmp_path, mode, needle):
    f = tmp_path / "store.mlir"
    f.write_text(STORE)
    m = diffc.load_module(f)
    x = diffc.Tensor.from_numpy(np.ones(3, np.float32)).with_grads()
    with pytest.raises(RuntimeDiffcError) as e:
        if mode == "fwds":
            m.f.fwds(x)
        else:
            m.f.bwds(x, _result=diffc.Tensor.from_numpy(np.ones(3, np.float32)).with_grads())
    assert_located(str(e.value), str(f), STORE, STORE_LINE, "memref", needle)


def test_load_module_from_string_shows_the_line_of_the_string():
    m = load_module_from_string(STORE, "inline.mlir")  # no such file: the text is kept
    x = diffc.Tensor.from_numpy(np.ones(2, np.float32)).with_grads()
    with pytest.raises(RuntimeDiffcError) as e:
        m.f.fwds(x)
    assert_located(str(e.value), "inline.mlir", STORE, STORE_LINE, "memref", "in function @f:")


def test_load_module_of_slang_locates_a_pass_error(tmp_path):
    f = tmp_path / "group_index.slang"
    f.write_text(GROUP_INDEX)
    m = diffc.load_module(f)
    with pytest.raises(RuntimeDiffcError) as e:
        m.computeMain.dispatch(thread_count=4, outputBuffer=diffc.Tensor.zeros(4))
    assert_located(str(e.value), str(f), GROUP_INDEX, ENTRY_LINE, "computeMain",
                   "lowering the compute entry points failed:", "semantic SV_GroupIndex is not supported")


def test_a_rule_without_a_forward_derivative_is_a_located_error(tmp_path, capsys, monkeypatch):
    """A rule (a plugin's, say) with a reverse-mode hook alone, met by diff-fwd."""
    from xdsl.dialects import math

    from diffc.rules import RULES, Rule, lookup_rule

    assert lookup_rule(math.SinOp) is not None  # the built-in rules are loaded
    monkeypatch.setitem(RULES, math.SinOp, Rule(None, vjp=lambda b, op, adjoint: [adjoint]))
    text = STORE_FWD.replace(STORE_LINE + "\n", "")
    f = tmp_path / "sin.mlir"
    f.write_text(text)
    rc, err = _diffc_opt([str(f), "-p", "diff-fwd"], capsys)
    assert rc == 1
    assert_located(err, str(f), text, "  %y = math.sin %x : f32", "%y",
                   "pass 'diff-fwd' failed: in function @f: 'math.sin': its derivative rule has no forward-mode derivative")


def test_a_rule_without_a_reverse_derivative_is_a_located_error(tmp_path, capsys, monkeypatch):
    from xdsl.dialects import math

    from diffc.rules import RULES, Rule, lookup_rule

    assert lookup_rule(math.SinOp) is not None
    monkeypatch.setitem(RULES, math.SinOp, Rule(None, jvp=lambda b, op, tangents: tangents[0]))
    text = STORE.replace(STORE_LINE + "\n", "")
    f = tmp_path / "sin.mlir"
    f.write_text(text)
    rc, err = _diffc_opt([str(f), "-p", "diff-rev"], capsys)
    assert rc == 1
    assert_located(err, str(f), text, "  %y = math.sin %x : f32", "%y",
                   "pass 'diff-rev' failed: in function @f: 'math.sin': its derivative rule has no reverse-mode derivative")
