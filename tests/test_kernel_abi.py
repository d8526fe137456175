"""The kernel ABI of calls over tensors is data: the builder lays a kernel's parameters out by a
recorded layout (record_kernels.record_layout, kernels.kernel_layout) and the launch sets its
arguments by the same object. Checked on what each side actually produced: the OpenCL C
signature of the built kernel against the argument list the last launch set, position by
position (a buffer for every `__global` pointer, a long for every index, a scalar of the C
type's width for every value), for every mode, with broadcast, scalar, struct and inout
arguments."""

from __future__ import annotations

import re

import numpy as np
import pytest

import diffc
from diffc.runtime.module import load_module_from_string

SRC = """
struct P : IDifferentiable { float3 pos; float mass; };
[Differentiable] void split(double x, out double y, inout double z, out double2 w) {
    y = x * x; w = double2(z, x * z); z = sin(z) * x; }
[Differentiable] float energy(P p, float3 k, float s) { return s * p.mass * dot(p.pos * k, p.pos); }
[Differentiable] float poly(float a, float x) { return a * x * x + x; }
"""

C_WIDTH = {"float": 4, "double": 8, "int": 4, "uint": 4, "long": 8, "ulong": 8, "half": 2, "short": 2, "char": 1,
           "bool": 1, "uchar": 1, "ushort": 2}


@pytest.fixture(scope="module")
def m():
    return load_module_from_string(SRC, "abi.slang")


def c_params(source: str, name: str) -> list[tuple[str, str]]:
    """(C type, name) of each parameter of kernel `name` in `source`."""
    sig = re.search(rf"__kernel (?:__attribute__\(\(.*?\)\) )?void {name}\((.*?)\)\s*{{", source, re.S)
    assert sig is not None, f"no kernel {name}"
    out = []
    for p in sig.group(1).split(","):
        *ty, pname = p.split()
        out.append((" ".join(ty), pname))
    return out


def assert_args_fit(source: str, kernel: str, layout, args) -> None:
    import pyopencl as cl

    params = c_params(source, kernel)
    assert len(params) == len(args), (params, args)
    assert len(layout) <= len(args)  # (status buffers of checked kernels follow the layout)
    for (ty, name), key, a in zip(params, layout, args):
        if ty.startswith("__global"):
            assert isinstance(a, cl.MemoryObject), (name, key, a)
            assert key[0] in ("buf", "grad", "out", "out_grad"), (name, key)
        else:
            assert isinstance(a, np.generic) and a.dtype.itemsize == C_WIDTH[ty], (name, ty, key, a)
            assert key[0] in ("val", "n", "shape", "stride") if ty == "long" else key[0] == "val", (name, key)


def rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(0.5, 1.5, shape).astype(dtype)


def tensor(a, grads=True):
    t = diffc.Tensor.from_numpy(a)
    if grads:
        t.with_grads()
    return t


def test_record_kernels_take_the_arguments_their_layout_lays_out(m):
    x, z = tensor(rand(4, dtype=np.float64)), tensor(rand(4, seed=1, dtype=np.float64))
    m.split(x=x, z=z)
    m.split.fwds(x=x, z=z)
    y, w = diffc.Tensor.zeros((4,), np.float64), diffc.Tensor.zeros((4, 2), np.float64)
    y.with_grads(), w.with_grads()
    y.grad.copy_from_numpy(np.ones(4)), w.grad.copy_from_numpy(np.ones((4, 2)))
    m.split.bwds(x=x, y=y, z=z, w=w)
    pos, mass, k = tensor(rand(2, 3, 3)), tensor(rand(2, 3, seed=2)), tensor(rand(3, 3, seed=3))  # k broadcast
    out = m.energy(p={"pos": pos, "mass": mass}, k=k, s=2.0)
    m.energy.fwds(p={"pos": pos, "mass": mass}, k=k, s=2.0)
    out.with_grads()
    out.grad.copy_from_numpy(np.ones((2, 3), np.float32))
    m.energy.bwds(p={"pos": pos, "mass": mass}, k=k, s=2.0, _result=out)
    seen = set()
    for fn in (m.split, m.energy):
        for spec, (_, _, layout) in fn._record_kernels.items():
            assert_args_fit(fn.sources[spec], spec.kernel_name, layout, fn._record_args[spec])
            seen.add((fn.name, spec.mode, any(p.kind == "b" for p in spec.inputs)))
    assert {(f, mode) for f, mode, _ in seen} == {(f, mode) for f in ("split", "energy")
                                                   for mode in ("call", "fwds", "bwds")}
    assert ("energy", "bwds", True) in seen  # broadcast strides and shapes laid out too


def test_elementwise_kernels_take_the_arguments_their_layout_lays_out(m):
    a, x = tensor(rand(3, 1)), tensor(rand(3, 5, seed=1))  # a broadcast along x's last axis
    out = m.poly(a=a, x=x)
    m.poly.fwds(a=a, x=x)
    out.with_grads()
    out.grad.copy_from_numpy(np.ones((3, 5), np.float32))
    m.poly.bwds(a=a, x=x, _result=out)
    m.poly(a=2.0, x=x)  # a scalar argument
    fn = m.poly
    assert {s.mode for s in fn._kernels} == {"call", "fwds", "bwds"}
    for spec in fn._kernels:
        assert_args_fit(fn.sources[spec], spec.kernel_name, fn._layouts[spec], fn._last_args[spec])
