"""The OpenCL emitter's C always builds, and its kernels compute what numpy computes (on PoCL)."""

from __future__ import annotations

import contextlib
import io
import shlex
from pathlib import Path

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl")

from xdsl.context import Context  # noqa: E402
from xdsl.parser import Parser  # noqa: E402

from diffc import registry  # noqa: E402
from diffc.backend.opencl import EmitOptions, atomics_for_device, build_options, emit_opencl  # noqa: E402
from diffc.tools.diffc_opt import main as diffc_opt  # noqa: E402

FILECHECK = Path(__file__).parent / "filecheck"


def _opencl_runs() -> list[tuple[str, list[str]]]:
    """(test id, diffc-opt argv) for every RUN line of the FileCheck suite that prints OpenCL."""
    runs = []
    for path in sorted(FILECHECK.rglob("*.mlir")):
        if "Output" in path.parts:
            continue
        for n, line in enumerate(path.read_text().splitlines()):
            if not line.startswith("// RUN:"):
                continue
            command = line.removeprefix("// RUN:").split("|")[0].strip()
            argv = shlex.split(command.replace("%s", str(path)))
            if not argv or argv[0] != "diffc-opt" or not any(a.startswith("opencl") for a in argv):
                continue  # `not diffc-opt ...`: an expected failure
            runs.append((f"{path.relative_to(FILECHECK)}:{n + 1}", argv[1:]))
    return runs


@pytest.fixture(scope="module")
def ctx():
    for platform in cl.get_platforms():
        for device in platform.get_devices():
            if device.type & cl.device_type.CPU:
                return cl.Context(devices=[device])
    pytest.skip("no OpenCL CPU device (PoCL)")


def build(ctx, source: str, options: EmitOptions | None = None):
    return cl.Program(ctx, source).build(options=build_options(options or EmitOptions()))


def supports(ctx, options: EmitOptions) -> bool:
    if options.atomics == "ptx":
        return "NVIDIA" in ctx.devices[0].vendor.upper()
    if options.atomics == "ext":
        return "cl_ext_float_atomics" in ctx.devices[0].extensions
    return True


def test_suite_has_opencl_runs():
    assert len(_opencl_runs()) >= 12


