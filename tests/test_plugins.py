"""Plugins: pass files given to --load-pass-plugin, and installed packages that declare an entry
point in the group `diffc.plugins` (a fake distribution written into tmp_path and put on
PYTHONPATH of a diffc-opt subprocess)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_opt

from diffc.diagnostics import DiffcError
from diffc.tools.diffc_opt import load_pass_plugin, pipeline_from_mlir_syntax

INPUTS = Path(__file__).parent / "filecheck" / "Inputs"

PLUGIN_MODULE = '''
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, UnitAttr, i64
from xdsl.dialects.func import FuncOp
from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def
from xdsl.passes import ModulePass


@irdl_op_definition
class CubeOp(IRDLOperation):
    name = "fake.cube"
    x = operand_def()
    r = result_def()


FakeDialect = Dialect("fake", [CubeOp], [])


@dataclass(frozen=True)
class CountFunctions(ModulePass):
    name = "fake-count-functions"

    label: str = "count"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from diffc.rules import lookup_rule

        n = sum(isinstance(f, FuncOp) for f in op.walk())
        op.attributes["fake." + self.label] = IntegerAttr(n, i64)
        if lookup_rule(CubeOp) is not None:
            op.attributes["fake.has_rule"] = UnitAttr()


def cube_partials(b, op):
    return [None]


def register(registry):
    registry.add_dialect("fake", lambda: FakeDialect)
    registry.add_pass(CountFunctions)
    registry.add_rule(CubeOp, cube_partials)
'''

BROKEN_MODULE = '''
def register(registry):
    raise RuntimeError("cannot register on purpose")
'''


def write_distribution(root: Path, dist: str, module: str, source: str, target: str) -> None:
    """A minimal installed distribution: NAME-0.1.dist-info with METADATA and entry_points.txt,
    next to the module it names."""
    (root / f"{module}.py").write_text(source)
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[diffc.plugins]\n{dist} = {module}:{target}\n")


IR = """
func.func @f(%x: f32) -> f32 {
  %y = "fake.cube"(%x) : (f32) -> f32
  func.return %y : f32
}
func.func @g() {
  func.return
}
"""


def test_entry_point_plugin_adds_pass_dialect_and_rule(tmp_path: Path):
    write_distribution(tmp_path, "fakeplug", "fakeplug_mod", PLUGIN_MODULE, "register")
    src = tmp_path / "in.mlir"
    src.write_text(IR)
    r = run_opt([str(src), "--pass-pipeline=builtin.module(fake-count-functions{label=funcs})"], pythonpath=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "fake.funcs = 2 : i64" in r.stdout
    assert "fake.has_rule" in r.stdout
    # The plugin's dialect is registered: the op reads without --allow-unregistered-dialect.
    assert '%y = "fake.cube"(%x) : (f32) -> f32' in r.stdout


def test_without_the_distribution_neither_pass_nor_dialect_exist(tmp_path: Path):
    src = tmp_path / "in.mlir"
    src.write_text(IR)
    r = run_opt([str(src), "-p", "fake-count-functions"])
    assert r.returncode == 1
    assert "unknown pass 'fake-count-functions'" in r.stderr
    r = run_opt([str(src)])
    assert r.returncode == 1
    assert "fake.cube" in r.stderr
    assert "Traceback" not in r.stderr


def test_broken_entry_point_plugin_is_named(tmp_path: Path):
    write_distribution(tmp_path, "brokenplug", "brokenplug_mod", BROKEN_MODULE, "register")
    r = run_opt(["-p", "cse"], pythonpath=tmp_path, stdin="func.func @f() {\n  func.return\n}\n")
    assert r.returncode == 1
    assert "plugin 'brokenplug' (brokenplug_mod:register, entry point group diffc.plugins) failed to load" in r.stderr
    assert "RuntimeError: cannot register on purpose" in r.stderr
    assert "Traceback" not in r.stderr


def test_entry_point_naming_a_missing_object(tmp_path: Path):
    write_distribution(tmp_path, "typoplug", "typoplug_mod", PLUGIN_MODULE, "regsiter")
    r = run_opt(["-p", "cse"], pythonpath=tmp_path, stdin="func.func @f() {\n  func.return\n}\n")
    assert r.returncode == 1
    assert "plugin 'typoplug'" in r.stderr and "AttributeError" in r.stderr
    assert "Traceback" not in r.stderr


def test_load_pass_plugin_finds_only_module_passes():
    passes = load_pass_plugin(str(INPUTS / "tag_functions_plugin.py"))
    assert [p.name for p in passes] == ["tag-functions"]
    two = load_pass_plugin(str(INPUTS / "rename_functions_plugin.py"))
    assert [p.name for p in two] == ["rename-functions"]


@pytest.mark.parametrize(
    "name, message",
    [
        ("no_such_plugin.py", "no such file"),
        ("empty_plugin.py", "defines no ModulePass subclass"),
        ("broken_plugin.py", "RuntimeError: this plugin is broken on purpose"),
    ],
)
def test_load_pass_plugin_errors(name: str, message: str):
    with pytest.raises(DiffcError, match=message):
        load_pass_plugin(str(INPUTS / name))


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("builtin.module(cse)", "cse"),
        ("builtin.module()", ""),
        (" builtin.module( canonicalize , cse ) ", "canonicalize,cse"),
        ("builtin.module(a{x=1 y=2},b)", "a{x=1 y=2},b"),
        ('builtin.module(tag{t="a (b)"})', 'tag{t="a (b)"}'),
    ],
)
def test_pipeline_from_mlir_syntax(spec: str, expected: str):
    assert pipeline_from_mlir_syntax(spec) == expected


@pytest.mark.parametrize(
    "spec, message",
    [
        ("builtin.module(func.func(cse))", "nested pipelines"),
        ("builtin.module(cse,gpu.module(cse))", "nested pipelines"),
        ("func.func(cse)", "must have the form"),
        ("cse", "must have the form"),
    ],
)
def test_pipeline_from_mlir_syntax_refuses(spec: str, message: str):
    with pytest.raises(DiffcError, match=message):
        pipeline_from_mlir_syntax(spec)


REGISTER_PLUGIN = '''
from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def


@irdl_op_definition
class CubeOp(IRDLOperation):
    name = "cube.cube"
    x = operand_def()
    r = result_def()


def register(registry):
    registry.add_dialect("cube", lambda: Dialect("cube", [CubeOp], []))
    registry.add_rule(CubeOp, lambda b, op: [b.mul(3.0, b.mul(op.x, op.x))])
'''

CUBE_IR = """func.func @f(%x: f32) -> f32 attributes {diff.differentiable} {
  %y = "cube.cube"(%x) : (f32) -> f32
  func.return %y : f32
}
func.func @main(%x: f32, %d: f32) -> f32 {
  %g = diff.bwd_diff @f(%x, %d) : (f32, f32) -> f32
  func.return %g : f32
}
"""


def test_pass_plugin_file_can_define_ops_and_rules(tmp_path, capsys, monkeypatch):
    """A --load-pass-plugin file with register(registry) and no pass: its dialect parses and its
    rule differentiates its op (3 x^2 * d_out), as an installed plugin's would."""
    import diffc.ad.registry  # noqa: F401  # every built-in rule registered before the snapshot below
    from diffc import registry
    from diffc.ad.interface import RULES
    from diffc.tools.diffc_opt import main

    monkeypatch.setattr(registry, "DIALECTS", dict(registry.DIALECTS))
    monkeypatch.setattr("diffc.ad.interface.RULES", RULES)  # (the same dict; entries restored below)
    before = dict(RULES)
    plugin = tmp_path / "cube_plugin.py"
    plugin.write_text(REGISTER_PLUGIN)
    src = tmp_path / "cube.mlir"
    src.write_text(CUBE_IR)
    try:
        rc = main([str(src), f"--load-pass-plugin={plugin}", "-p", "diff-rev,diff-checkpoint"])
    finally:
        RULES.clear()
        RULES.update(before)
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert "func.func @f_bwd" in out.out
    assert "3.000000e+00" in out.out and "arith.mulf %x, %x" in out.out


@pytest.mark.parametrize(
    "name, data, message",
    [
        ("notes.mlir", b"func.func @f() {\n  func.return\n}\n", r"notes\.mlir:1:\d+: error: .*'.*notes\.mlir' is not a Python file"),
        ("blob.so", b"\x7fELF\x00\x01\x02", r"'.*blob\.so' is not a Python file"),
        ("typo.py", b"from xdsl.passes import ModulePass\nclass P(ModulePass:\n", r"typo\.py:2:\d+: error: .*is not valid Python"),
    ],
)
def test_load_pass_plugin_that_is_not_python(tmp_path: Path, name: str, data: bytes, message: str):
    """A file that is not Python source is named as such (located where Python stopped), through
    diffc-opt as a user runs it: exit 1, no traceback."""
    (tmp_path / name).write_bytes(data)
    with pytest.raises(DiffcError, match=message):
        load_pass_plugin(str(tmp_path / name))
    r = run_opt([f"--load-pass-plugin={tmp_path / name}"], stdin="func.func @f() {\n  func.return\n}\n")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "--load-pass-plugin" in r.stderr
