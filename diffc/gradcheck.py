"""`diffc check`: proves a module's derivatives numerically.

For every differentiable function of a module (entry points aside), random inputs in a stated
domain; at each, forward mode (J v), reverse mode (J^T u), float64 central finite differences
of the primal (J) and the dot-product test <u, J v> = <J^T u, v> are compared. Everything runs
in diffc.interp, which computes in float64, so a mismatch is a wrong derivative, not rounding.
Custom derivatives ([ForwardDerivative] / [BackwardDerivative]) are what the generated
wrappers call, so they are checked against the finite differences of their primal.

    report = diffc.check(module)            # a diffc.Module, a ModuleOp, or a path
    print(report.table()); assert report.ok
    diffc.check(module, domains={"shininess": (1, 64)})   # one parameter's own range

Float inputs are drawn from `domain` (all parameters) or, for a parameter `domains` names
(`"p"`, or `"f.p"` for f's alone), from its own range. Where the inputs give non-finite values,
the parameters without a range of their own are drawn from their range's positive part. The
table names the sample (its number and input) that gave each comparison's worst error; numpy's
floating-point warnings (0 * inf and the like, at inputs being tried) are not printed.

`FunctionCheck` is the machinery for one function; tests/slang_harness.py builds on it.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, IntegerType, ModuleOp, VectorType
from xdsl.ir import Block, Region

from diffc import interp
from diffc.dialects import diff

FD_STEP = 1e-6
DEFAULT_DOMAIN = (-1.0, 1.0)
DEFAULT_TOL = 1e-5  # |a - b|_inf / max(|b|_inf, 1): central differences in float64 reach ~1e-9
DEFAULT_SAMPLES = 3
MAX_DRAWS = 20  # draws per sample before giving up on finding a point where everything is finite
INT_RANGE = (0, 3)  # integer parameters (indices, counts) take small non-negative values


class CheckSetupError(Exception):
    """A function that cannot be checked as it is (its reason is printed, not a failure)."""


def run_function(module: ModuleOp, name: str, *args):
    """diffc.interp, with printf (a debug print inside a differentiated function is allowed)."""
    from xdsl.interpreters.printf import PrintfFunctions

    return interp.run_function(module, name, *args, extra=[PrintfFunctions()])


def run_pipeline(module: ModuleOp) -> None:
    """The differentiation pipeline (diffc.pipeline.AD_PIPELINE), in place; nothing of the diff
    dialect is left."""
    from diffc.compiler import differentiate

    differentiate(module)
    module.verify()
    left = {op.name for op in module.walk() if op.name.startswith("diff.")}
    if left:
        raise CheckSetupError(f"ops {sorted(left)} remain after the pipeline")


def _wrapper(name: str, sig: FunctionType, op_type, callee: str) -> func.FuncOp:
    block = Block(arg_types=sig.inputs.data)
    call = op_type(callee, list(block.args), sig.outputs.data)
    block.add_ops([call, func.ReturnOp(*call.results)])
    return func.FuncOp(name, sig, Region(block))


def flat(values) -> np.ndarray:
    if not values:
        return np.zeros(0)
    return np.concatenate([np.atleast_1d(np.asarray(v, dtype=np.float64)).ravel() for v in values])


def unflat(x: np.ndarray, like) -> list:
    out, k = [], 0
    for v in like:
        n = np.size(v)
        out.append(x[k : k + n].reshape(np.shape(v)).copy() if np.ndim(v) else float(x[k]))
        k += n
    return out


def find_function(module: ModuleOp, name: str) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == name:
            return op
    raise KeyError(name)


@dataclass
class Comparison:
    """Everything one input point gives: the primal, J v from forward mode, J^T u from reverse
    mode, and the finite-difference Jacobian `jac` (rows: differentiable result leaves)."""

    prim: np.ndarray
    jac: np.ndarray
    u: np.ndarray
    v: np.ndarray
    fwd_prim: np.ndarray | None = None
    jv: np.ndarray | None = None
    jtu: np.ndarray | None = None

    def errors(self) -> dict[str, float]:
        """Relative errors |a - b|_inf / max(|b|_inf, 1) of each comparison this point has."""
        out = {}
        if self.jv is not None:
            out["fwd vs fd"] = rel_error(self.jv, self.jac @ self.v)
            out["fwd primal"] = rel_error(self.fwd_prim, self.prim)
        if self.jtu is not None:
            out["bwd vs fd"] = rel_error(self.jtu, self.jac.T @ self.u)
        if self.jv is not None and self.jtu is not None:
            out["<u,Jv>=<J'u,v>"] = rel_error(np.array([self.jtu @ self.v]), np.array([self.u @ self.jv]))
        return out


def rel_error(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return math.inf
    if a.size == 0:
        return 0.0
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        same = np.array_equal(a, b, equal_nan=True)
        return 0.0 if same else math.inf
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1.0))


class FunctionCheck:
    """One differentiable function of a front-end module, with `fwd_diff` and `bwd_diff`
    wrappers (`<f>__fwd_check`, `<f>__bwd_check`) through the canonical pipeline, callable in
    diffc.interp. `modes`: the derivatives to build; "fwd" / "bwd" that cannot be built raise
    the pass's error (FunctionCheck.build tries each alone)."""

    def __init__(self, module: ModuleOp, fname: str, modes=("fwd", "bwd"), copy: bool = False):
        if copy:
            module = module.clone()
        f = find_function(module, fname)
        self.fname = fname
        self.modes = tuple(modes)
        n_in = len(f.function_type.inputs.data)
        n_out = len(f.function_type.outputs.data)
        self.arg_types = list(f.function_type.inputs.data)
        self.diff_args = [i for i in range(n_in) if diff.arg_is_differentiable(f, i)]
        self.diff_results = [i for i in range(n_out) if diff.result_is_differentiable(f, i)]
        self.n_results = n_out
        if "fwd" in self.modes:
            module.body.block.add_op(_wrapper(f"{fname}__fwd_check", diff.fwd_signature(f), diff.FwdDiffOp, fname))
        if "bwd" in self.modes:
            module.body.block.add_op(_wrapper(f"{fname}__bwd_check", diff.bwd_signature(f), diff.BwdDiffOp, fname))
        run_pipeline(module)
        self.module = module

    @classmethod
    def build(cls, module: ModuleOp, fname: str) -> tuple[FunctionCheck, dict[str, str]]:
        """Both modes where the pipeline can build them, else each alone; returns the check and
        why a mode is missing ({mode: reason})."""
        try:
            return cls(module, fname, copy=True), {}
        except Exception as both:  # noqa: BLE001 - a pass's error, reported as the reason
            missing, built = {}, None
            for mode in ("fwd", "bwd"):
                try:
                    built = built or cls(module, fname, (mode,), copy=True)
                except Exception as e:  # noqa: BLE001
                    missing[mode] = _one_line(e)
            if built is None:
                raise CheckSetupError(f"cannot build its derivatives: {_one_line(both)}") from None
            return built, missing

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
        for i in range(self.n_results):
            prim.append(outs.pop(0))
            if i in self.diff_results:
                tan.append(outs.pop(0))
        return prim, tan

    def bwd(self, args, adjoints) -> list:
        """Gradients of the differentiable arguments, given one adjoint per differentiable result."""
        return list(run_function(self.module, f"{self.fname}__bwd_check", *args, *adjoints))

    # -- comparisons ---------------------------------------------------------------------------
    def jacobian_fd(self, args, step: float = FD_STEP) -> np.ndarray:
        """d(differentiable results)/d(differentiable arguments), central differences."""
        base = [args[i] for i in self.diff_args]
        x0 = flat(base)
        cols = []
        for k in range(x0.size):
            outs = []
            for sign in (1.0, -1.0):
                x = x0.copy()
                x[k] += sign * step
                full = list(args)
                for i, v in zip(self.diff_args, unflat(x, base)):
                    full[i] = v
                res = self.primal(full)
                outs.append(flat([res[i] for i in self.diff_results]))
            cols.append((outs[0] - outs[1]) / (2 * step))
        n_out = flat([self.primal(args)[i] for i in self.diff_results]).size if not cols else cols[0].size
        return np.stack(cols, axis=1) if cols else np.zeros((n_out, 0))

    def compare(self, args, seed: int = 0) -> Comparison:
        """Forward and reverse mode and central differences at `args`, with random u and v."""
        rng = np.random.default_rng(seed)
        base = [args[i] for i in self.diff_args]
        prim = self.primal(args)
        outs = [prim[i] for i in self.diff_results]
        jac = self.jacobian_fd(args)
        v = rng.normal(size=jac.shape[1])
        u = rng.normal(size=jac.shape[0])
        c = Comparison(flat(prim), jac, u, v)
        if "fwd" in self.modes:
            p_fwd, t_fwd = self.fwd(args, unflat(v, base))
            c.fwd_prim, c.jv = flat(p_fwd), flat(t_fwd)
        if "bwd" in self.modes:
            c.jtu = flat(self.bwd(args, unflat(u, outs)))
        return c