@pytest.mark.parametrize("name,argv", _opencl_runs(), ids=[r[0] for r in _opencl_runs()])
def test_filecheck_kernels_build(ctx, name, argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert diffc_opt(argv) == 0, name
    source = out.getvalue()
    target = next(a for a in argv if a.startswith("opencl"))
    atomics = "ext" if "atomics=ext" in target else "ptx" if "atomics=ptx" in target else "cmpxchg"
    options = EmitOptions(atomics=atomics)
    if not supports(ctx, options):
        pytest.skip(f"the CPU device cannot build atomics={atomics}")
    try:
        build(ctx, source, options)
    except cl.RuntimeError as e:  # the build log is the useful part
        pytest.fail(f"{name}: OpenCL build failed:\n{e}\n--- source ---\n{source}")


def parse(text: str):
    c = Context(allow_unregistered=False)
    for name, factory in registry.DIALECTS.items():
        c.register_dialect(name, factory)
    from xdsl.dialects import arith, builtin, func, math, memref, scf, vector

    for d in (builtin.Builtin, func.Func, arith.Arith, math.Math, memref.MemRef, scf.Scf, vector.Vector):
        c.load_dialect(d)
    module = Parser(c, text).parse_module()
    module.verify()
    return module


def compile_file(ctx, relative: str, options: EmitOptions | None = None):
    source = emit_opencl(parse((FILECHECK / "backend" / relative).read_text()), options)
    return build(ctx, source, options)


def test_polynomial_kernel_matches_numpy(ctx):
    queue = cl.CommandQueue(ctx)
    prg = compile_file(ctx, "polynomial.mlir")
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    mf = cl.mem_flags
    xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    yb = cl.Buffer(ctx, mf.WRITE_ONLY, x.nbytes)
    n = 997  # the bounds check leaves the last three untouched
    prg.poly_kernel(queue, (1024,), None, xb, yb, np.int64(n))
    y = np.zeros_like(x)
    cl.enqueue_copy(queue, y, yb)
    np.testing.assert_allclose(y[:n], 2 * x[:n] ** 2 + 8 * x[:n] - 1, rtol=1e-6, atol=1e-5)


def test_vectorized_polynomial_matches_numpy(ctx):
    queue = cl.CommandQueue(ctx)
    prg = compile_file(ctx, "vector_load_store.mlir")
    x = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
    mf = cl.mem_flags
    xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    yb = cl.Buffer(ctx, mf.WRITE_ONLY, x.nbytes)
    prg.poly4(queue, (x.size // 4,), None, xb, yb)
    y = np.empty_like(x)
    cl.enqueue_copy(queue, y, yb)
    np.testing.assert_allclose(y, 2 * x**2 + 8 * x - 1, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("atomics", ["cmpxchg", "ext", "ptx"])
def test_atomic_add_reduction(ctx, atomics):
    options = EmitOptions(atomics=atomics)
    if not supports(ctx, options):
        pytest.skip(f"the CPU device has no atomics={atomics}")
    queue = cl.CommandQueue(ctx)
    prg = compile_file(ctx, "atomics.mlir", options)
    x = np.random.default_rng(1).uniform(0, 1, 4096).astype(np.float32)
    mf = cl.mem_flags
    xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    sums = np.zeros(4, np.float32)
    counts = np.zeros(4, np.int32)
    sb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=sums)
    cb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=counts)
    prg.histogram(queue, (x.size,), None, xb, sb, cb)
    cl.enqueue_copy(queue, sums, sb)
    cl.enqueue_copy(queue, counts, cb)
    expected = x.astype(np.float64).reshape(-1, 4).sum(axis=0)
    np.testing.assert_allclose(sums, expected, rtol=1e-4)
    assert counts.tolist() == [1024] * 4


def test_local_tree_reduction(ctx):
    queue = cl.CommandQueue(ctx)
    prg = compile_file(ctx, "local_memory.mlir")
    x = np.random.default_rng(2).uniform(-1, 1, 64 * 32).astype(np.float32)
    mf = cl.mem_flags
    xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    total = np.zeros(1, np.float32)
    tb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=total)
    prg.reduce(queue, (x.size,), (64,), xb, tb)
    cl.enqueue_copy(queue, total, tb)
    assert total[0] == pytest.approx(float(x.astype(np.float64).sum()), abs=1e-3)


def test_half_storage_kernels(ctx):
    queue = cl.CommandQueue(ctx)
    prg = compile_file(ctx, "half_storage.mlir")
    x = np.linspace(-4, 4, 256).astype(np.float16)
    mf = cl.mem_flags
    xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    for kernel, size in (("scale_half", x.size), ("scale_half4", x.size // 4)):
        yb = cl.Buffer(ctx, mf.WRITE_ONLY, x.nbytes)
        getattr(prg, kernel)(queue, (size,), None, xb, yb, np.float32(1.5))
        y = np.empty_like(x)
        cl.enqueue_copy(queue, y, yb)
        expected = (x.astype(np.float32) * np.float32(1.5)).astype(np.float16)
        np.testing.assert_array_equal(y, expected, err_msg=kernel)


def test_loops_match_numpy(ctx):
    queue = cl.CommandQueue(ctx)
    prg = compile_file(ctx, "scf_for.mlir")
    x = np.linspace(-2, 2, 64).astype(np.float32)
    mf = cl.mem_flags
    xb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=x)
    yb = cl.Buffer(ctx, mf.WRITE_ONLY, x.nbytes)
    prg.loop_kernel(queue, (x.size,), None, xb, yb)
    out = np.empty_like(x)
    cl.enqueue_copy(queue, out, xb)
    sums = 1 + x + x**2 + x**3  # sum_powers(x, 4); swap 4 times is the identity: s - x
    np.testing.assert_allclose(out, sums - x, rtol=1e-5, atol=1e-5)


def test_while_loop_counts_halvings(ctx):
    queue = cl.CommandQueue(ctx)
    source = emit_opencl(parse((FILECHECK / "backend" / "scf_while.mlir").read_text()))
    source += """
__kernel void run(__global float* x, __global int* k) {
    size_t i = get_global_id(0);
    k[i] = halvings(x[i]);
}
"""
    prg = build(ctx, source)
    x = np.array([0.5, 1.0, 1.5, 2.0, 3.0, 100.0], np.float32)
    mf = cl.mem_flags
    xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    kb = cl.Buffer(ctx, mf.WRITE_ONLY, x.size * 4)
    prg.run(queue, (x.size,), None, xb, kb)
    k = np.empty(x.size, np.int32)
    cl.enqueue_copy(queue, k, kb)
    assert k.tolist() == [0, 0, 1, 1, 2, 7]


class _FakeDevice:
    def __init__(self, extensions: str, vendor: str):
        self.extensions = extensions
        self.vendor = vendor


def test_atomics_strategy_from_device(ctx):
    assert atomics_for_device(_FakeDevice("cl_khr_fp64", "NVIDIA Corporation")) == "ptx"
    assert atomics_for_device(_FakeDevice("cl_ext_float_atomics cl_khr_fp64", "Intel")) == "ext"
    assert atomics_for_device(_FakeDevice("cl_khr_fp64", "AMD")) == "cmpxchg"
    assert atomics_for_device(ctx.devices[0]) in ("ext", "cmpxchg")
