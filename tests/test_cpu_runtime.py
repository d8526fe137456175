"""diffc/runtime/cpu_runtime.py: the Intel CPU OpenCL runtime that pip installs is added to the ICD
loader's vendor folder, beside the ICDs the loader would have read, before the first OpenCL call."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from diffc.runtime import cpu_runtime


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A process state with nothing registered, a private cache, and a fake installed library."""
    monkeypatch.setattr(cpu_runtime, "_registered", False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("OCL_ICD_VENDORS", raising=False)
    lib = tmp_path / "site" / "lib" / "libintelocl.so"
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"\x7fELF")
    monkeypatch.setattr(cpu_runtime, "installed_library", lambda: lib)
    return lib


def _folder_files(folder: str) -> dict[str, str]:
    return {p.name: p.read_text().strip() for p in Path(folder).iterdir()}


def test_the_runtime_joins_the_vendor_folder_the_loader_would_read(fresh, tmp_path, monkeypatch):
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "gpu.icd").write_text("/opt/gpu/libgpu-opencl.so\n")
    (vendors / "README").write_text("not an ICD")
    monkeypatch.setenv("OPENCL_VENDOR_PATH", str(vendors))
    assert cpu_runtime.register()
    folder = os.environ["OCL_ICD_VENDORS"]
    assert folder != str(vendors)
    # the GPU's ICD stays listed; the runtime's ICD names the installed library
    assert _folder_files(folder) == {"gpu.icd": "/opt/gpu/libgpu-opencl.so",
                                     "diffc-intel-cpu.icd": str(fresh.resolve())}


def test_a_folder_the_user_chose_is_merged_and_a_second_call_changes_nothing(fresh, tmp_path, monkeypatch):
    hidden = tmp_path / "empty"
    hidden.mkdir()
    monkeypatch.setenv("OCL_ICD_VENDORS", str(hidden))  # the system's ICDs hidden, as the CI check does
    assert cpu_runtime.register()
    folder = os.environ["OCL_ICD_VENDORS"]
    assert _folder_files(folder) == {"diffc-intel-cpu.icd": str(fresh.resolve())}
    # a child process (or a second registration) finds its own ICD there and keeps the folder
    monkeypatch.setattr(cpu_runtime, "_registered", False)
    assert cpu_runtime.register()
    assert os.environ["OCL_ICD_VENDORS"] == folder


def test_one_library_named_by_the_user_is_left_alone(fresh, tmp_path, monkeypatch):
    lib = tmp_path / "libmine.so"
    lib.write_bytes(b"")
    monkeypatch.setenv("OCL_ICD_VENDORS", str(lib))
    assert not cpu_runtime.register()
    assert os.environ["OCL_ICD_VENDORS"] == str(lib)


def test_without_the_wheel_nothing_changes(monkeypatch):
    monkeypatch.setattr(cpu_runtime, "_registered", False)
    monkeypatch.setattr(cpu_runtime, "installed_library", lambda: None)
    monkeypatch.delenv("OCL_ICD_VENDORS", raising=False)
    assert not cpu_runtime.register()
    assert "OCL_ICD_VENDORS" not in os.environ


@pytest.mark.skipif(cpu_runtime.installed_library() is None, reason="intel-opencl-rt is not installed")
def test_the_installed_runtime_runs_a_kernel_with_the_system_icds_hidden(tmp_path):
    """The wheel's library loads and computes, with no system ICD to fall back on."""
    hidden = tmp_path / "empty"
    hidden.mkdir()
    script = textwrap.dedent("""
        import numpy as np
        import diffc
        from diffc.runtime import device as dv

        intel = [k for k, (p, d) in enumerate(dv._candidates("cpu")) if "Intel" in p.name]
        assert intel, [p.name for p, d in dv._candidates("cpu")]
        import os
        os.environ["DIFFC_DEVICE_INDEX"] = str(intel[0])
        m = diffc.load_module(os.environ["SRC"])
        x = diffc.Tensor.from_numpy(np.array([0.5, -1.0, 2.0], np.float32)).with_grads(zero=True)
        y = m.cube(x=x, _result="tensor").with_grads()
        y.grad.copy_from_numpy(np.ones(3, np.float32))
        m.cube.bwds(x=x, _result=y)
        print(diffc.device().platform)
        print(" ".join(f"{v:.6f}" for v in np.concatenate([y.numpy(), x.grad.numpy()])))
    """)
    src = tmp_path / "cube.slang"
    src.write_text("[Differentiable] float cube(float x) { return x * x * x; }\n")
    env = {**os.environ, "OCL_ICD_VENDORS": str(hidden), "DIFFC_DEVICE": "cpu", "SRC": str(src),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    platform, values = run.stdout.strip().splitlines()[-2:]
    assert "Intel" in platform
    # x^3 and 3 x^2 at 0.5, -1, 2
    assert [float(v) for v in values.split()] == pytest.approx([0.125, -1.0, 8.0, 0.75, 3.0, 12.0])