def _one_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


# -- random inputs -----------------------------------------------------------------------------


def unsupported_parameter(f: func.FuncOp) -> str | None:
    """Why random inputs cannot be made for `f`'s parameters, or None."""
    for i, t in enumerate(f.function_type.inputs.data):
        if diff.is_float_type(t) or isinstance(t, IntegerType):
            continue
        if isinstance(t, VectorType) and (diff.is_float_type(t.element_type) or isinstance(t.element_type, IntegerType)):
            continue
        args = f.body.blocks[0].args if f.body.blocks else ()
        name = args[i].name_hint if i < len(args) and args[i].name_hint else f"#{i}"
        what = "a pointer/buffer" if "memref" in str(t) or str(t) == "index" else f"of type {t}"
        return f"parameter '{name}' is {what}: random inputs cover scalars and vectors only"
    return None


def param_names(f: func.FuncOp) -> list[str]:
    args = f.body.blocks[0].args if f.body.blocks else ()
    return [args[i].name_hint if i < len(args) and args[i].name_hint else f"#{i}"
            for i in range(len(f.function_type.inputs.data))]


def random_args(f: func.FuncOp, rng: np.random.Generator, lo: float, hi: float,
                ranges: list[tuple[float, float] | None] | None = None) -> list:
    """Random inputs: a parameter's floats from its own range in `ranges` where it has one, else
    from [lo, hi]."""
    out = []
    for k, t in enumerate(f.function_type.inputs.data):
        own = ranges[k] if ranges is not None else None
        p_lo, p_hi = own if own is not None else (lo, hi)
        elem = t.element_type if isinstance(t, VectorType) else t
        shape = tuple(t.get_shape()) if isinstance(t, VectorType) else ()
        if isinstance(elem, IntegerType):
            if elem.width.data == 1:
                vals = rng.integers(0, 2, size=shape).astype(bool)
            else:
                vals = rng.integers(INT_RANGE[0], INT_RANGE[1] + 1, size=shape)
            out.append(vals if shape else (bool(vals) if elem.width.data == 1 else int(vals)))
        else:
            vals = rng.uniform(p_lo, p_hi, size=shape)
            out.append(vals if shape else float(vals))
    return out


