"""The kernel pipeline (diffc/pipeline.py KERNEL_PIPELINE, run by diffc.compiler.lower_kernels):
one definition, one settings object that keys the caches, and `diffc compile` showing what a
dispatch builds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from diffc.cli import main
from diffc.pipeline import CALL_KERNEL_PIPELINE, KERNEL_PIPELINE, KernelSettings, environment_settings

MLP = Path(__file__).resolve().parent.parent / "examples" / "mlp" / "mlp.slang"


def kernel_text(source: str, name: str) -> str:
    """The OpenCL C of kernel `name` (its signature to its closing brace at column 0)."""
    m = re.search(rf"^__kernel [^\n]*\bvoid {re.escape(name)}\(.*?^}}$", source, re.M | re.S)
    assert m, f"no kernel {name}"
    return m.group(0)


def compiled(capsys, *args: str) -> str:
    assert main(["compile", str(MLP), "--entry", "learnGradient", "--emit", "opencl", *args]) == 0
    return capsys.readouterr().out


def test_compile_shows_the_accumulated_kernels(capsys):
    """Without flags: accumulate-gradients' kernel (a grid-stride loop over the entry point's
    virtual groups, partial sums per group) and its finish kernel are in the output."""
    out = compiled(capsys)
    accum = kernel_text(out, "learnGradient__accum")
    assert "long diffc_groups, __global float* diffc_partials, int diffc_deterministic" in accum
    assert "reqd_work_group_size(64, 1, 1)" in accum  # (no device: a GPU's group of 64)
    assert "diffc_partials" in kernel_text(out, "learnGradient__accum_finish")
    assert "diffc_partials" not in compiled(capsys, "--set", "accumulate=0")


def test_compile_for_the_device_is_what_dispatch_builds(capsys):
    """`--device cpu` builds for the device a dispatch runs on here: learnGradient's kernels are
    the program's, character for character (dispatch builds adjustParameters's besides)."""
    import diffc
    from diffc.runtime.dispatch import entry_program

    out = compiled(capsys, "--device", "cpu")
    prog = entry_program(diffc.load_module(MLP))
    acc = prog.accumulated["learnGradient"]
    names = [prog.kernels["learnGradient"].c_name, prog.kernels["learnGradient"].inbounds,
             acc.c_name, acc.inbounds, acc.finish_c_name, acc.finish_inbounds]
    assert "learnGradient__accum" in names and None not in names
    for name in names:
        assert kernel_text(out, name) == kernel_text(prog.source, name), name


def test_compile_rejects_an_unknown_setting(capsys):
    assert main(["compile", str(MLP), "--set", "bounds=0"]) == 1
    err = capsys.readouterr().err
    assert "--set bounds=0: expected FIELD=VALUE with FIELD one of" in err and "bounds_check" in err


def test_every_step_names_a_registered_pass_and_a_setting():
    from diffc.registry import PASSES

    for step in (*KERNEL_PIPELINE, *CALL_KERNEL_PIPELINE):
        cls = PASSES[step.name]()
        assert cls.name == step.name and cls.__name__ == step.where.rsplit(".", 1)[1]
        assert step.when is None or isinstance(getattr(KernelSettings(), step.when), bool)


def test_settings_key_the_module_cache():
    from diffc.runtime import module_cache

    a, b = KernelSettings(), KernelSettings().changed(bounds_check=False)
    assert module_cache.kernel_key("k", "entry points", a) == module_cache.kernel_key("k", "entry points", KernelSettings())
    assert module_cache.kernel_key("k", "entry points", a) != module_cache.kernel_key("k", "entry points", b)
    with pytest.raises(TypeError):
        a.changed(no_such_setting=1)


def test_environment_variables_set_settings():
    got = environment_settings({"DIFFC_BOUNDS_CHECK": "0", "DIFFC_ACCUM_WORK_GROUP": "8", "DIFFC_CHECK": "1",
                                "DIFFC_ACCUMULATE": ""})
    assert got == {"bounds_check": False, "accumulate_work_group": 8, "sanitize": True}


def test_dispatch_rebuilds_under_other_settings(monkeypatch):
    """A setting changed for the process (device.SETTINGS, as benches do) builds other kernels."""
    from diffc.runtime.device import SETTINGS
    from diffc.runtime.dispatch import entry_program
    from diffc.runtime.module import load_module_from_string

    src = MLP.read_text()
    assert "learnGradient__accum" in entry_program(load_module_from_string(src, "mlp.slang")).source
    monkeypatch.setitem(SETTINGS, "accumulate", False)
    assert "learnGradient__accum" not in entry_program(load_module_from_string(src, "mlp.slang")).source
