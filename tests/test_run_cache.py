"""`diffc run`'s module cache (diffc/runtime/module_cache.py's RunPlan): a second run of an unchanged
file skips the front end, the AD and kernel passes and the emitter, and prints what the first run
printed (values, warnings, errors); an edit of the file or of a file it imports is a new compile
with the new numbers. A run from the cache keeps its program's binary (diffc/runtime/program.py's
keep_binary): the next build loads it. Timings: bench/bench_compile.py's suite rows."""

from __future__ import annotations

import math

import pytest

from diffc import compiler
from diffc.cli import main
from diffc.runtime import module_cache, program

PROGRAM = """//TEST_INPUT:ubuffer(data=[0 0 0 0], stride=4):out,name=outputBuffer
import helper;
RWStructuredBuffer<float> outputBuffer;

[Differentiable]
float f(float x) { return scale(x) * x * x + 2.0 * sin(x); }

[numthreads(1, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID)
{
    uint64_t big = 10000000000000000000;
    var p = diffPair(X);
    bwd_diff(f)(p, 1.0);
    outputBuffer[0] = f(X);
    outputBuffer[1] = p.d;
    outputBuffer[2] = float(big & 1);
}
"""

HELPER = "[Differentiable]\nfloat scale(float x) { return K * x; }\n"


def expected(x: float, k: float) -> list[float]:
    """f and its derivative at x, the derivative by float64 central differences."""
    def f(t):
        return k * t * t * t + 2.0 * math.sin(t)

    h = 1e-5
    return [f(x), (f(x + h) - f(x - h)) / (2 * h), 0.0, 0.0]


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("DIFFC_MODULE_CACHE", raising=False)

    def write(x: float, k: float):
        (tmp_path / "helper.slang").write_text(HELPER.replace("K", f"{k}"))
        (tmp_path / "f.slang").write_text(PROGRAM.replace("X", f"{x}"))
        return str(tmp_path / "f.slang")

    return write


def run(capfd, path: str) -> tuple[int, str, str]:
    code = main(["run", path])
    out, err = capfd.readouterr()
    return code, out, err


def values(out: str) -> list[float]:
    lines = out.splitlines()
    assert lines[0] == "outputBuffer: float"
    return [float(v) for v in lines[1:]]


def no_compiling(monkeypatch):
    """Makes the front end, the pass pipelines and the emitter fail if anything calls them."""
    def refuse(*args, **kwargs):
        raise AssertionError("compiled, where the module cache had the run")

    for name in ("parse_source", "lower_kernels", "kernel_program"):
        monkeypatch.setattr(compiler, name, refuse)


def test_a_second_run_comes_from_the_cache(files, capfd, monkeypatch, tmp_path):
    cache = tmp_path / "cache"
    path = files(1.5, 3.0)
    code, out, err = run(capfd, path)
    assert code == 0 and values(out) == pytest.approx(expected(1.5, 3.0), rel=1e-4)
    assert "warning" in err and "interpreting as unsigned" in err  # the front end's warning
    before = dict(module_cache.stats)
    with monkeypatch.context() as m:
        no_compiling(m)
        assert run(capfd, path) == (code, out, err)  # the same values and the same warning
        # run again, its program's binary is kept (on PoCL too): a third run loads it
        assert len(list((cache / "programs").glob("*.bin"))) == 1
        program.clear_memory_cache()
        loaded = program.stats["disk_hits"]
        assert run(capfd, path) == (code, out, err)
        assert program.stats["disk_hits"] == loaded + 1
    assert module_cache.stats["run_hits"] == before["run_hits"] + 2


def test_an_edited_file_is_compiled_again(files, capfd, monkeypatch):
    path = files(1.5, 3.0)
    first = run(capfd, path)
    before = dict(module_cache.stats)
    path = files(0.5, 3.0)  # the file itself
    code, out, _ = run(capfd, path)
    assert code == 0 and values(out) == pytest.approx(expected(0.5, 3.0), rel=1e-4)
    assert values(out) != values(first[1]) and module_cache.stats["run_hits"] == before["run_hits"]
    path = files(0.5, -2.0)  # the file it imports
    code, out, _ = run(capfd, path)
    assert code == 0 and values(out) == pytest.approx(expected(0.5, -2.0), rel=1e-4)
    assert module_cache.stats["run_hits"] == before["run_hits"]
    path = files(1.5, 3.0)  # back to the first texts: their entry is still good
    with monkeypatch.context() as m:
        no_compiling(m)
        assert run(capfd, path) == first


