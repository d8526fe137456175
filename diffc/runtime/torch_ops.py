"""diffc calls as torch custom operators, for torch.compile: `m.f(x=t)` inside a function that
torch.compile traces (torch.compile(step, fullgraph=True)) becomes one node of the graph, no
graph break.

Two generic operators, keyed by a Function's handle (an int each Function gets when made):

    diffc::call(handle, kinds, tensors, floats, ints) -> Tensor
    diffc::call_bwd(handle, kinds, tensors, floats, ints, grad, wants) -> Tensor[]

`kinds` tells, per bound argument in parameter order, where its value is: "t" the next of
`tensors`, "f" the next of `floats`, "i" the next of `ints` ("b" a bool there). Their real
implementations run the eager paths of torch_bridge.py (the host path, or memory shared with CUDA
where cuda_shared.py can); their fake (meta) implementations give the result's shape (the
arguments' broadcast shape) and dtype (the function's result type) without running anything.
`call`'s autograd formula is `call_bwd` (the function's bwds kernel); `call_bwd`'s own raises
torch_bridge.SECOND_ORDER, as the eager autograd node does.

Eager calls (not under torch.compile) keep torch_bridge.py's autograd Function: the operators
serve the trace. Tracing never enters diffc's Python beyond `call` below: the work that is not
traceable (making the operators, looking a Function up) happens in functions torch's tracer
calls as they are (`assume_constant_result`).

What is traced: functions of scalar parameters (torch_bridge.py's calls) and generic ones over
floating types. Functions with vector, matrix, struct or out parameters (torch_records.py),
`.bwds`/`.fwds` and `_result="numpy"` are refused under torch.compile with a CallError.
torch is imported only when a traced call asks for the operators.
"""

from __future__ import annotations

import itertools
import sys
import weakref
from types import SimpleNamespace

import numpy as np

from diffc.runtime import torch_bridge
from diffc.runtime.errors import CallError

FUNCTIONS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # handle -> Function (or Module)
_next = itertools.count(1)
_OPS: list = [None]  # the two operators, once made

CALL_SCHEMA = "(int handle, str kinds, Tensor[] tensors, float[] floats, int[] ints) -> Tensor"
BWD_SCHEMA = ("(int handle, str kinds, Tensor[] tensors, float[] floats, int[] ints, Tensor grad, bool[] wants) "
              "-> Tensor[]")


def register(fn) -> int:
    """A new handle for `fn`, a Function, GenericFunction or Module (it keeps it as `.handle`)."""
    h = next(_next)
    FUNCTIONS[h] = fn
    return h


def compiling() -> bool:
    """Whether torch.compile is tracing the caller (False without torch: nothing can). (Every
    eager call asks: under a microsecond, most of it torch's own function, which the tracer must see
    called.)"""
    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_compiling() and not _PLANNING[0]
_PLANNING: list = [False]  # True while _plan runs (outside the trace, though torch says it compiles)


# -- at trace time ------------------------------------------------------------------------------


class Traced:
    """`m.name` while torch.compile traces: a call of it is `call` (nothing of the module is made
    or looked up in the trace: torch's tracer would see dicts as they were before)."""

    def __init__(self, handle: int, name: str):
        self.handle, self.name = handle, name

    def __call__(self, *args, _result="torch", **kwargs):
        return call(self.handle, self.name, args, kwargs, _result)


def call(handle: int, name: str, args: tuple, kwargs: dict, result):
    """A call as torch.compile traces it, of the Function or GenericFunction of `handle` (name
    "") or of the module's function `name`: one diffc::call node. What is checked and picked
    (the instance of a generic function, the binding, the refusals) happens in `_plan`, outside
    the trace."""
    import torch

    specs = tuple(_spec(v, torch) for v in args)
    kspecs = tuple((k, _spec(v, torch)) for k, v in kwargs.items())
    fn_handle, kinds, sources = _plan(handle, name, specs, kspecs, _result_spec(result, torch))
    tensors, floats, ints = [], [], []
    for k, src in zip(kinds, sources):
        v = args[src] if isinstance(src, int) else kwargs[src]
        (tensors if k == "t" else floats if k == "f" else ints).append(int(v) if k == "b" else v)
    y = torch.ops.diffc.call(fn_handle, kinds, tensors, floats, ints)
    if isinstance(result, torch.Tensor):
        with torch.no_grad():
            result.copy_(y)
        return result
    return y


