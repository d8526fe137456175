"""Pointers into group-shared memory (frontend/features/groupshared.py): `__getAddress(x[i])` of a
`groupshared` array, `Ptr<float, Access::ReadWrite, AddressSpace::GroupShared>` fields of a struct
whose custom backward derivative adds gradients through them, pointer arithmetic and indexing.
Gradients against their closed forms and float64 central differences; an access past the
variable through such a pointer is the located E0011 of bounds-check."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from slang_helpers import expect_error

PROGRAM = """
//TEST_INPUT:ubuffer(data=[0 0 0 0 0 0], stride=4):out,name=outputBuffer
RWStructuredBuffer<float> outputBuffer;

typealias Shared = Ptr<float, Access::ReadWrite, AddressSpace::GroupShared>;

struct Cell
{
    Shared value;
    Shared grad;

    [BackwardDerivative(read_bwd)]
    float read() { return value[0]; }
    void read_bwd(float d) { grad[0] += d; }
};

[Differentiable]
float energy(Cell a, Cell b, float w)
{
    float x = a.read();
    float y = b.read();
    return w * x * x * y + sin(y);
}

groupshared float vals[4];
groupshared float grads[4];

[numthreads(1, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID)
{
    vals[0] = 1.5; vals[1] = -0.5; vals[2] = 2.0; vals[3] = 0.25;
    for (int i = 0; i < 4; i++) grads[i] = 0.0;
    Shared base = __getAddress(vals[0]);
    Cell a = { base + 1, __getAddress(grads[1]) };
    Cell b = { __getAddress(vals[2]), __getAddress(grads[2]) };
    var w = diffPair(3.0, 0.0);
    bwd_diff(energy)(a, b, w, 1.0);
    outputBuffer[0] = grads[1];
    outputBuffer[1] = grads[2];
    outputBuffer[2] = w.d;
    outputBuffer[3] = energy(a, b, 3.0);
    Shared g = __getAddress(grads[0]);
    outputBuffer[4] = g[3] + (*(g + 2));
    outputBuffer[5] = base[LAST];
}
"""


def _run(tmp_path, last: int):
    src = tmp_path / "shared.slang"
    src.write_text(PROGRAM.replace("LAST", str(last)))
    return subprocess.run([sys.executable, "-m", "diffc.cli", "run", str(src)], capture_output=True, text=True,
                          env={**os.environ, "DIFFC_DEVICE": "cpu"}, timeout=300)


def _energy(x, y, w):
    return w * x * x * y + math.sin(y)


def test_gradients_through_group_shared_pointers(tmp_path):
    r = _run(tmp_path, 3)
    assert r.returncode == 0, r.stderr
    out = np.array([float(v) for v in r.stdout.split()[2:]])
    x, y, w, h = -0.5, 2.0, 3.0, 1e-6
    fd = [(_energy(x + h, y, w) - _energy(x - h, y, w)) / (2 * h),
          (_energy(x, y + h, w) - _energy(x, y - h, w)) / (2 * h),
          (_energy(x, y, w + h) - _energy(x, y, w - h)) / (2 * h)]
    np.testing.assert_allclose(out[:3], fd, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[:3], [2 * w * x * y, w * x * x + math.cos(y), x * x * y], rtol=1e-5)
    assert out[3] == pytest.approx(_energy(x, y, w), rel=1e-6)
    assert out[4] == pytest.approx(out[1], rel=1e-6)  # g[3] is 0, *(g + 2) the gradient of y
    assert out[5] == 0.25  # base[3]


def test_an_access_past_the_variable_is_reported(tmp_path):
    r = _run(tmp_path, 5)
    assert r.returncode != 0
    assert "error[E0011]" in r.stderr and "groupshared 'vals' at index 5, outside its 4 elements" in r.stderr


def test_only_group_shared_memory_has_an_address():
    expect_error("float f() { float x = 1.0; let p = __getAddress(x); return p[0]; }", "E0008", 1, 49,
                 "taking the address of anything but group-shared memory")


def test_other_address_spaces_are_refused():
    expect_error("void f(Ptr<float, Access::Read, AddressSpace::UserPointer> p) { }", "E0008", 1, 33,
                 "address space 'UserPointer'")