def test_a_run_that_fails_fails_the_same_from_the_cache(tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("DIFFC_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "over.slang"
    path.write_text("//TEST_INPUT:ubuffer(data=[0 0 0 0], stride=4):out,name=outputBuffer\n"
                    "RWStructuredBuffer<float> outputBuffer;\n"
                    "[numthreads(1, 1, 1)]\n"
                    "void computeMain(uint3 tid : SV_DispatchThreadID)\n"
                    "{\n"
                    "    for (int i = 0; i < 6; i++) outputBuffer[i] = float(i);\n"
                    "}\n")
    code, out, err = run(capfd, str(path))
    assert code == 1 and "outside its 4 elements" in err and f"{path}:6:" in err
    before = dict(module_cache.stats)
    with monkeypatch.context() as m:
        no_compiling(m)
        assert run(capfd, str(path)) == (code, out, err)
    assert module_cache.stats["run_hits"] == before["run_hits"] + 1


def test_a_run_whose_buffers_do_not_bind_keeps_nothing(tmp_path, capfd, monkeypatch):
    # a buffer the file's annotations do not declare: an error before the program is built, so no
    # plan is kept, and a second run compiles and fails the same (warnings printed once each time)
    monkeypatch.setenv("DIFFC_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "both.slang"
    body = ("RWStructuredBuffer<float> outputBuffer;\n"
            "RWStructuredBuffer<float> other;\n"
            "[numthreads(1, 1, 1)]\n"
            "void computeMain(uint3 tid : SV_DispatchThreadID)\n"
            "{\n"
            "    uint64_t big = 10000000000000000000;\n"
            "    outputBuffer[0] = other[0] + float(big & 1);\n"
            "}\n")
    declared = ("//TEST_INPUT:ubuffer(data=[0 0 0 0], stride=4):out,name=outputBuffer\n"
                "//TEST_INPUT:ubuffer(data=[2 0 0 0], stride=4):name=other\n")
    path.write_text(declared + body)
    code, out, _ = run(capfd, str(path))
    assert code == 0 and out.splitlines()[1] == "2.000000"
    path.write_text(declared.splitlines()[0] + "\n" + body)  # no annotation for 'other'
    code, out, err = run(capfd, str(path))
    assert code == 1 and "buffer 'other' is used by 'computeMain' but no //TEST_INPUT declares it" in err
    assert f"{path}:3:" in err and err.count("interpreting as unsigned") == 1
    again = run(capfd, str(path))  # (the failed binding stored no plan: compiled again, the same)
    assert again == (code, out, err)


def kept_sources(cache) -> list[str]:
    return [p.program.source for p in (module_cache._read(f.name) for f in (cache / "modules").glob("*.cl"))
            if isinstance(p, module_cache.RunPlan)]


def test_the_program_holds_only_the_kernel_that_runs(tmp_path, capfd, monkeypatch):
    # bounds-check makes a checked kernel and an unchecked __inbounds variant that a launch proven
    # in bounds runs; diffc run knows its launch before the build: its program holds the one it runs
    cache = tmp_path / "cache"
    monkeypatch.setenv("DIFFC_CACHE_DIR", str(cache))
    path = tmp_path / "loop.slang"
    text = ("//TEST_INPUT:ubuffer(data=[0 0 0 0], stride=4):out,name=outputBuffer\n"
            "RWStructuredBuffer<float> outputBuffer;\n"
            "[numthreads(N, 1, 1)]\n"
            "void computeMain(uint3 tid : SV_DispatchThreadID)\n"
            "{\n"
            "    outputBuffer[tid.x] = float(tid.x * tid.x);\n"
            "}\n")
    path.write_text(text.replace("(N,", "(4,"))  # in bounds: the unchecked form
    code, out, _ = run(capfd, str(path))
    assert code == 0 and out.splitlines()[1:] == [f"{float(i * i):f}" for i in range(4)]
    (inbounds,) = kept_sources(cache)
    path.write_text(text.replace("(N,", "(6,"))  # past the end: the checked form, which reports it
    code, _, err = run(capfd, str(path))
    assert code == 1 and "outside its 4 elements" in err
    (checked,) = [s for s in kept_sources(cache) if s != inbounds]
    for source in (inbounds, checked):
        assert source.count("__kernel") == 1 and "__inbounds" not in source
    kernel_of = lambda source: source[source.index("__kernel"):]  # noqa: E731
    # (the two forms share one body, bounds-check's @K__body; the kernel passes whether it is in bounds)
    assert "computeMain__body(outputBuffer, true," in kernel_of(inbounds)
    assert "computeMain__body(outputBuffer, false," in kernel_of(checked)
