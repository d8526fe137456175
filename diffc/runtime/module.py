"""`diffc.load_module(path)` and SlangPy-style calls of its functions over tensors.

    m = diffc.load_module("poly.mlir")
    y = m.polynomial(a=2, b=8, c=-1, x=x, _result="tensor")     # element-wise, one kernel
    m.polynomial.bwds(a=2, b=8, c=-1, x=x, _result=y)           # x.grad += df/dx * y.grad
    t = m.polynomial.fwds(a=2, b=8, c=-1, x=x)                  # t.grad: tangent from x.grad
    m.learnGradient.dispatch(thread_count=n, network={...}, count=n)  # a compute entry point

Arguments broadcast as numpy arrays do; Python numbers are kernel scalar arguments. Each
distinct (mode, argument kinds, rank) gets its own generated kernel, built once (see kernels.py
for the kernel's form and program.py for the caches). A call like the one before it in its
mode (same tensors and buffers, same numbers) replays that launch (launch_plan.py).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from diffc.runtime.waiting import finish
from diffc.diagnostics import read_source
from diffc.dialects import diff
from diffc.runtime.device import device, kernel_settings
from diffc.runtime.errors import CallError, RuntimeDiffcError, located_failure, with_source_line
from diffc.runtime.kernels import REDUCE_GROUPS_PER_UNIT, reduce_groups as _reduce_groups  # noqa: F401
from diffc.runtime.kernels import (
    VECTOR_WIDTH,
    ArgSpec,
    KernelSpec,
    broadcast_period,
    broadcast_strides,
    build_kernel,
    kernel_layout,
    lower_kernel_module,
)
from diffc.runtime import layouts, module_cache, pending, record_calls, torch_records
from diffc.runtime.launch_plan import MISS, LaunchPlan
from diffc.runtime.module_cache import np_dtype as _np_dtype  # noqa: F401 (imported from here)
from diffc.runtime.staging import Staging, read_later, stage, upload
from diffc.runtime.sanitize import check_initialized, enabled_by_default
from diffc.runtime.status import StatusBuffers, run_growing_tape
from diffc.runtime.tensor import Tensor
from diffc.runtime import torch_bridge, torch_ops
from diffc.runtime.torch_bridge import holds_torch

# Set to False to make every call use the one-element-per-work-item kernel (tests use this).
VECTORIZE = os.environ.get("DIFFC_VECTORIZE", "1") != "0"
WORK_GROUP = 256


# -- loading ------------------------------------------------------------------------------


def parse_source(text: str, filename: str, options: dict | None = None) -> ModuleOp:
    """IR text (.mlir) or, through `diffc.registry.FRONTENDS`, another language (the compiler's
    parser), verified; failures are RuntimeDiffcError. `options`: the front end's keyword
    arguments (the Slang one's `conformance_ids`)."""
    from diffc.compiler import parse_source as parse
    from diffc.frontend.api_signature import recording

    with recording():  # Slang functions keep their Slang-level signatures (runtime/layouts.py)
        return parse(text, filename, RuntimeDiffcError, options)


def load_module(path: str | os.PathLike, check: bool | None = None,
                conformance_ids: dict[str, dict[str, int]] | None = None) -> Module:
    """Reads an .mlir file (or a file a registered front end reads) into a callable Module.
    `check=True` (default: DIFFC_CHECK=1) is the sanitizer mode (runtime/sanitize.py).
    `conformance_ids` (Slang): interface -> {struct: id}, the tags of dynamic interface values."""
    p = Path(path)
    if not p.is_file():
        from diffc.runtime.errors import ModuleFileNotFoundError

        what = "is a folder, not a file" if p.is_dir() else "no such file"
        raise ModuleFileNotFoundError(f"error: load_module: {what}: '{path}'", path)
    return _cached_module(str(p), {str(p): read_source(p)}, check, _options(conformance_ids))


def _options(conformance_ids) -> dict:
    return {"conformance_ids": conformance_ids} if conformance_ids else {}


def _cached_module(path: str, sources: dict[str, str], check: bool | None, options: dict | None = None) -> Module:
    """The Module of file `path` whose text is `sources[path]`: from the module cache where an
    unchanged module is there (the front end skipped: module_cache.py), else compiled and stored."""
    from diffc.frontend.source import files_read

    # front-end options make another module: they are part of the key (as a file no source names)
    first = module_cache.module_key({**sources, "\0frontend options": repr(options)} if options else sources)
    # then the other files it was last made from, as they are now (module_cache.py)
    read_before = module_cache.load_dependencies(first)
    if read_before is not None:
        key = module_cache.with_dependencies(first, read_before)
        signatures = module_cache.load_signatures(key)
        if signatures is not None:
            return Module(None, path, sources, signatures=signatures, cache_key=key, check=check, options=options)
    with files_read.recording() as read:
        ir = parse_source(sources[path], path, options)
    own = {os.path.abspath(p) for p in sources}  # (already in the first key)
    read = {p: h for p, h in read.items() if p not in own}
    key = module_cache.with_dependencies(first, read)
    m = Module(ir, path, sources, cache_key=key, check=check, options=options)
    module_cache.store_dependencies(first, read)
    module_cache.store_signatures(key, m._signatures)
    return m


def load_module_from_string(text: str, filename: str = "<string>.mlir", check: bool | None = None,
                            conformance_ids: dict[str, dict[str, int]] | None = None) -> Module:
    options = _options(conformance_ids)
    return Module(parse_source(text, filename, options), filename, {filename: text}, check=check, options=options)


class Module:
    """The functions of a loaded module, as attributes: `m.f(...)`, `m.f.bwds(...)`."""

    def __init__(self, ir: ModuleOp | None, path: str = "<module>", sources: dict[str, str] | None = None, *,
                 signatures: dict[str, module_cache.FunctionSignature] | None = None, cache_key: str | None = None,
                 check: bool | None = None, options: dict | None = None):
        """`ir` may be None when `signatures` come from the module cache: the IR is then made
        from `sources[path]` when first wanted."""
        self._ir = ir
        self.path = path
        self.options = dict(options or {})  # the front end's (conformance_ids), for each recompile
        self.sources = dict(sources or {})  # file -> text, for the source line of a located error
        if signatures is None:
            signatures = {op.sym_name.data: module_cache.signature_of(op) for op in ir.walk()
                          if isinstance(op, func.FuncOp)}
        self._signatures = signatures
        self.cache_key = cache_key
        self._functions: dict[str, Function] = {}
        self._generics: dict | None = None  # generic functions by name (generic_calls.py), read on first use
        # rerun a launch whose while loop overran its [MaxIters] with a larger tape (status.py)
        self.grow_tape = os.environ.get("DIFFC_GROW_TAPE", "0") not in ("", "0")
        self._entry_program = None  # the compute entry points' program (dispatch.py), built on first use
        # the sanitizer mode: derivative code reports NaN/Inf with its source line (sanitize.py)
        self.check = enabled_by_default() if check is None else bool(check)
        self.handle = torch_ops.register(self)  # (torch.compile makes its functions by it: torch_ops.py)

    @property
    def ir(self) -> ModuleOp:
        if self._ir is None:
            self._ir = parse_source(self.sources[self.path], self.path, self.options)
        return self._ir

    @property
    def _funcs(self) -> dict[str, func.FuncOp]:
        return {op.sym_name.data: op for op in self.ir.walk() if isinstance(op, func.FuncOp)}

    def __getattr__(self, name: str) -> Function:
        if name.startswith("__"):
            raise AttributeError(name)
        if torch_ops.compiling():  # traced by torch.compile: made and looked up outside the trace
            return torch_ops.Traced(self.handle, name)
        fn = self._functions.get(name)
        return fn if fn is not None else self._attribute(name)

    def _attribute(self, name: str):
        """`__getattr__`'s function or generic function not made yet."""
        if name not in self._signatures:
            # a generic function: specialized from each call's arguments (generic_calls.py)
            from diffc.runtime.generic_calls import GenericFunction, generic_functions

            if self._generics is None:
                self._generics = generic_functions(self)
            decl = self._generics.get(name)
            if decl is None:
                have = ", ".join(sorted(self._signatures)) or "none"
                raise AttributeError(f"module '{self.path}' has no function '{name}' (functions: {have})")
            if not isinstance(decl, GenericFunction):  # (kept apart from _functions: no kernels)
                decl = self._generics[name] = GenericFunction(self, decl)
            return decl
        fn = self._functions[name] = Function(self, self._signatures[name])
        return fn

    def byte_layout(self, struct: str):
        """The numpy dtype of `struct` as a pointer of bytes reads it (a struct of several scalar
        types behind a pointer or in a structured buffer): runtime/byte_structs.py."""
        from diffc.runtime.byte_structs import struct_dtype

        return struct_dtype(self.ir, struct)

    def with_source(self, text: str) -> Module:
        """This module's file compiled from `text` instead (the module cache's entry where it has
        one): generic_calls.py appends the use of an instance to the source."""
        return _cached_module(self.path, {**self.sources, self.path: text}, self.check, self.options)

    def __dir__(self):
        return [*super().__dir__(), *self._signatures]

    def __repr__(self) -> str:
        return f"<diffc.Module {self.path}: {', '.join(sorted(self._signatures))}>"


# -- calls --------------------------------------------------------------------------------


class Function:
    def __init__(self, module: Module, sig: module_cache.FunctionSignature):
        self.module = module
        self.sig = sig
        self.name = sig.name
        self.params = list(sig.params)
        self._index = {p: i for i, p in enumerate(self.params)}
        self._named_after = [tuple(self.params[k:]) for k in range(len(self.params) + 1)]  # (_bind)
        self.dtypes = list(sig.dtypes)
        self.result_dtype = sig.result_dtype
        self._n_results = len(sig.result_types)
        self.differentiable = sig.differentiable
        self.diffable = list(sig.diffable)
        self.is_entry = sig.is_entry
        # functions with other than scalar parameters run through record_calls.py
        self.layout = layouts.layout_of(sig.api) if sig.api else None
        self.general = self.layout is not None and not layouts.is_plain(self.layout) and not self.is_entry
        self._record_kernels: dict = {}
        self._record_args: dict = {}  # spec -> the arguments its kernel was last launched with
        self._record_plans: dict = {}  # mode -> the last record call's launch, to replay
        self._op = None
        self._kernels: dict[KernelSpec, object] = {}
        self.sources: dict[KernelSpec, str] = {}
        self._last_args: dict[KernelSpec, list] = {}
        self._layouts: dict[KernelSpec, list[tuple]] = {}  # kernels.kernel_layout, per spec
        self._plans: dict[str, LaunchPlan | None] = {}  # mode -> the last call's launch, to replay
        self._status: dict[KernelSpec, object] = {}  # spec -> its StatusBuffers (None: no checks)
        self.staging = Staging()  # kept device copies of arrays of calls read back at once (staging.py)
        self.torch_views: dict = {}  # numpy views of the last call's small torch tensors (torch_bridge.py)
        self.last_event = None
        self.handle = torch_ops.register(self)  # (the key of its torch operator calls: torch_ops.py)

    @property
    def op(self) -> func.FuncOp:
        """The function's op in the module's IR (made from the source when the module came from
        the cache)."""
        if self._op is None:
            self._op = self.module._funcs[self.name]
        return self._op

    def __repr__(self) -> str:
        if self.general:  # the Slang-level parameters, not the IR's leaves
            return f"<diffc.Function {self.name}({', '.join(p.name for p in self.layout.params)})>"
        return f"<diffc.Function {self.name}({', '.join(self.params)})>"

    # -- public calls -------------------------------------------------------------------

    def __call__(self, *args, _result="tensor", **kwargs):
        if torch_ops.compiling():  # traced by torch.compile: one custom operator node
            return torch_ops.call(self.handle, "", args, kwargs, _result)
        if self.general:
            return self._record_call("call", args, kwargs, _result)
        plan = self._plans.get("call")
        # (a plan a numpy or torch call made has every argument positional: such calls, which
        # never replay it from here, skip the attempt)
        if plan is not None and plan.npos == len(args):
            done = plan.replay(args, kwargs, _result, _settings())
            if done is not MISS:
                out, self.last_event = done
                return out.to_numpy() if isinstance(_result, str) and _result == "numpy" else out
        if holds_torch(args, kwargs, _result):
            return torch_bridge.call(self, args, kwargs, _result)
        values = self._bind(args, kwargs)
        if type(_result) is str and _result == "numpy":  # read back at once: arrays staged (staging.py)
            return self._call_host(values)[0]
        out = _result if isinstance(_result, Tensor) else None
        return self._run("call", values, _result, out, len(args))

    def bwds(self, *args, _result=None, **kwargs):
        """Accumulates, into the `.grad` of each input tensor that has one, the gradient of
        the function's result weighted by `_result.grad` (a vector-Jacobian product)."""
        self._need_differentiable("bwds")
        if self.general:
            return self._record_call("bwds", args, kwargs, _result)
        if holds_torch(args, kwargs, _result):
            return torch_bridge.bwds(self, args, kwargs, _result)
        if not isinstance(_result, Tensor):
            raise CallError(
                f"error: {self.name}.bwds: '_result' must be the result Tensor (with .grad holding "
                f"the output derivatives), got {type(_result).__name__}",
                "_result",
            )
        if _result.grad is None:
            raise CallError(
                f"error: {self.name}.bwds: '_result' has no .grad: call _result.with_grads() and fill it "
                "with the output derivatives",
                "_result",
            )
        plan = self._plans.get("bwds")
        if plan is not None:
            done = plan.replay(args, kwargs, _result, _settings())
            if done is not MISS:
                self.last_event = done[1]
                return None
        values = self._bind(args, kwargs)
        self._run("bwds", values, _result, _result, len(args))
        return None

    def fwds(self, *args, _result="tensor", **kwargs):
        """Forward mode: each input tensor's `.grad` is its tangent (none: zero); returns the
        result with `.grad` holding the output tangent."""
        self._need_differentiable("fwds")
        if self.general:
            return self._record_call("fwds", args, kwargs, _result)
        plan = self._plans.get("fwds")
        if plan is not None:
            done = plan.replay(args, kwargs, _result, _settings())
            if done is not MISS:
                out, self.last_event = done
                return (out.to_numpy(), out.grad.to_numpy()) if isinstance(_result, str) and _result == "numpy" else out
        if holds_torch(args, kwargs, _result):
            return torch_bridge.fwds(self, args, kwargs, _result)
        values = self._bind(args, kwargs)
        out = _result if isinstance(_result, Tensor) else None
        if out is not None and out.grad is None:
            out.with_grads()
        return self._run("fwds", values, _result, out, len(args))

    def dispatch(self, thread_count, **kwargs):
        """Runs this compute entry point over `thread_count` threads (an int or (x, y, z),
        rounded up to whole [numthreads] groups); arguments by parameter name, see dispatch.py.
        Returns the launch's OpenCL event (None when there are no threads, or where torch CUDA
        tensors ran it on torch's stream: cuda_dispatch.py)."""
        from diffc.runtime import cuda_dispatch
        from diffc.runtime.dispatch import dispatch

        leaves = cuda_dispatch.uses_torch(kwargs)
        if leaves and self.is_entry:  # torch tensors: CUDA kernels on torch's stream, or OpenCL over copies
            if cuda_dispatch.dispatch(self, thread_count, kwargs, leaves):
                cuda_dispatch.count(self.name, "cuda")
                self.last_event = None
                return None
            cuda_dispatch.count(self.name, "fallback")
            self.last_event = cuda_dispatch.fallback(self, thread_count, kwargs, leaves)
            return self.last_event
        self.last_event = dispatch(self, thread_count, kwargs)
        return self.last_event

    def _record_call(self, mode: str, args: tuple, kwargs: dict, result):
        """A call of a function with other than scalar parameters (record_calls.py)."""
        if torch_records.holds_torch(args, kwargs, result):
            return torch_records.call(self, mode, args, kwargs, result)
        return record_calls.run(self, mode, args, kwargs, result)

    # -- binding ------------------------------------------------------------------------

    def _need_differentiable(self, what: str) -> None:
        if not self.differentiable:
            raise CallError(
                f"error: {self.name}.{what}: @{self.name} is not differentiable (mark it "
                f"{diff.DIFFERENTIABLE}, [Differentiable] in Slang)",
                self.name,
            )

    def _bind(self, args: tuple, kwargs: dict) -> list:
        # the common case in one step: every parameter after the positional ones given by name
        # (a tiny call's overhead is mostly steps like these); anything else is checked below
        npos = len(args)
        if npos + len(kwargs) == len(self.params) and not self.is_entry:
            try:
                return [*args, *map(kwargs.__getitem__, self._named_after[npos])]
            except KeyError:
                pass
        if self.is_entry:
            raise CallError(
                f"error: {self.name}(): @{self.name} is a compute entry point: run it with "
                f"m.{self.name}.dispatch(thread_count=..., ...)",
                self.name,
            )
        n = len(self.params)
        if len(args) > n:
            raise CallError(f"error: {self.name}() takes {n} arguments ({', '.join(self.params)}), got {len(args)}")
        values = list(args) + [_MISSING] * (n - len(args))
        for key, v in kwargs.items():
            i = self._index.get(key)
            if i is None:
                raise CallError(
                    f"error: {self.name}() got an unknown argument '{key}' (parameters: {', '.join(self.params)})", key
                )
            if values[i] is not _MISSING:
                raise CallError(f"error: {self.name}() got argument '{key}' twice", key)
            values[i] = v
        for i, v in enumerate(values):
            if v is _MISSING:
                raise CallError(f"error: {self.name}() is missing argument '{self.params[i]}'", self.params[i])
        return values

    def _classify(self, values: list, events: list | None = None):
        """(index, Tensor) of the tensor arguments and {index: numpy scalar} of the others. Arrays
        are copied to the device: without waiting when `events` is a list (staging.py)."""
        tensors: list[tuple[int, Tensor]] = []
        scalars: dict[int, object] = {}
        for i, v in enumerate(values):
            want = self.dtypes[i]
            # the common cases first: a Tensor of the parameter's dtype, a Python float for a
            # float parameter (this loop runs on every call: tiny calls are overhead-bound)
            if type(v) is Tensor and v.dtype == want:
                tensors.append((i, v))
                continue
            if type(v) is float and want is not None and want.kind == "f":
                scalars[i] = want.type(v)
                continue
            name = self.params[i]
            if want is None:
                raise CallError(
                    f"error: {self.name}(): parameter '{name}' has type {self.sig.param_types[i]}, "
                    "which calls over tensors cannot pass",
                    name,
                )
            if isinstance(v, np.ndarray | np.generic) and v.dtype.kind not in "biuf":
                raise CallError(f"error: {self.name}(): argument '{name}' has dtype {v.dtype}; calls take bool, "
                                f"integer or float data ({want.name} expected)", name)
            if isinstance(v, np.ndarray) and v.ndim > 0:
                if want.kind in "iu" and v.dtype.kind == "f":
                    raise CallError(f"error: {self.name}(): argument '{name}' is a {v.dtype} array, parameter is "
                                    f"{want.name}", name)
                v = Tensor.from_numpy(v.astype(want, copy=False)) if events is None else upload(v, want, events)
            if isinstance(v, Tensor):
                if v.dtype != want:
                    raise CallError(
                        f"error: {self.name}(): argument '{name}' is a {v.dtype.name} Tensor, parameter has "
                        f"type {self.sig.param_types[i]} ({want.name})",
                        name,
                    )
                tensors.append((i, v))
            elif isinstance(v, (bool, int, float, np.number, np.ndarray)):
                if want.kind in "iu" and (isinstance(v, (float, np.floating)) or getattr(v, "dtype", None) is not None
                                          and v.dtype.kind == "f"):
                    raise CallError(f"error: {self.name}(): argument '{name}' is a float, parameter is {want.name}", name)
                if want.kind in "iu" and not np.iinfo(want).min <= int(v) <= np.iinfo(want).max:
                    raise CallError(f"error: {self.name}(): argument '{name}' = {int(v)} does not fit in {want.name}", name)
                scalars[i] = want.type(v)
            else:
                raise CallError(
                    f"error: {self.name}(): argument '{name}' must be a Tensor, a numpy array or a number, "
                    f"got {type(v).__name__}",
                    name,
                )
        return tensors, scalars

    def _out_shape(self, tensors, out: Tensor | None) -> tuple[int, ...]:
        shapes = [t.shape for _, t in tensors]
        if out is not None:
            shapes.append(out.shape)
        if shapes and all(s == shapes[0] for s in shapes):
            return shapes[0]
        shape: tuple[int, ...] = ()
        seen: list[str] = []
        for i, t in tensors:
            try:
                shape = np.broadcast_shapes(shape, t.shape)
            except ValueError:
                raise CallError(
                    f"error: {self.name}(): argument '{self.params[i]}' has shape {t.shape}, which does not "
                    f"broadcast with shape {shape} of {', '.join(repr(s) for s in seen)}",
                    self.params[i],
                ) from None
            seen.append(self.params[i])
        if out is not None and not (_broadcasts(shape, out.shape) and np.broadcast_shapes(shape, out.shape) == out.shape):
            raise CallError(
                f"error: {self.name}(): '_result' has shape {out.shape}, but the arguments broadcast to {shape}",
                "_result",
            )
        return out.shape if out is not None else shape

    # -- running ------------------------------------------------------------------------

    def _call_host(self, host: list) -> tuple[np.ndarray, dict[int, tuple]]:
        """The call's result read back, at bound arguments whose arrays are host data (numpy, or
        torch tensors as numpy), and the device copies of those arrays (staging.stage; a torch
        backward reads them instead of copying again). The copies go into the tensors the last
        call used, so that a repeated call replays its launch."""
        a, staged, events = self._start_host(host)
        self._finish_host(events)
        return a, staged  # (the copies are done: `events` may go)

    def _start_host(self, host: list) -> tuple[np.ndarray, dict[int, tuple], list]:
        """`_call_host` without the wait: the result array the device may still be filling, the
        staged device copies, and the copies' events (the result's read last). The caller
        calls `_finish_host` with the events before anything reads the array (the torch bridge
        may build its result and autograd graph first, while the device runs: OVERLAP)."""
        events: list = []
        staged = stage(self.dtypes, self.staging, host, events)
        values = [staged[i][0] if i in staged else v for i, v in enumerate(host)] if staged else host
        out = self._run_bound("call", values, "tensor")
        a = np.empty(out.shape, out.dtype)
        if out.size:
            events.append(read_later(a, out.buffer))
        return a, staged, events

    @staticmethod
    def _finish_host(events: list) -> None:
        """Waits for `_start_host`'s copies. (By finishing the queue, which a blocking read would
        wait for too: on PoCL an event's wait costs ~14 us more than either.)"""
        if events:
            finish(device().queue)
        pending.settle()  # a checked launch's error comes before its values (runtime/pending.py)

    def _run_bound(self, mode: str, values: list, result):
        """`mode`'s launch at bound `values` (all positional) with `result` ("tensor", or the
        result Tensor of a bwds): a replay of the last launch where this is the same call (the
        kept tensors of staging.py make it so), else `_run`. Returns the output Tensor. (One
        plan per mode, whichever call made it: a plan replays the kernel's arguments as its own
        launch left them, so it must be the last launch of its kernel.)"""
        plan = self._plans.get(mode)
        if plan is not None:
            done = plan.replay(values, _NO_KWARGS, result, _settings())
            if done is not MISS:
                out, self.last_event = done
                return out
        return self._run(mode, values, result, result if isinstance(result, Tensor) else None, len(values))

    def _run_into(self, values: list, out: Tensor) -> None:
        """The call's launch at bound `values` into result Tensor `out`, replaying the last launch
        with `out`'s buffer where only the result differs (cuda_shared.py: a new block each call)."""
        plan = self._plans.get("call")
        if plan is not None:
            done = plan.replay_into(values, out, _settings())
            if done is not MISS:
                self.last_event = done[1]
                return
        self._run("call", values, out, out, len(values))

    def _run(self, mode: str, values: list, result, out: Tensor | None, npos: int = 0):
        self._plans[mode] = None  # made again by a launch that completes
        if self._n_results != 1 or self.result_dtype is None:
            raise CallError(
                f"error: {self.name}(): calls over tensors need a function with one scalar result; "
                f"@{self.name} returns {list(self.sig.result_types)}",
                self.name,
            )
        if out is not None and out.dtype != self.result_dtype:
            raise CallError(
                f"error: {self.name}(): '_result' is a {out.dtype.name} Tensor, the function returns {self.result_dtype.name}",
                "_result",
            )
        if not (out is not None or (isinstance(result, str) and result in ("tensor", "numpy"))):
            raise CallError(f"error: {self.name}(): '_result' must be \"tensor\", \"numpy\" or a Tensor, got {result!r}", "_result")
        # a result read back before returning waits for the arrays' copies too (staging.py)
        events = [] if type(result) is str and result == "numpy" else None
        tensors, scalars = self._classify(values, events)
        shape = self._out_shape(tensors, out)
        if out is None:
            out = Tensor(shape, self.result_dtype)
            if mode == "fwds":
                out.with_grads(zero=False)
        size = out.size
        specs: list[ArgSpec] = [ArgSpec("s")] * len(values)
        for i, t in tensors:
            kind = "f" if t.shape == shape else "b"
            grad = False
            if mode != "call" and self.diffable[i] and t.grad is not None:
                grad = True
                if mode == "bwds" and kind == "b" and t.dtype != np.float32:
                    raise CallError(
                        f"error: {self.name}.bwds: argument '{self.params[i]}' is broadcast, and accumulating its "
                        f"{t.dtype.name} gradient needs atomics that exist only for float32",
                        self.params[i],
                    )
            specs[i] = ArgSpec(kind, grad)
        if mode != "call":
            grads = [(self.params[i], t.grad) for i, t in tensors if specs[i].grad]
            if self.module.check:  # the sanitizer: no read of a gradient nobody wrote
                check_initialized(self.name, mode, ([("_result", out.grad)] if mode == "bwds" else []) + grads)
            # what the launch writes: the tangent out (fwds), every input's gradient (bwds)
            for g in [out.grad] if mode == "fwds" else [g for _, g in grads]:
                g.uninitialized = False
        bcast = [i for i, s in enumerate(specs) if s.kind == "b"]
        vectorized = VECTORIZE and not bcast
        # broadcast gradients are summed per work-group (kernels.py, the reduce form)
        reduced = sum(1 for i in bcast if specs[i].grad)
        group = _reduce_group_size(reduced) if mode == "bwds" and reduced else 0
        blocked = group > 0 and _reduce_blocked()
        spec = KernelSpec(self.name, mode, tuple(specs), len(shape) if bcast else 0, vectorized, group, blocked)
        kernel = self._kernels.get(spec)
        if kernel is None:
            kernel = self._kernels[spec] = self._compile(spec)
        if size:
            global_size, wg, out_arg = run_growing_tape(
                self, spec, lambda k: self._launch(k, spec, values, tensors, scalars, out, shape, size),
                [by_grad for i, t in tensors if specs[i].grad for by_grad in [t.grad]] if mode == "bwds" else [])
            if self._status.get(spec) is not None:
                return self._result(result, mode, out)  # a replay would skip the status check
            kernel = self._kernels[spec]
            self._plans[mode] = LaunchPlan.make(
                self.params, npos, values, result, [mode != "call" and d for d in self.diffable], mode != "call",
                _settings(), kernel, device().queue, global_size, wg, self._last_args[spec], out_arg, shape,
                self.result_dtype,
            )
        return self._result(result, mode, out)

    @staticmethod
    def _result(result, mode: str, out: Tensor):
        if isinstance(result, str) and result == "numpy":
            return out.to_numpy() if mode == "call" else (out.to_numpy(), out.grad.to_numpy())
        return out

    def _launch(self, kernel, spec: KernelSpec, values, tensors, scalars, out: Tensor, shape, size: int):
        """Sets the kernel's arguments and enqueues it; returns (global size, work-group size,
        index of the result's buffer in the argument list), what a LaunchPlan replays."""
        import pyopencl as cl

        by_index = dict(tensors)
        layout = self._layouts.get(spec)
        if layout is None:
            layout = self._layouts[spec] = kernel_layout(spec)
        args: list = []
        out_arg = -1
        strides: dict[int, tuple] = {}
        for key in layout:  # the kernel's parameters, as the builder laid them out
            kind = key[0]
            if kind == "buf":
                args.append(by_index[key[1]].buffer)
            elif kind == "grad":
                args.append(by_index[key[1]].grad.buffer)
            elif kind == "val":
                args.append(scalars[key[1]])
            elif kind == "out":
                out_arg = len(args)
                args.append(out.buffer)
            elif kind == "out_grad":
                args.append(out.grad.buffer)
            elif kind == "n":
                args.append(np.int64(size))
            elif kind == "shape":
                args.append(np.int64(shape[key[1]]))
            else:  # ("stride", i, d)
                i = key[1]
                if i not in strides:
                    strides[i] = _broadcast_strides(by_index[i].shape, shape)
                args.append(np.int64(strides[i][key[2]]))
        status = self._status.get(spec)
        if status is not None:
            args.extend(status.buffers)
            status.reset()
        items = -(-size // VECTOR_WIDTH) if spec.vectorized else size
        dev = device()
        wg = min(WORK_GROUP, dev.max_work_group_size)
        global_size = -(-items // wg) * wg
        if spec.reduces:
            wg = spec.group
            periods = [
                broadcast_period(shape, _broadcast_strides(by_index[i].shape, shape))
                for i, s in enumerate(spec.args)
                if s.kind == "b" and s.grad
            ]
            period = 1 if spec.blocked else math.lcm(*periods)  # blocks need no alignment
            global_size = _reduce_groups(size, wg, period, dev.compute_units) * wg
        # Kernels keep their arguments: set only those that changed since the last launch.
        last = self._last_args.get(spec)
        if last is None or len(last) != len(args):
            kernel.set_args(*args)
        else:
            for k, (new, old) in enumerate(zip(args, last)):
                # (numpy scalars by their bytes: -0.0 == 0.0, but a kernel can tell them apart)
                if new is not old and not (type(new) is type(old) and isinstance(new, np.generic)
                                           and new.tobytes() == old.tobytes()):
                    kernel.set_arg(k, new)
        self._last_args[spec] = args
        # the OpenCL event of the latest launch (profiling is on: benchmarks read kernel times)
        self.last_event = cl.enqueue_nd_range_kernel(dev.queue, kernel, (global_size,), (wg,))
        if status is not None:
            status.check(f"{spec.mode} of @{self.name}", self.module.sources, spec.kernel_name)
        return global_size, wg, out_arg

    def lowered_kernel(self, spec: KernelSpec, settings):
        """(the kernel module of `spec` lowered under `settings`, its loop-overrun status slots):
        what the OpenCL build (`_compile`) and the CUDA one (cuda_kernels.build_source) emit."""
        from xdsl.utils.exceptions import PassFailedException

        from diffc import compiler

        module = self.module.ir.clone()
        f = next(op for op in module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data == self.name)
        build_kernel(module, f, spec, self.params)
        primal = compiler.primal_functions(module)
        try:
            lower_kernel_module(module, spec)
            slots = compiler.lower_call_kernel(module, settings, primal)
        except PassFailedException as e:
            raise located_failure(e, self.module, f"{spec.mode} of @{self.name}: ") from None
        return module, slots

    def _compile(self, spec: KernelSpec):
        import pyopencl as cl

        from diffc import compiler
        from diffc.backend.opencl import build_options, emit_opencl
        from diffc.runtime.program import build_program

        settings = kernel_settings(self.module.check)
        options = compiler.emit_options(settings)
        cached = module_cache.kernel_key(self.module.cache_key, spec, settings)
        # (the sanitizer's kernels have status buffers: they are never kept in the cache)
        source = None if settings.sanitize else module_cache.load_kernel_source(cached)
        self._status[spec] = None  # only kernels without loop-overrun checks are kept in the cache
        if source is None:
            module, slots = self.lowered_kernel(spec, settings)
            self._status[spec] = StatusBuffers(slots) if slots else None  # loop-overrun checks: trailing kernel buffers
            source = with_source_line(emit_opencl, self.module.sources)(module, options)
            if self._status[spec] is None:
                module_cache.store_kernel_source(cached, source)
        self.sources[spec] = source
        program = build_program(source, tuple(build_options(options)))
        return cl.Kernel(program, spec.kernel_name)


_MISSING = object()
_NO_KWARGS: dict = {}


# bytes of work-group memory the reduce form takes per work-item and reduced argument: its sum
# (at most a double) and its target's index (kernels.py)
REDUCE_BYTES_PER_ITEM = 16


def _reduce_group_size(reduced: int) -> int:
    """The reduce form's work-group size for `reduced` summed arguments: WORK_GROUP, or the
    largest power of two the device takes whose work-group memory (a sum and a key per work-item
    and argument) fits the device's: a call with many broadcast gradients gets smaller groups."""
    dev = device()
    wg = min(WORK_GROUP, dev.max_work_group_size, int(dev.cl_device.local_mem_size) // (REDUCE_BYTES_PER_ITEM * reduced))
    return 1 << (max(wg, 1).bit_length() - 1)


def _reduce_blocked() -> bool:
    """Whether the reduce form walks contiguous blocks (CPU devices) rather than strides (GPUs)."""
    return device().kind != "gpu"


def _settings() -> tuple:
    """What a launch plan depends on beyond the call's arguments (tests change these)."""
    return (VECTORIZE, WORK_GROUP, REDUCE_GROUPS_PER_UNIT, _reduce_group_size, _reduce_blocked, _reduce_groups)


def _broadcasts(a: tuple, b: tuple) -> bool:
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


# (kept here under their old names: tests and record_calls share them through kernels.py)
_broadcast_strides = broadcast_strides