def _spec(v, torch) -> tuple:
    """What `_plan` needs of an argument: ("t", dtype, shape) of a tensor, ("n", type name) of
    anything else."""
    if isinstance(v, torch.Tensor):
        return ("t", str(v.dtype).removeprefix("torch."), tuple(int(s) for s in v.shape))
    return ("n", type(v).__name__)


def _result_spec(result, torch) -> str:
    if isinstance(result, torch.Tensor):
        return "tensor to write"
    return result if isinstance(result, str) else type(result).__name__


def _plan(handle: int, name: str, specs: tuple, kspecs: tuple, result: str) -> tuple:
    """(the Function's handle, kinds, where each bound argument comes from: a position in args
    or a keyword) of a traced call, with eager's errors for a call it cannot make. torch's
    tracer runs it as it is and takes its result as a constant (marked below)."""
    _PLANNING[0] = True
    try:
        return _plan_call(handle, name, specs, kspecs, result)
    finally:
        _PLANNING[0] = False


def _plan_call(handle: int, name: str, specs: tuple, kspecs: tuple, result: str) -> tuple:
    if _OPS[0] is None:
        _OPS[0] = _define()
    target = FUNCTIONS[handle]
    if name:
        target = target._attribute(name) if name not in target._functions else target._functions[name]
    if hasattr(target, "instance"):  # a GenericFunction (generic_calls.py imports this module)
        target = target.instance(tuple(_example(s) for s in specs), {k: _example(s) for k, s in kspecs})
    fn = target
    if fn.general:
        raise CallError(f"error: {fn.name}(): functions with vector, matrix, array, struct or out/inout parameters "
                        "are not supported under torch.compile: call it outside the compiled function "
                        "(torch.compiler.disable)", fn.name)
    if result not in ("tensor", "torch", "tensor to write"):
        raise CallError(f"error: {fn.name}(): under torch.compile '_result' is \"torch\" or a torch tensor to write "
                        f"into, got {result!r}", "_result")
    bound = fn._bind(tuple(range(len(specs))), {k: k for k, _ in kspecs})
    given = {**dict(enumerate(specs)), **dict(kspecs)}
    kinds = []
    for i, src in enumerate(bound):
        spec = given[src]
        if spec[0] == "t":
            kinds.append("t")
            if spec[1] == "float64" and fn.dtypes[i] == np.float32:
                # (what torch_bridge.refuse_float64 reads of a tensor is its dtype)
                torch_bridge.refuse_float64(fn.name, fn.params[i], SimpleNamespace(dtype="torch.float64"), fn.dtypes[i])
        elif spec[1] in ("float", "int", "bool"):
            kinds.append(spec[1][0])
        else:
            raise CallError(f"error: {fn.name}(): under torch.compile argument '{fn.params[i]}' must be a torch "
                            f"tensor or a Python number, got {spec[1]}", fn.params[i])
    if "t" not in kinds:
        raise CallError(f"error: {fn.name}(): under torch.compile a call needs a torch tensor argument", fn.name)
    fn._out_shape([(i, _Shaped(given[src][2])) for i, (k, src) in enumerate(zip(kinds, bound)) if k == "t"],
                  None)  # (eager's CallError where the shapes do not broadcast)
    return fn.handle, "".join(kinds), tuple(bound)


_plan._dynamo_marked_constant = True  # type: ignore[attr-defined]  (torch._dynamo.assume_constant_result's mark)


def _example(spec):
    """An argument of this spec for GenericFunction.instance (which reads dtypes and shapes)."""
    if spec[0] == "t":
        return np.broadcast_to(np.zeros((), spec[1]), spec[2])
    return {"float": 1.0, "int": 1, "bool": True}.get(spec[1], 1.0)


def join(kinds: str, tensors, floats, ints) -> list:
    """The bound arguments back from the operators' (kinds, tensors, floats, ints)."""
    t, f, i = iter(tensors), iter(floats), iter(ints)
    return [next(t) if k == "t" else next(f) if k == "f" else bool(next(i)) if k == "b" else next(i) for k in kinds]


# -- the operators --------------------------------------------------------------------------------


