"""Programs Slang runs that diffc refused: an integer constant where a bool is wanted (any nonzero
value is true), an integer constant wider than its type (C's low bits), and a loop whose constant
bounds give it no iteration but that holds a `break` or `return` (Slang: 2, 1, 1 for the value,
fwd and bwd of the function below at y = 2)."""

from __future__ import annotations

import numpy as np
import pytest
from slang_harness import Compiled

import diffc

CONSTANTS = """
RWStructuredBuffer<float> O;
[numthreads(1, 1, 1)]
void constants(uint3 t : SV_DispatchThreadID) {
    bool b = 2;
    O[0] = b ? 1.0 : 0.0;
    if (2) O[1] = 1.0;
    bool c = (t.x == 5) || 54;
    O[2] = c ? 1.0 : 0.0;
    O[3] = bool(-3) ? 1.0 : 0.0;
    O[4] = bool(0) ? 1.0 : 0.0;
    uint8_t small = 300;
    int8_t wrapped = 200;
    O[5] = small;
    O[6] = wrapped;
}
"""


def test_integer_constants_as_bools_and_narrow_ints(tmp_path):
    path = tmp_path / "constants.slang"
    path.write_text(CONSTANTS)
    m = diffc.load_module(str(path))
    out = diffc.Tensor.from_numpy(np.full(7, -9.0, np.float32))
    m.constants.dispatch(thread_count=1, O=out)
    np.testing.assert_array_equal(out.to_numpy(), [1, 1, 1, 1, 0, np.uint8(300 % 256), np.int8(200 - 256)])


EMPTY_LOOP = """
[Differentiable] float f(float x, float y) {
    for (int i = 0; i < 0; i++) { x = x * y; break; }
    for (int j = 3; j < 3; j++) { if (y > 0.0) return y; }
    return x;
}
"""


@pytest.mark.parametrize("x,y", [(2.0, 2.0), (-0.5, 1.5)])
def test_loop_that_never_runs_with_a_break_or_return(x, y):
    c = Compiled(EMPTY_LOOP, "f")
    assert c.primal([x, y])[0] == x
    c.check_derivatives([x, y])