# -- the module check --------------------------------------------------------------------------


@dataclass
class FunctionReport:
    name: str
    status: str  # "ok", "FAIL", "skipped", "error"
    reason: str = ""
    errors: dict[str, float] = field(default_factory=dict)  # comparison -> worst relative error
    worst: dict[str, list] = field(default_factory=dict)  # comparison -> the input that gave it
    samples: int = 0
    domain: tuple[float, float] = DEFAULT_DOMAIN
    param_domains: dict[str, tuple[float, float]] = field(default_factory=dict)  # parameters' own ranges
    worst_sample: dict[str, int] = field(default_factory=dict)  # comparison -> its sample's number (from 1)

    def domain_text(self) -> str:
        rest = f"[{self.domain[0]:g}, {self.domain[1]:g}]"
        if not self.param_domains:
            return f"{self.samples} inputs in {rest}"
        own = ", ".join(f"{n} in [{lo:g}, {hi:g}]" for n, (lo, hi) in self.param_domains.items())
        return f"{self.samples} inputs: {own}, the others in {rest}"


@dataclass
class CheckReport:
    path: str
    functions: list[FunctionReport]
    tol: float

    @property
    def ok(self) -> bool:
        return all(f.status in ("ok", "skipped") for f in self.functions)

    def table(self) -> str:
        lines = [f"diffc check {self.path} (tolerance {self.tol:g}; error = |a - b|_inf / max(|b|_inf, 1))"]
        if any(w.startswith("device") for f in self.functions for w in f.errors):
            lines.append(f"  device rows: float32 on the device against the float64 reference, tolerance {DEVICE_TOL:g}")
        for f in self.functions:
            head = f"@{f.name}: {f.status}"
            if f.status != "ok" or f.reason:
                head += f" ({f.reason})" if f.reason else ""
            if f.samples:
                head += f"  [{f.domain_text()}]"
            lines.append(head)
            if f.errors:
                lines.append(f"  {'comparison':<16} {'max rel err':>12}  worst sample: its input")
                for what, err in f.errors.items():
                    limit = DEVICE_TOL if what.startswith("device") else self.tol
                    mark = "  <-- mismatch" if not err <= limit else ""
                    k = f.worst_sample.get(what)
                    at = f"#{k}: " if k is not None else ""
                    lines.append(f"  {what:<16} {err:>12.3e}  {at}{_show(f.worst.get(what, []))}{mark}")
                inf = [w for w, e in f.errors.items() if e == math.inf and not w.startswith("device")]
                if inf:
                    lines.append(f"  at sample #{f.worst_sample.get(inf[0])} the derivative is NaN or infinite where "
                                 f"finite differences are finite: a wrong derivative, or an input where the "
                                 f"function is not smooth (0^s with s < 1, a kink of max); a parameter's own "
                                 f"range (--domain NAME=LO,HI, domains={{...}}) keeps inputs off such points")
        bad = sum(f.status in ("FAIL", "error") for f in self.functions)
        checked = sum(f.status in ("ok", "FAIL") for f in self.functions)
        lines.append(f"{checked} checked, {bad} failed, "
                     f"{sum(f.status == 'skipped' for f in self.functions)} skipped")
        return "\n".join(lines)


