"""The module cache (diffc/runtime/module_cache.py): a module loaded again unchanged comes from the
cache, in this process and in another, without running the front end; a source change, a damaged
entry or DIFFC_MODULE_CACHE=0 do not read stale results. Timings are in bench/bench_module_load.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import diffc
from diffc.runtime import module_cache

SRC = """
[Differentiable]
float polynomial(float a, float b, float c, float x) { return a * x * x + b * x + c; }
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("DIFFC_CACHE_DIR", str(folder))
    monkeypatch.delenv("DIFFC_MODULE_CACHE", raising=False)
    return folder


def hits():
    return dict(module_cache.stats)


def delta(before, key):
    return module_cache.stats[key] - before[key]


def check_polynomial(m):
    x = diffc.Tensor.from_numpy(np.array([1, 2, 3], np.float32)).with_grads(zero=True)
    y = m.polynomial(a=2.0, b=8.0, c=-1.0, x=x).with_grads()
    np.testing.assert_array_equal(y.to_numpy(), 2 * np.array([1, 2, 3]) ** 2 + 8 * np.array([1, 2, 3]) - 1)
    y.grad.copy_from_numpy(np.ones(3, np.float32))
    m.polynomial.bwds(a=2.0, b=8.0, c=-1.0, x=x, _result=y)
    np.testing.assert_array_equal(x.grad.to_numpy(), 4 * np.array([1, 2, 3]) + 8)


def test_second_load_skips_the_front_end(cache, tmp_path):
    path = tmp_path / "poly.slang"
    path.write_text(SRC)
    before = hits()
    first = diffc.load_module(path)
    assert delta(before, "misses") == 1 and first._ir is not None
    check_polynomial(first)  # builds the call and bwds kernels, stores their OpenCL C
    assert list((cache / "modules").glob("*.sig")) and len(list((cache / "modules").glob("*.cl"))) == 2

    before = hits()
    second = diffc.load_module(path)
    assert delta(before, "hits") == 1
    assert second._ir is None  # the IR is not made: signatures came from the cache
    assert second.polynomial.params == ["a", "b", "c", "x"] and second.polynomial.differentiable
    check_polynomial(second)
    assert delta(before, "kernel_hits") == 2 and second._ir is None  # kernels' OpenCL C cached too
    assert second.ir is not None and "polynomial" in str(second.ir)  # made from the source on demand


def test_a_source_change_is_a_new_entry(cache, tmp_path):
    path = tmp_path / "poly.slang"
    path.write_text(SRC)
    diffc.load_module(path)
    path.write_text(SRC + "\n[Differentiable]\nfloat twice(float x) { return 2.0 * x; }\n")
    before = hits()
    m = diffc.load_module(path)
    assert delta(before, "misses") == 1 and "twice" in dir(m)
    np.testing.assert_array_equal(m.twice(x=np.array([1.5, -2], np.float32), _result="numpy"), [3, -4])
    path.write_text(SRC)  # back to the first text: its entry is still good
    before = hits()
    assert "twice" not in dir(diffc.load_module(path)) and delta(before, "hits") == 1


def test_damaged_entries_are_rebuilt(cache, tmp_path):
    path = tmp_path / "poly.slang"
    path.write_text(SRC)
    check_polynomial(diffc.load_module(path))
    for entry in (cache / "modules").iterdir():
        entry.write_bytes(b"not a pickle")
    before = hits()
    m = diffc.load_module(path)
    assert delta(before, "misses") == 1
    check_polynomial(m)
    assert delta(before, "kernel_misses") == 2
    assert delta(hits(), "hits") == 0 and module_cache.load_signatures(m.cache_key) is not None  # rewritten


