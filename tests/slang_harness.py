"""Checks a Slang function's derivatives: compile with the front end, wrap `fwd_diff(f)` and
`bwd_diff(f)` in IR, run the canonical pipeline, and compare in diffc.interp (float64) against
central finite differences of the same lowered primal function.

    c = Compiled(src, "f")
    c.check_derivatives([0.7, np.array([0.1, 0.2, 0.3])])

Values are the function's IR leaves (a struct parameter is several leaves): Python floats for
scalars, numpy arrays for vectors, ints for integer parameters. The machinery is diffc.gradcheck's
(what `diffc check` runs); this adds the front end and the assertions.
"""

from __future__ import annotations

import numpy as np
from conftest import assert_no_diff
from xdsl.dialects.builtin import ModuleOp

from diffc import gradcheck
from diffc.diagnostics import DiffcError
from diffc.gradcheck import FD_STEP, FunctionCheck, run_function  # noqa: F401 - tests import them
from diffc.frontend import compile_slang


def compile_error(src: str, filename: str = "prog.slang") -> str:
    """The located diagnostic the front end gives for `src` (which must be refused)."""
    import pytest

    with pytest.raises(DiffcError) as e:
        compile_slang(src, filename)
    return str(e.value)


def run_pipeline(module: ModuleOp) -> None:
    """The canonical pipeline (diffc.pipeline.AD_PIPELINE) in place; nothing of diff left."""
    gradcheck.run_pipeline(module)
    assert_no_diff(module)


class Compiled(FunctionCheck):
    def __init__(self, src: str | ModuleOp, fname: str, filename: str = "test.slang"):
        """`src`: Slang source, or a module of input IR (see `from_ir`)."""
        module = compile_slang(src, filename) if isinstance(src, str) else src
        module.verify()
        super().__init__(module, fname)
        assert_no_diff(self.module)

    @classmethod
    def from_ir(cls, text: str, fname: str) -> Compiled:
        from diffc.interp import parse_module

        return cls(parse_module(text), fname)

    @property
    def primal_shape_results(self):
        from diffc.gradcheck import find_function

        return find_function(self.module, self.fname).function_type.outputs.data

    def check_derivatives(self, args, seed: int = 0, rtol: float = 1e-5, atol: float = 1e-6) -> None:
        """Forward and reverse mode against central differences, and against each other:
        <u, J v> = <J^T u, v> for random u, v."""
        c = self.compare(args, seed)
        np.testing.assert_allclose(c.fwd_prim, c.prim, rtol=1e-12, atol=1e-12, err_msg="fwd primal")
        np.testing.assert_allclose(c.jv, c.jac @ c.v, rtol=rtol, atol=atol, err_msg="fwd_diff vs finite differences")
        np.testing.assert_allclose(c.jtu, c.jac.T @ c.u, rtol=rtol, atol=atol, err_msg="bwd_diff vs finite differences")
        np.testing.assert_allclose(c.u @ c.jv, c.jtu @ c.v, rtol=1e-9, atol=1e-9, err_msg="<u, Jv> != <J^T u, v>")
