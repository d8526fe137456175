"""`matrix<T, R, C>` with sizes from `static const` ints and more than 4 rows (issue 22: slang-torch's
bezier example): rows are vectors, so C stays at most 4. Values from numpy; refused forms located."""

from __future__ import annotations

import numpy as np
import pytest

import diffc
from diffc.diagnostics import DiffcError
from diffc.frontend import compile_slang
from diffc.runtime.tensor import Tensor

PROGRAM = """
static const int R = 6;
static const int D = 2;
RWStructuredBuffer<float> buf;
[shader("compute")][numthreads(1, 1, 1)]
void main(uint3 t : SV_DispatchThreadID)
{
    matrix<float, R, D> m;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < D; j++)
            m[i][j] = buf[i * D + j];
    m[0][1] -= 10.0;
    matrix<float, R, D> n = m * 2.0 + m;
    float2 v = mul(float2(1.0, -1.0), transpose(float2x2(n[4], n[5])));
    for (int i = 0; i < R; i++)
        for (int j = 0; j < D; j++)
            buf[i * D + j] = n[i][j];
    buf[R * D] = v.x + v.y;
}
"""


def test_tall_matrix_from_static_consts(tmp_path):
    p = tmp_path / "m.slang"
    p.write_text(PROGRAM)
    m = diffc.load_module(str(p))
    a = np.arange(13, dtype=np.float32)
    t = Tensor.from_numpy(a.copy())
    m.main.dispatch(thread_count=1, buf=t)
    mat = a[:12].reshape(6, 2).astype(np.float64)
    mat[0, 1] -= 10
    n = mat * 3
    v = np.array([1.0, -1.0]) @ np.stack([n[4], n[5]]).T
    np.testing.assert_allclose(t.numpy()[:12], n.reshape(-1), rtol=1e-6)
    assert t.numpy()[12] == pytest.approx(v.sum())


@pytest.mark.parametrize("expr, message", [
    ("transpose(m)", r"4:\d+: error\[E0008\]: transpose of float6x2 \(more than 4 rows\) is not supported"),
    ("mul(m, float2(1, 2))", r"4:\d+: error\[E0008\]: mul of float6x2 \(more than 4 rows\) by a vector"),
])
def test_tall_matrix_refusals_are_located(expr, message):
    src = f"static const int R = 6;\nvoid f()\n{{\n    matrix<float, R, 2> m; let x = {expr};\n}}\n"
    with pytest.raises(DiffcError, match=message):
        compile_slang(src, "t.slang")


def test_more_than_4_columns_is_refused():
    with pytest.raises(DiffcError, match=r"1:\d+: error\[E0003\]: matrix<float, 2, 5>: .*columns 1 to 4"):
        compile_slang("void f(matrix<float, 2, 5> m) {}\n", "t.slang")