def _show(args: list, most: int = 8) -> str:
    parts = []
    for a in args[:most]:
        if isinstance(a, np.ndarray):
            parts.append("(" + ", ".join(f"{x:.6g}" for x in a.ravel()) + ")")
        elif isinstance(a, float):
            parts.append(f"{a:.6g}")
        else:
            parts.append(str(a))
    return ", ".join(parts) + (f", ... ({len(args)} values)" if len(args) > most else "")


def positive_part(lo: float, hi: float) -> tuple[float, float]:
    """Where a domain gives non-finite values: its positive part, kept off 0 (log, 1/x)."""
    if hi <= 0:
        return 1e-2, 1.0
    start = max(lo, 0.0)
    return start + 1e-2 * (hi - start), hi


def _all_finite(c: Comparison) -> bool:
    parts = [c.prim, c.jac.ravel()]
    return all(np.all(np.isfinite(p)) for p in parts)


def own_ranges(f: func.FuncOp, domains: Mapping[str, tuple[float, float]] | None) -> list:
    """Each parameter's own range from `domains` ("f.p" before "p"), None where it has none."""
    name = f.sym_name.data
    return [None if not domains else domains.get(f"{name}.{p}", domains.get(p)) for p in param_names(f)]


def check_function(module: ModuleOp, f: func.FuncOp, domain=DEFAULT_DOMAIN, samples: int = DEFAULT_SAMPLES,
                   tol: float = DEFAULT_TOL, seed: int = 0, on_device=None,
                   domains: Mapping[str, tuple[float, float]] | None = None) -> FunctionReport:
    """Checks one function at `samples` random inputs in `domain` (a parameter `domains` names:
    in its own range); with `on_device` (a diffc.Module of the same IR) also its calls over
    tensors on the OpenCL device."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # (inputs being tried: 0 * inf, ...)
        warnings.simplefilter("ignore", RuntimeWarning)
        return _check_function(module, f, domain, samples, tol, seed, on_device, domains)


def _check_function(module, f, domain, samples, tol, seed, on_device, domains) -> FunctionReport:
    name = f.sym_name.data
    ranges = own_ranges(f, domains)
    report = FunctionReport(name, "ok", domain=tuple(domain),
                            param_domains={p: tuple(r) for p, r in zip(param_names(f), ranges) if r is not None})
    why = unsupported_parameter(f)
    if why is None and not any(diff.arg_is_differentiable(f, i) for i in range(len(f.function_type.inputs.data))):
        why = "no differentiable parameter"
    if why is None and not any(diff.result_is_differentiable(f, i) for i in range(len(f.function_type.outputs.data))):
        why = "no differentiable result"
    if why is not None:
        report.status, report.reason = "skipped", why
        return report
    try:
        fc, missing = FunctionCheck.build(module, name)
    except CheckSetupError as e:
        report.status, report.reason = "error", str(e)
        return report
    if missing:
        report.reason = "; ".join(f"no {m} mode: {r}" for m, r in missing.items())
    rng = np.random.default_rng(seed)
    points: list[tuple[list, Comparison]] = []
    lo, hi = domain
    for k in range(samples):
        c = args = None
        for _ in range(MAX_DRAWS):
            args = random_args(f, rng, lo, hi, ranges)
            try:
                c = fc.compare(args, seed=seed + k)
            except Exception as e:  # noqa: BLE001 - the interpreter's error at this input
                report.status, report.reason = "error", f"at sample #{k + 1}, input ({_show(args)}): {_one_line(e)}"
                return report
            if _all_finite(c):
                break
            c = None
            # the domain fails (log, sqrt): positive inputs for the parameters without a range of their own
            if lo <= 0 and (lo, hi) == tuple(domain) and not all(r is not None for r in ranges):
                lo, hi = positive_part(lo, hi)
                others = " (the parameters without a --domain of their own)" if report.param_domains else ""
                report.reason = f"non-finite values in [{domain[0]:g}, {domain[1]:g}]: positive inputs used{others}"
                report.domain = (lo, hi)
        if c is None:
            report.status = "skipped"
            report.reason = f"no input in [{lo:g}, {hi:g}] gives finite values"
            if report.param_domains:
                report.reason = f"no input ({report.domain_text().split(': ', 1)[-1]}) gives finite values"
            return report
        report.samples += 1
        points.append((args, c))
        for what, err in c.errors().items():
            if what not in report.errors or not err <= report.errors[what]:
                report.errors[what] = err
                report.worst[what] = args
                report.worst_sample[what] = k + 1
    if on_device is not None:
        if device_callable(f) and not missing:
            for what, (err, args) in device_compare(getattr(on_device, name), points).items():
                report.errors[what], report.worst[what] = err, args
                report.worst_sample[what] = next(k + 1 for k, (a, _) in enumerate(points) if a is args)
        else:
            report.reason = "; ".join(filter(None, [report.reason, "not run on the device: calls over tensors take "
                                                    "scalar parameters and one float32/float64 result"]))
    if any(not e <= (DEVICE_TOL if what.startswith("device") else tol) for what, e in report.errors.items()):
        report.status = "FAIL"
    return report


DEVICE_TOL = 1e-3  # the device computes in float32 from inputs rounded to float32


def device_callable(f: func.FuncOp) -> bool:
    """Whether calls over tensors (m.f(...), .fwds, .bwds) take `f`: scalar float32/float64 or
    32/64-bit integer parameters, one float32/float64 result."""
    from xdsl.dialects.builtin import Float32Type, Float64Type

    ok_float = (Float32Type, Float64Type)
    outs = f.function_type.outputs.data
    return (len(outs) == 1 and isinstance(outs[0], ok_float)
            and all(isinstance(t, ok_float) or (isinstance(t, IntegerType) and t.width.data in (32, 64))
                    for t in f.function_type.inputs.data))


def device_compare(fn, points: list[tuple[list, Comparison]]) -> dict[str, tuple[float, list]]:
    """Runs the primal, forward mode (tangents v) and reverse mode (adjoints u) of `fn` (a
    diffc.runtime Function) on the device, one element per input point, and compares them with
    the float64 reference of each point: {comparison: (worst error, its input)}."""
    from diffc.runtime.tensor import Tensor

    n = len(points)
    diffable = [i for i, d in enumerate(fn.diffable) if d]

    def column(i, values):
        return Tensor.from_numpy(np.array(values, dtype=fn.dtypes[i]))

    def inputs():
        return [column(i, [args[i] for args, _ in points]) for i in range(len(fn.params))]

    out = {}

    def record(what, got, want_rows):
        for k, (args, _) in enumerate(points):
            err = rel_error(np.atleast_1d(got[k]), np.atleast_1d(want_rows[k]))
            if what not in out or not err <= out[what][0]:
                out[what] = (err, args)

    xs = inputs()
    record("device primal", fn(*xs, _result="numpy"), [c.prim[0] for _, c in points])
    xs = inputs()
    for j, i in enumerate(diffable):
        xs[i].with_grads(zero=False).grad.copy_from_numpy(np.array([c.v[j] for _, c in points], fn.dtypes[i]))
    y = fn.fwds(*xs)
    record("device fwd", y.grad.to_numpy(), [(c.jac @ c.v)[0] for _, c in points])
    xs = inputs()
    for i in diffable:
        xs[i].with_grads(zero=True)
    y = Tensor((n,), fn.result_dtype).with_grads(zero=False)
    y.grad.copy_from_numpy(np.array([c.u[0] for _, c in points], fn.result_dtype))
    fn.bwds(*xs, _result=y)
    got = np.stack([xs[i].grad.to_numpy() for i in diffable], axis=1)
    record("device bwd", got, [c.jac.T @ c.u for _, c in points])
    return out


def checkable_functions(module: ModuleOp) -> list[func.FuncOp]:
    """The differentiable functions of a module, entry points aside."""
    from diffc.kernel_program import is_compute_entry

    return [op for op in module.ops if isinstance(op, func.FuncOp) and diff.is_differentiable_func(op)
            and not is_compute_entry(op) and op.body.blocks]


def check(module, domain=DEFAULT_DOMAIN, samples: int = DEFAULT_SAMPLES, tol: float = DEFAULT_TOL,
          seed: int = 0, functions: list[str] | None = None, device: bool = False,
          domains: Mapping[str, tuple[float, float]] | None = None) -> CheckReport:
    """Checks every differentiable function of `module` (a diffc.Module, an IR ModuleOp, or a
    path to a .slang / .mlir file) in diffc.interp; `functions` limits it to those names.
    Floats come from `domain`, or for a parameter `domains` names ("p", or "f.p" for function
    f's alone) from its own (lo, hi); a name that is no checked function's parameter is a
    ValueError. `device=True` also runs the functions that calls over tensors take on the
    OpenCL device (DIFFC_DEVICE) and compares them with the float64 reference, to DEVICE_TOL."""
    path, on_device = "<module>", None
    if isinstance(module, str | os.PathLike):
        from diffc.runtime.module import load_module

        module = load_module(module)
    if device and not hasattr(module, "ir"):
        from diffc.runtime.module import Module

        module = Module(module)
    if hasattr(module, "ir"):  # a diffc.Module
        path, on_device, module = module.path, module if device else None, module.ir
    chosen = [f for f in checkable_functions(module) if functions is None or f.sym_name.data in functions]
    _check_domains(chosen, domain, domains)
    reports = [check_function(module, f, domain, samples, tol, seed, on_device, domains) for f in chosen]
    return CheckReport(path, reports, tol)


def _check_domains(chosen: list[func.FuncOp], domain, domains) -> None:
    """Each range is lo < hi, and each name names a parameter of a function being checked."""
    for name, (lo, hi) in [("the domain", domain), *((n, r) for n, r in (domains or {}).items())]:
        if not lo < hi:
            raise ValueError(f"{name}: a range needs lo < hi, got ({lo:g}, {hi:g})")
    known = {p for f in chosen for p in param_names(f)} | {f"{f.sym_name.data}.{p}" for f in chosen for p in param_names(f)}
    unknown = [n for n in (domains or {}) if n not in known]
    if unknown:
        have = ", ".join(sorted({p for f in chosen for p in param_names(f)})) or "none"
        raise ValueError(f"no function checked has a parameter '{unknown[0]}' for its own domain "
                         f"(parameters: {have}; 'f.p' names function f's parameter p)")