def _define():
    import torch


    def dtype_of(np_dtype):
        return getattr(torch, np.dtype(np_dtype).name)  # (torch names its dtypes as numpy does)

    def refuse(fn, kinds, tensors):
        at = [i for i, k in enumerate(kinds) if k == "t"]
        for i, t in zip(at, tensors):
            if t.dtype == torch.float64:
                torch_bridge.refuse_float64(fn.name, fn.params[i], t, fn.dtypes[i])
        return at

    # (schemas written out: this module's annotations are strings, which torch cannot resolve here)
    @torch.library.custom_op("diffc::call", mutates_args=(), schema=CALL_SCHEMA)
    def diffc_call(handle, kinds, tensors, floats, ints):
        fn = FUNCTIONS[handle]
        with torch.no_grad():
            return torch_bridge.call(fn, tuple(join(kinds, tensors, floats, ints)), {}, "torch")

    @diffc_call.register_fake
    def _(handle, kinds, tensors, floats, ints):
        fn = FUNCTIONS[handle]
        at = refuse(fn, kinds, tensors)
        shapes = [tuple(t.shape) for t in tensors]
        try:
            shape = torch.broadcast_shapes(*shapes)
        except RuntimeError:
            shape = fn._out_shape([(i, _Shaped(s)) for i, s in zip(at, shapes)], None)  # (its CallError)
        return tensors[0].new_empty(shape, dtype=dtype_of(fn.result_dtype))

    @torch.library.custom_op("diffc::call_bwd", mutates_args=(), schema=BWD_SCHEMA)
    def diffc_call_bwd(handle, kinds, tensors, floats, ints, grad, wants):
        fn = FUNCTIONS[handle]
        values = join(kinds, tensors, floats, ints)
        at = [i for i, k in enumerate(kinds) if k == "t"]
        if grad.is_cuda and all(t.is_cuda for t in tensors):  # CUDA kernels, else shared memory (torch_bridge)
            grads = torch_bridge.cuda_backward(fn, values, at, tensors, wants, grad)
        else:
            host = [torch_bridge._host(v) if k == "t" else v for v, k in zip(values, kinds)]
            gy = torch_bridge._host(grad)
            want = [i for i, w in zip(at, wants) if w]
            got = torch_bridge.backward_grads(fn, host, want, gy, gy.shape)
            grads = torch_bridge.input_grads(at, tensors, wants, got)
        return [g for g, w in zip(grads, wants) if w]

    @diffc_call_bwd.register_fake
    def _(handle, kinds, tensors, floats, ints, grad, wants):
        return [t.new_empty(t.shape) for t, w in zip(tensors, wants) if w]

    def setup_call(ctx, inputs, output):
        handle, kinds, tensors, floats, ints = inputs
        fn = FUNCTIONS[handle]
        at = [i for i, k in enumerate(kinds) if k == "t"]
        ctx.call = (handle, kinds, floats, ints)
        ctx.wants = [bool(t.requires_grad and fn.diffable[i] and t.is_floating_point()) for i, t in zip(at, tensors)]
        ctx.save_for_backward(*tensors)

    def backward_call(ctx, grad):
        handle, kinds, floats, ints = ctx.call
        tensors = list(ctx.saved_tensors)
        got = iter(torch.ops.diffc.call_bwd(handle, kinds, tensors, floats, ints, grad, ctx.wants)
                   if any(ctx.wants) else ())
        grads = [next(got) if w else None for w in ctx.wants]
        return None, None, grads, _nones(floats), _nones(ints)

    diffc_call.register_autograd(backward_call, setup_context=setup_call)

    def setup_bwd(ctx, inputs, output):
        ctx.name = FUNCTIONS[inputs[0]].name

    def backward_bwd(ctx, *grads):
        raise CallError(torch_bridge.SECOND_ORDER.format(name=ctx.name))

    diffc_call_bwd.register_autograd(backward_bwd, setup_context=setup_bwd)
    return diffc_call, diffc_call_bwd


def _nones(given: list):
    """No gradient for a list of numbers, in the structure torch's custom-operator autograd
    expects: a list of numbers is one leaf (None), unless it is empty (then it may be a list of
    tensors: [])."""
    return None if len(given) else []


class _Shaped:
    """A shape with nothing else: Function._out_shape's view of a fake tensor."""

    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = shape
