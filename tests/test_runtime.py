"""Device choice, the program cache and build errors."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import diffc
from diffc.runtime import program
from diffc.runtime.errors import BuildError


def test_device_describes_itself():
    d = diffc.device()
    assert d is diffc.device()  # chosen once
    assert d.kind in ("gpu", "cpu", "other")
    assert d.name and d.platform
    r = repr(d)
    assert d.name in r and d.platform in r and d.kind in r
    assert d.atomics in ("float_ext", "ptx", "cmpxchg")


def test_bad_device_env_is_an_error():
    code = "import diffc\ntry:\n    diffc.device()\nexcept diffc.runtime.errors.DeviceError as e:\n    print('ERR', e)\n"
    env = dict(os.environ, DIFFC_DEVICE="tpu")
    out = subprocess.run([sys.executable, "-c", "import diffc.runtime.errors\n" + code], env=env,
                         capture_output=True, text=True, timeout=120)
    assert "ERR" in out.stdout and "DIFFC_DEVICE" in out.stdout


def test_program_cache_memory_and_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(program, "keeps_binaries", lambda dev: True)  # the disk path, on PoCL too
    src = "__kernel void add_one(__global float *a) { a[get_global_id(0)] += 1.0f; }\n// %d" % os.getpid()
    before = dict(program.stats)
    p1 = program.build_program(src)
    assert program.stats["builds"] == before["builds"] + 1
    files = list((tmp_path / "programs").glob("*.bin"))
    assert len(files) == 1 and files[0].stat().st_size > 0
    assert not list((tmp_path / "programs").glob("*.tmp"))  # written atomically
    assert program.build_program(src) is p1
    program.clear_memory_cache()
    p2 = program.build_program(src)
    assert program.stats["disk_hits"] == before["disk_hits"] + 1
    # the binary from disk runs
    import pyopencl as cl

    d = diffc.device()
    a = np.zeros(4, np.float32)
    buf = cl.Buffer(d.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)
    p2.add_one(d.queue, (4,), None, buf)
    cl.enqueue_copy(d.queue, a, buf)
    np.testing.assert_array_equal(a, np.ones(4))
    # another key for other options
    program.build_program(src, ("-cl-fast-relaxed-math",))
    assert len(list((tmp_path / "programs").glob("*.bin"))) == 2


def test_pocl_programs_leave_their_binaries_to_pocl(tmp_path, monkeypatch):
    # PoCL compiles a kernel when it first runs: asking for the binary would compile them all
    monkeypatch.setenv("DIFFC_CACHE_DIR", str(tmp_path))
    d = diffc.device()
    assert program.keeps_binaries(d) == (not d.is_pocl)
    monkeypatch.setattr(program, "keeps_binaries", lambda dev: False)
    src = "__kernel void k3(__global int *a) { a[0] = 3; }\n// lazy %d" % os.getpid()
    builds = program.stats["builds"]
    program.build_program(src)
    assert program.stats["builds"] == builds + 1
    assert not (tmp_path / "programs").exists()


def test_damaged_cache_entry_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(program, "keeps_binaries", lambda dev: True)
    src = "__kernel void k2(__global int *a) { a[0] = 7; }\n// damaged %d" % os.getpid()
    key = program.program_key(src, (), diffc.device())
    (tmp_path / "programs").mkdir()
    (tmp_path / "programs" / f"{key}.bin").write_bytes(b"not a binary")
    builds = program.stats["builds"]
    program.build_program(src)
    assert program.stats["builds"] == builds + 1


def test_build_error_shows_log_and_source_line(tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFC_CACHE_DIR", str(tmp_path))
    src = "__kernel void broken(__global float *a) {\n    int ok = 1;\n    a[0] = undefined_name;\n}\n"
    with pytest.raises(BuildError) as info:
        program.build_program(src)
    text = str(info.value)
    assert "undefined_name" in info.value.log
    assert "a[0] = undefined_name;" in text  # the generated line the log points at
    assert ">" in text and "3 |" in text
    assert isinstance(info.value, diffc.runtime.errors.RuntimeDiffcError)


def test_lazy_exports():
    import diffc as d

    assert d.__version__
    assert callable(d.load_module) and d.Tensor.__name__ == "Tensor" and callable(d.device)
    with pytest.raises(AttributeError):
        d.no_such_thing


@pytest.mark.parametrize("log", [
    # the build logs of NVIDIA's OpenCL and of two PoCL versions for the same mistake
    "<kernel>:2:10: error: use of undeclared identifier 'undeclared_name'\n  x[0] = undeclared_name;\n         ^",
    "error: /root/.cache/pocl/kcache/tempfile_5JCIhj.cl:2:10: use of undeclared identifier 'undeclared_name'",
    "<source>:2:10: error: use of undeclared identifier 'undeclared_name'",
])
def test_build_error_marks_the_line_every_compiler_names(log):
    source = "__kernel void k(__global float* x) {\n  x[0] = undeclared_name;\n}\n"
    lines = program.format_build_error(log, source).splitlines()
    marked = [ln for ln in lines if ln.lstrip().startswith(">")]
    assert marked == ["  >    2 |   x[0] = undeclared_name;"]
    assert lines[lines.index(marked[0]) + 1] == "         |          ^"
