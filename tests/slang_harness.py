"""Checks a Slang function's derivatives: compile with the front end, wrap `fwd_diff(f)` and
`bwd_diff(f)` in IR, run the canonical pipeline, and compare in diffc.interp (float64) against
central finite differences of the same lowered primal function.

    c = Compiled(src, "f")
    c.check_derivatives([0.7, np.array([0.1, 0.2, 0.3])])

Values are the function's IR leaves (a struct parameter is several leaves): Python floats for
scalars, numpy arrays for vectors, ints for integer parameters.
"""

from __future__ import annotations

import numpy as np
from conftest import assert_no_diff
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.interpreters.printf import PrintfFunctions
from xdsl.ir import Block, Region

from diffc import interp
from diffc.dialects import diff
from diffc.frontend import compile_slang
from diffc.compiler import differentiate

FD_STEP = 1e-6


def run_function(module: ModuleOp, name: str, *args):
    """diffc.interp, with printf (a debug print inside a differentiated function is allowed)."""
    return interp.run_function(module, name, *args, extra=[PrintfFunctions()])


def run_pipeline(module: ModuleOp) -> None:
    """The canonical pipeline (diffc.compiler.AD_PIPELINE) in place; nothing of diff left."""
    differentiate(module)
    module.verify()
    assert_no_diff(module)


def _wrapper(name: str, sig: FunctionType, op_type, callee: str) -> func.FuncOp:
    block = Block(arg_types=sig.inputs.data)
    call = op_type(callee, list(block.args), sig.outputs.data)
    block.add_ops([call, func.ReturnOp(*call.results)])
    return func.FuncOp(name, sig, Region(block))


def _flat(values) -> np.ndarray:
    return np.concatenate([np.atleast_1d(np.asarray(v, dtype=np.float64)).ravel() for v in values]) if values else np.zeros(0)


def _unflat(flat: np.ndarray, like) -> list:
    out, k = [], 0
    for v in like:
        n = np.size(v)
        out.append(flat[k : k + n].reshape(np.shape(v)).copy() if np.ndim(v) else float(flat[k]))
        k += n
    return out


class Compiled:
    def __init__(self, src: str | ModuleOp, fname: str, filename: str = "test.slang"):
        """`src`: Slang source, or a module of input IR (see `from_ir`)."""
        module = compile_slang(src, filename) if isinstance(src, str) else src
        module.verify()
        f = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == fname)
        self.fname = fname
        n_in = len(f.function_type.inputs.data)
        n_out = len(f.function_type.outputs.data)
        self.diff_args = [i for i in range(n_in) if diff.arg_is_differentiable(f, i)]
        self.diff_results = [i for i in range(n_out) if diff.result_is_differentiable(f, i)]
        module.body.block.add_op(_wrapper(f"{fname}__fwd_check", diff.fwd_signature(f), diff.FwdDiffOp, fname))
        module.body.block.add_op(_wrapper(f"{fname}__bwd_check", diff.bwd_signature(f), diff.BwdDiffOp, fname))
        run_pipeline(module)
        self.module = module

    @classmethod
    def from_ir(cls, text: str, fname: str) -> Compiled:
        from diffc.interp import parse_module

        return cls(parse_module(text), fname)

    # -- calls ---------------------------------------------------------------------------------
    def primal(self, args) -> list:
        return list(run_function(self.module, self.fname, *args))

    def fwd(self, args, tangents) -> tuple[list, list]:
        """(primal results, tangents of the differentiable results); `tangents` has one entry
        per differentiable argument."""
        flat_in, tans = [], iter(tangents)
        for i, a in enumerate(args):
            flat_in.append(a)
            if i in self.diff_args:
                flat_in.append(next(tans))
        outs = list(run_function(self.module, f"{self.fname}__fwd_check", *flat_in))
        prim, tan = [], []
        n_res = len(self.primal_shape_results)
        for i in range(n_res):
            prim.append(outs.pop(0))
            if i in self.diff_results:
                tan.append(outs.pop(0))
        return prim, tan

    def bwd(self, args, adjoints) -> list:
        """Gradients of the differentiable arguments, given one adjoint per differentiable
        result."""
        return list(run_function(self.module, f"{self.fname}__bwd_check", *args, *adjoints))

    @property
    def primal_shape_results(self):
        f = next(op for op in self.module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == self.fname)
        return f.function_type.outputs.data

    # -- checks --------------------------------------------------------------------------------
    def jacobian_fd(self, args) -> np.ndarray:
        """d(differentiable results)/d(differentiable arguments), central differences."""
        base = [args[i] for i in self.diff_args]
        x0 = _flat(base)
        cols = []
        for k in range(x0.size):
            outs = []
            for sign in (1.0, -1.0):
                x = x0.copy()
                x[k] += sign * FD_STEP
                full = list(args)
                for i, v in zip(self.diff_args, _unflat(x, base)):
                    full[i] = v
                res = self.primal(full)
                outs.append(_flat([res[i] for i in self.diff_results]))
            cols.append((outs[0] - outs[1]) / (2 * FD_STEP))
        return np.stack(cols, axis=1)

    def check_derivatives(self, args, seed: int = 0, rtol: float = 1e-5, atol: float = 1e-6) -> None:
        """Forward and reverse mode against central differences, and against each other:
        <u, J v> = <J^T u, v> for random u, v."""
        rng = np.random.default_rng(seed)
        base = [args[i] for i in self.diff_args]
        prim = self.primal(args)
        outs = [prim[i] for i in self.diff_results]
        jac = self.jacobian_fd(args)
        v = rng.normal(size=jac.shape[1])
        u = rng.normal(size=jac.shape[0])
        p_fwd, t_fwd = self.fwd(args, _unflat(v, base))
        np.testing.assert_allclose(_flat(p_fwd), _flat(prim), rtol=1e-12, atol=1e-12, err_msg="fwd primal")
        jv = _flat(t_fwd)
        np.testing.assert_allclose(jv, jac @ v, rtol=rtol, atol=atol, err_msg="fwd_diff vs finite differences")
        grads = self.bwd(args, _unflat(u, outs))
        jtu = _flat(grads)
        np.testing.assert_allclose(jtu, jac.T @ u, rtol=rtol, atol=atol, err_msg="bwd_diff vs finite differences")
        np.testing.assert_allclose(u @ jv, jtu @ v, rtol=1e-9, atol=1e-9, err_msg="<u, Jv> != <J^T u, v>")