def test_cache_off(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFC_MODULE_CACHE", "0")
    path = tmp_path / "poly.slang"
    path.write_text(SRC)
    check_polynomial(diffc.load_module(path))
    assert not (cache / "modules").exists()


CHILD = """
import json, sys
import numpy as np
import diffc
from diffc.runtime import module_cache
m = diffc.load_module(sys.argv[1])
y = m.polynomial(a=2.0, b=8.0, c=-1.0, x=np.array([0.5, 1.0, 2.0], np.float32), _result="numpy").tolist()
print(json.dumps({"stats": module_cache.stats, "ir_made": m._ir is not None, "y": y}))
"""


def test_a_second_process_reads_the_cache(cache, tmp_path):
    path = tmp_path / "poly.slang"
    path.write_text(SRC)
    env = dict(os.environ, DIFFC_CACHE_DIR=str(cache))
    runs = [json.loads(subprocess.run([sys.executable, "-c", CHILD, str(path)], env=env, capture_output=True,
                                      text=True, check=True, timeout=300).stdout.splitlines()[-1])
            for _ in range(2)]
    assert runs[0]["stats"]["misses"] == 1 and runs[0]["ir_made"]
    assert runs[1]["stats"]["hits"] == 1 and runs[1]["stats"]["kernel_hits"] == 1 and not runs[1]["ir_made"]
    want = [2 * x * x + 8 * x - 1 for x in (0.5, 1.0, 2.0)]
    assert runs[0]["y"] == want and runs[1]["y"] == want


def test_entry_points_dispatch_from_the_cache(cache, tmp_path):
    from test_dispatch import SCALE

    path = tmp_path / "scale.mlir"
    path.write_text(SCALE)

    def run(m):
        src = diffc.Tensor.from_numpy(np.arange(40, dtype=np.float32))
        dst = diffc.Tensor.zeros(40, np.float32)
        m.scale.dispatch(thread_count=40, src=src, dst=dst, factor=1.5, count=40)
        np.testing.assert_array_equal(dst.to_numpy(), 1.5 * np.arange(40))

    run(diffc.load_module(path))
    before = hits()
    m = diffc.load_module(path)
    run(m)
    assert delta(before, "hits") == 1 and delta(before, "kernel_hits") == 1
    assert m._ir is None  # lowering and binding came from the cache


def test_a_value_holding_device_objects_is_not_kept(tmp_path, monkeypatch):
    import threading

    from diffc.runtime import module_cache

    monkeypatch.setenv("DIFFC_CACHE_DIR", str(tmp_path))
    if module_cache.folder() is None:
        pytest.skip("the module cache is off here")
    module_cache.store_kernel_source("unpicklable.cl", threading.Lock())  # pickling it raises TypeError
    assert module_cache.load_kernel_source("unpicklable.cl") is None


def test_record_calls_come_from_the_cache(cache, tmp_path):
    """A function with a struct parameter and an out parameter keeps its Slang-level signature
    (diffc.api) in the cached signatures, and its record kernels' OpenCL C."""
    path = tmp_path / "rec.slang"
    path.write_text("""
struct B : IDifferentiable { float3 pos; float w; };
[Differentiable] float3 move(B b, out float n) { n = b.w * 2.0; return b.pos * b.w; }
""")
    pos, w = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1.0, 3.0], np.float32)

    def check(m):
        got = m.move(b={"pos": pos, "w": w}, _result="numpy")
        np.testing.assert_array_equal(got["_result"], pos * w[:, None])
        np.testing.assert_array_equal(got["n"], w * 2)

    check(diffc.load_module(path))
    before = hits()
    second = diffc.load_module(path)
    check(second)
    assert delta(before, "hits") == 1 and delta(before, "kernel_hits") == 1 and second._ir is None


def _scaled(m) -> list[float]:
    return m.scaled(x=np.array([1.0, 2.0], np.float32), _result="numpy").tolist()


@pytest.mark.parametrize("use", ['import factor;', '#include "factor.slang"', '__include factor;'])
def test_an_edited_imported_file_is_read_again(cache, tmp_path, use):
    """The module is keyed by every file the front end read, not the loaded file alone."""
    (tmp_path / "factor.slang").write_text("float factor() { return 2.0; }\n")
    path = tmp_path / "main.slang"
    path.write_text(f"{use}\n[Differentiable]\nfloat scaled(float x) {{ return factor() * x; }}\n")
    assert _scaled(diffc.load_module(path)) == [2.0, 4.0]
    before = hits()
    assert _scaled(diffc.load_module(path)) == [2.0, 4.0] and delta(before, "hits") == 1
    (tmp_path / "factor.slang").write_text("float factor() { return 3.0; }\n")
    before = hits()
    m = diffc.load_module(path)
    assert delta(before, "hits") == 0 and m._ir is not None
    assert _scaled(m) == [3.0, 6.0]
    (tmp_path / "factor.slang").write_text("float factor() { return 2.0; }\n")  # its first entry is good again
    before = hits()
    assert _scaled(diffc.load_module(path)) == [2.0, 4.0] and delta(before, "hits") == 1


def test_an_edited_import_of_an_import_is_read_again_in_another_process(cache, tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "inner.slang").write_text("float factor() { return 2.0; }\n")
    (tmp_path / "outer.slang").write_text("import lib.inner;\nfloat twice_factor() { return 2.0 * factor(); }\n")
    path = tmp_path / "main.slang"
    path.write_text("import outer;\n[Differentiable]\nfloat scaled(float x) { return twice_factor() * x; }\n")
    child = ("import sys, numpy as np, diffc\n"
             "m = diffc.load_module(sys.argv[1])\n"
             "print(m.scaled(x=np.array([1.0], np.float32), _result='numpy')[0])\n")
    env = dict(os.environ, DIFFC_CACHE_DIR=str(cache))

    def run() -> float:
        r = subprocess.run([sys.executable, "-c", child, str(path)], env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr
        return float(r.stdout.split()[-1])

    assert run() == 4.0
    (tmp_path / "lib" / "inner.slang").write_text("float factor() { return 5.0; }\n")
    assert run() == 10.0


def test_a_file_that_now_shadows_an_import_is_read(cache, tmp_path):
    """An import is looked for beside the importing file before the main file's folder: a file
    that appears there is found instead, so the module made without it is stale."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "helper.slang").write_text("import factor;\nfloat helped() { return factor(); }\n")
    (tmp_path / "factor.slang").write_text("float factor() { return 2.0; }\n")
    path = tmp_path / "main.slang"
    path.write_text("import lib.helper;\n[Differentiable]\nfloat scaled(float x) { return helped() * x; }\n")
    assert _scaled(diffc.load_module(path)) == [2.0, 4.0]
    (tmp_path / "lib" / "factor.slang").write_text("float factor() { return 7.0; }\n")
    assert _scaled(diffc.load_module(path)) == [7.0, 14.0]
