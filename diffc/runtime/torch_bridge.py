"""PyTorch tensors in module calls: `m.f(x=torch_tensor)`, `.bwds`, `.fwds`.

A call given torch tensors returns torch tensors. When an input that feeds a differentiable
parameter requires grad (and grad mode is on), the result comes from `_DiffcCall`, a
`torch.autograd.Function` whose backward runs the function's `.bwds` kernels, so
`loss.backward()` fills `.grad` of every such input (torch.optim and nn.Parameter work as with
any torch op).

Memory: a CPU tensor is read through a numpy view of its memory (no host copy; the view of a
small tensor passed again, a parameter say, is reused: `_view`) and copied to
the device as staging.py does for numpy arrays (without waiting, into device tensors the
Function keeps, so a repeated call replays its launch); results come back as numpy arrays
wrapped by `torch.from_numpy` (no copy). CUDA tensors run as CUDA kernels in torch's own
context on its current stream where NVRTC and the CUDA bindings are installed (cuda_kernels.py:
no OpenCL, no host wait; `_CudaCall` is the autograd node); where that path cannot take a call,
and diffc runs on the same NVIDIA GPU, through memory CUDA and OpenCL share (cuda_shared.py:
no byte through the host, no host wait; `_SharedCall`); elsewhere through the host (a
device-to-host copy before the call, a host-to-device copy of the result). The
autograd graph keeps the forward's device copies for the backward (while no later call has
refilled them).

Order (Function._start_host / _finish_host): the device's work is enqueued before the torch
result and its autograd node are made; the call waits for it before them on CPU devices and
after them on GPUs (`OVERLAP`). The requires_grad call makes the same OpenCL calls as the
no-grad and numpy ones (bench/bench_torch_call.py --count); what it adds is torch's graph.

Gradients of broadcast inputs are summed over the broadcast dimensions: by diffc's reduce
kernels for float32, and for other dtypes (whose atomics OpenCL lacks) by expanding the input
to the output's shape and summing in torch.

torch is optional (`pip install diffc[torch]`); nothing here imports it until a call holds a
torch tensor or asks for `_result="torch"`.
"""

from __future__ import annotations

import sys
import weakref

import numpy as np

from diffc.runtime import cuda_kernels, cuda_shared
from diffc.runtime.errors import CallError
from diffc.runtime.staging import KEEP_BYTES, current, kept, read_later, upload
from diffc.runtime.tensor import Tensor

MISSING_TORCH = (
    "error: {what} needs PyTorch, which is not installed: pip install 'diffc[torch]' (or pip install torch)"
)


def require_torch(what: str):
    """The torch module, or a CallError that says how to install it."""
    try:
        import torch
    except ImportError:
        raise CallError(MISSING_TORCH.format(what=what)) from None
    return torch


def holds_torch(args: tuple, kwargs: dict, result) -> bool:
    """Whether a call's arguments or `_result` hold a torch tensor (cheap when torch was never
    imported: then none can)."""
    if type(result) is str and result == "torch":
        return True
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    T = torch.Tensor
    if type(result) not in NOT_TORCH and isinstance(result, T):
        return True
    for v in args:
        if type(v) not in NOT_TORCH and isinstance(v, T):
            return True
    for v in kwargs.values():
        if type(v) not in NOT_TORCH and isinstance(v, T):
            return True
    return False


# Types that are never torch tensors: looked up before isinstance(v, torch.Tensor), which takes
# ~0.2 us for anything that is not a tensor (torch's metaclass) against ~0.04 for this.
NOT_TORCH = frozenset({float, int, bool, str, np.ndarray, Tensor})


# -- what a call refuses ------------------------------------------------------------------------


def refuse_float64(fn_name: str, param: str, t, want: np.dtype) -> None:
    """A float64 torch tensor for a `float` parameter: computing it in float32 would hand back a
    float32 result (or gradient) of float32 precision without a word, and gradcheck would then
    report a Jacobian mismatch that reads as a wrong derivative. (Widening, float32 into a double
    parameter, loses nothing and stays allowed; numpy arrays keep their conversion.)"""
    if want == np.float32 and str(t.dtype) == "torch.float64":
        raise CallError(
            f"error: {fn_name}(): argument '{param}' is a float64 torch tensor, but the parameter is float: "
            f"diffc would compute it in float32. Pass {param}.float(), or declare the parameter double "
            f"(or generic, T : __BuiltinFloatingPointType) to compute in double", param)


SECOND_ORDER = (
    "error: {name}(): second derivatives through a diffc function are not supported: torch asked for "
    "the derivative of its gradient (create_graph=True, then a backward through that gradient, as a "
    "gradient penalty does). diffc's backward is the function's bwds kernel, which torch cannot "
    "differentiate, and diffc does not build the derivative of that kernel (forward mode over bwds). "
    "Compute the term that needs second derivatives with torch ops, or use grad.detach() where only "
    "the gradient's value is needed")


def first_order_only(name: str, grads: tuple, inputs) -> tuple:
    """A backward's gradients, under create_graph, tied into the graph by a node whose own
    backward raises (SECOND_ORDER): without it they would be constants to torch, and a second
    backward through them would silently drop the second-order term. `inputs`: the forward's
    torch inputs (whose derivative torch would ask for) and the incoming gradient."""
    import torch

    global _FIRST_ORDER_ONLY
    if _FIRST_ORDER_ONLY is None:
        class FirstOrderOnly(torch.autograd.Function):
            @staticmethod
            def forward(ctx, name, n, *tensors):
                ctx.fn_name = name
                return tuple(t.view_as(t) for t in tensors[:n])

            @staticmethod
            def backward(ctx, *grads):
                raise CallError(SECOND_ORDER.format(name=ctx.fn_name))

        _FIRST_ORDER_ONLY = FirstOrderOnly
    at = [k for k, g in enumerate(grads) if g is not None]
    links = [t for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad]
    if not at or not links:
        return grads
    tied = _FIRST_ORDER_ONLY.apply(name, len(at), *[grads[k] for k in at], *links)
    out = list(grads)
    for k, g in zip(at, tied if isinstance(tied, tuple) else (tied,)):
        out[k] = g
    return tuple(out)


_FIRST_ORDER_ONLY = None


# -- conversions ------------------------------------------------------------------------------


def _host(t) -> np.ndarray:
    """A torch tensor's data as a numpy array: a view of CPU memory, a copy of CUDA memory."""
    if not t.is_cuda:  # (a refused numpy() is a torch exception: ~10 us; is_cuda ~0.2)
        try:  # the common case, a plain CPU tensor, in one call (numpy() refuses all others)
            return t.detach().numpy() if t.requires_grad else t.numpy()
        except (TypeError, RuntimeError):
            pass
    t = t.detach()
    try:
        if t.device.type != "cpu":
            t = t.cpu()
        if t.is_conj() or t.is_neg():
            t = t.resolve_conj().resolve_neg()
        return t.numpy()
    except (TypeError, RuntimeError, NotImplementedError) as e:  # (meta tensors, bfloat16, ...)
        raise CallError(f"error: a torch tensor of dtype {t.dtype} on device '{t.device}' cannot be read as host "
                        f"data (torch: {e})") from None


def _to_torch(a: np.ndarray, like):
    """A numpy result as a torch tensor on the device of `like` (the call's first torch input)."""
    import torch

    t = torch.from_numpy(a if a.flags.c_contiguous else np.ascontiguousarray(a))
    return t if like is None or like.is_cpu else t.to(like.device)


def _first_torch(values: list, result):
    import torch

    for v in values:
        if isinstance(v, torch.Tensor):
            return v
    return result if isinstance(result, torch.Tensor) else None


def _numpy_values(values: list) -> list:
    """The call's arguments with every torch tensor as a numpy array (diffc's own path)."""
    import torch

    return [_host(v) if isinstance(v, torch.Tensor) else v for v in values]


# -- m.f(...) -----------------------------------------------------------------------------------

# Whether a call waits for the device after building its torch result (and autograd graph),
# so that the two overlap, or before. [None]: by the device, set at the first call: overlapped
# on a GPU, whose host is idle during the round trip; not on a CPU device (PoCL), whose worker
# threads share the cores with the host's Python: there, measured on 2 busy cores, the
# overlapped requires_grad call cost ~14 us more wall time and ~4 us more host CPU time.
# (A list, so that tests and the bench can set it: OVERLAP[0] = True.)
OVERLAP: list = [None]

_RESULTS = ("tensor", "torch", "numpy")
_FLOAT64: list = [None]  # torch.float64, once torch is imported (an identity test per tensor)


def call(fn, args: tuple, kwargs: dict, result):
    """`fn(*args, **kwargs, _result=result)` where some argument is a torch tensor (or
    `_result` is "torch" or a torch tensor to write into)."""
    # (this runs on every call of a tiny kernel: each step here is a measurable part of it)
    torch = sys.modules.get("torch") or require_torch(f"{fn.name}(_result='torch')")
    if _FLOAT64[0] is None:
        _FLOAT64[0] = torch.float64
    if OVERLAP[0] is None:
        from diffc.runtime.device import device

        OVERLAP[0] = device().kind == "gpu"
    values = fn._bind(args, kwargs)
    T = torch.Tensor
    if type(result) is str and result in _RESULTS:
        into = None
    elif isinstance(result, T):
        into = result
    else:
        raise CallError(f"error: {fn.name}(): '_result' must be \"tensor\", \"torch\", \"numpy\", a Tensor or a "
                        f"torch tensor, got {result!r}", "_result")
    idx, tensors = [], []
    host = values  # (a list of our own: each torch tensor in it becomes a numpy array)
    views, diffable = fn.torch_views, fn.diffable
    grad = cuda = False
    for i, t in enumerate(values):
        if type(t) not in NOT_TORCH and isinstance(t, T):
            if t.dtype is _FLOAT64[0]:
                refuse_float64(fn.name, fn.params[i], t, fn.dtypes[i])
            idx.append(i)
            tensors.append(t)
            if t.is_cuda:
                cuda = True
            if t.requires_grad and diffable[i]:
                grad = True
    if cuda and cuda_kernels.why_not(fn, values, idx, tensors) is None:  # CUDA kernels in torch's context
        y = _cuda_call(torch, fn, values, idx, tensors, grad)
        if y is not None:
            return _deliver(torch, y, into, result)
    if cuda and cuda_shared.usable(values, idx, tensors):  # no trip through the host
        return _shared_call(torch, fn, values, idx, tensors, grad, into, result)
    for i, t in zip(idx, tensors):
        host[i] = _view(views, i, t)
    out, staged, events = fn._start_host(host)  # (the device's work, enqueued)
    like = tensors[0] if tensors else into
    # with OVERLAP, the host's own work (the autograd graph, the torch result) runs while the
    # device computes, and the wait comes last (a CUDA result is copied after the wait)
    overlap = OVERLAP[0] and (like is None or like.is_cpu)
    if not overlap:
        fn._finish_host(events)
    if grad and fn.differentiable and torch.is_grad_enabled():
        if _DIRECT_APPLY is None:
            _make_apply(torch)
        # Function.apply's Python part (~4 us a call) serves only setup_context and functorch
        # transforms; _DiffcCall has neither, so outside functorch its C++ apply is called
        state = (fn, host, idx, kept(staged) if staged else staged, tensors, [t._version for t in tensors])
        y = (_DiffcCall.apply if _functorch_active() else _DIRECT_APPLY)(state, out, *tensors)
    else:
        y = _to_torch(out, like)
    if overlap:
        fn._finish_host(events)  # (nothing read y's data before: torch only wrapped it)
    return _deliver(torch, y, into, result)


def _deliver(torch, y, into, result):
    """A call's result as asked for: copied into `into`, as a numpy array, or the tensor itself."""
    if into is not None:
        with torch.no_grad():
            into.copy_(y)
        return into
    if type(result) is str and result == "numpy":
        return y.detach().cpu().numpy()
    return y


def _cuda_call(torch, fn, values: list, idx: list, tensors: list, grad: bool):
    """`call` by diffc's CUDA kernels on torch's current stream (cuda_kernels.py); None where the
    kernel cannot run there (the caller takes the next path). With grad, `_CudaCall` ties the
    result into torch's graph; its backward runs the bwds kernel the same way."""
    y = cuda_kernels.forward(fn, values, idx, tensors)
    if y is None or not (grad and fn.differentiable and torch.is_grad_enabled()):
        return y
    if _CudaCall is None:
        _make_apply(torch)
    state = (fn, values, idx, tensors, [t._version for t in tensors])
    return (_CudaCall.apply if _functorch_active() else _CUDA_APPLY)(state, y, *tensors)


def cuda_backward(fn, values: list, idx: list, tensors: list, wants, grad_out) -> list:
    """The gradients of a call's CUDA tensors at `idx` (None where not wanted): by the bwds kernel
    on torch's stream (cuda_kernels.py), else over shared memory (cuda_shared.py), else through
    the host."""
    if cuda_kernels.why_not(fn, values, idx, tensors) is None:
        grads = cuda_kernels.backward(fn, values, idx, tensors, wants, grad_out)
        if grads is not None:
            return grads
    if cuda_shared.usable(values, idx, tensors):
        sh = cuda_shared.shared()
        args, keep = list(values), []
        for i, t in zip(idx, tensors):
            args[i] = cuda_shared.diffc_tensor(t, fn.dtypes[i], sh, keep)
        return cuda_shared.backward(fn, args, idx, tensors, wants, grad_out)
    import torch

    host = [_host(v) if isinstance(v, torch.Tensor) else v for v in values]
    gy = _host(grad_out)
    want = [i for i, w in zip(idx, wants) if w and fn.diffable[i]]
    got = backward_grads(fn, host, want, gy, gy.shape)
    return input_grads(idx, tensors, wants, got)


def _shared_call(torch, fn, values: list, idx: list, tensors: list, grad: bool, into, result):
    """`call` with CUDA tensors in memory diffc shares with CUDA (cuda_shared.py): the result is a
    CUDA tensor in shared memory, and the autograd node's backward runs the bwds kernel there."""
    if grad and fn.differentiable and torch.is_grad_enabled():
        if _SharedCall is None:
            _make_apply(torch)
        y = _SharedCall.apply((fn, values, idx), *tensors)
    else:
        y = cuda_shared.forward(fn, values, idx, tensors)[0]
    return _deliver(torch, y, into, result)


def _view(views: dict, i: int, t) -> np.ndarray:
    """`_host(t)` for argument `i`, reusing the numpy view the last call made of the same small CPU
    tensor (a parameter passed on every step, say): a view follows in-place changes of the data,
    so it stays right while the tensor's memory, shape, strides and dtype are those it was made
    for. (Making one costs ~2 us, checking one ~1.)"""
    e = views.get(i)
    if e is not None:
        ref, ptr, shape, strides, dtype, a = e
        if ref() is t and t.data_ptr() == ptr and t.shape == shape and t.stride() == strides and t.dtype is dtype:
            return a
    if t.is_cuda:  # copied to the host every call
        views.pop(i, None)
        return _host(t)
    try:  # a plain CPU tensor: a view of its memory (numpy() refuses all others)
        a = t.detach().numpy() if t.requires_grad else t.numpy()
    except (TypeError, RuntimeError):
        views.pop(i, None)
        return _host(t)
    if a.nbytes <= KEEP_BYTES:  # (the view keeps the tensor's memory alive: only small ones)
        views[i] = (weakref.ref(t), t.data_ptr(), t.shape, t.stride(), t.dtype, a)
    else:
        views.pop(i, None)
    return a


def input_grads(keys, tensors, wants, grads: dict) -> list:
    """An autograd Function's backward results: for each input (its key in `grads`, its tensor,
    whether torch wants its gradient) the gradient as a torch tensor of the input's dtype, summed
    down to the input's shape where the call broadcast it, or None."""
    out = []
    for k, t, w in zip(keys, tensors, wants):
        g = grads.get(k)
        out.append(input_grad(g, t) if w and g is not None else None)
    return out


def input_grad(g: np.ndarray, t):
    """Gradient `g` (diffc's, of the call's shape) as a torch gradient of input `t`: its device
    and dtype, summed down to its shape where the call broadcast it."""
    g = _to_torch(g, t)
    if g.dtype != t.dtype:
        g = g.to(t.dtype)
    if g.shape != t.shape:
        g = g.sum_to_size(t.shape) if t.dim() else g.sum()
    return g


def add_to_grad(t, g: np.ndarray) -> None:
    """`.bwds` with torch tensors: input `t`'s `.grad` gains gradient `g` (set where it had none)."""
    import torch

    g = input_grad(g, t)
    with torch.no_grad():
        if t.grad is None:
            t.grad = g.clone()
        else:
            t.grad += g


def _autograd_function():
    import torch

    class _DiffcCall(torch.autograd.Function):
        """y = f(inputs) by diffc's call kernel; dL/dinputs by its bwds kernel. The device copies
        of the (small, kept: staging.kept) inputs the forward made stay with the graph for the
        backward to read: the backward refuses to run after an input changed in place (its
        version counter moved), so they hold the inputs' values as the backward would read
        them, unless a later call refilled them (staging.current)."""

        @staticmethod
        def forward(ctx, state, out, *tensors):
            # call() enqueued the device's work: `out` is the result array the device may still
            # be filling (with OVERLAP, call() waits once torch has wrapped it; a CUDA result is
            # copied here, after the wait); `state`: (Function, the arguments with each torch
            # tensor's data as a numpy array, their indices, the kept device copies, the torch
            # inputs, their version counters)
            ctx.state = state  # (with the inputs, not save_for_backward: see backward)
            return _to_torch(out, tensors[0])

        @staticmethod
        def backward(ctx, grad_out):
            if torch.is_grad_enabled():  # create_graph=True: a second backward must fail loudly
                with torch.no_grad():
                    grads = _DiffcCall.backward(ctx, grad_out)
                return first_order_only(ctx.state[0].name, grads, (*ctx.state[4], grad_out))
            # torch's checks of saved tensors, made here for the inputs (save_for_backward's
            # SavedVariables cost ~2.5 us of every forward here, on a graph torch builds cold
            # after each device wait): a backward through a freed graph raises as torch's
            # own nodes do (ctx.saved_tensors, empty, still checks that), and one after an
            # input changed in place raises torch's error rather than reading other values
            ctx.saved_tensors
            fn, host, idx, staged, tensors, versions = ctx.state
            _unchanged(fn, tensors, versions)
            wants = ctx.needs_input_grad[2:]
            diffable = fn.diffable
            want = [i for i, w in zip(idx, wants) if w and diffable[i]]
            gy = _host(grad_out)
            grads = backward_grads(fn, host, want, gy, gy.shape, current(staged))
            return (None, None, *input_grads(idx, tensors, wants, grads))

    class _SharedCall(torch.autograd.Function):
        """_DiffcCall's counterpart for CUDA tensors in memory diffc shares (cuda_shared.py):
        the forward's arguments, as diffc Tensors on that memory, stay with the graph."""

        @staticmethod
        def forward(ctx, state, *tensors):
            fn, values, idx = state
            y, args, keep = cuda_shared.forward(fn, values, idx, list(tensors))
            ctx.state = (fn, args, idx, tensors, [t._version for t in tensors], keep)
            return y

        @staticmethod
        def backward(ctx, grad_out):
            fn, args, idx, tensors, versions, _ = ctx.state
            if torch.is_grad_enabled():  # create_graph=True: a second backward must fail loudly
                with torch.no_grad():
                    grads = _SharedCall.backward(ctx, grad_out)
                return first_order_only(fn.name, grads, (*tensors, grad_out))
            ctx.saved_tensors  # (a backward through a freed graph raises torch's error)
            _unchanged(fn, tensors, versions)
            return (None, *cuda_shared.backward(fn, args, idx, tensors, ctx.needs_input_grad[1:], grad_out))

    class _CudaCall(torch.autograd.Function):
        """The autograd node of a call that ran as a CUDA kernel (cuda_kernels.py): `y` is its
        result, made before; the backward runs the bwds kernel on torch's stream (cuda_backward)."""

        @staticmethod
        def forward(ctx, state, y, *tensors):
            ctx.state = state
            return y

        @staticmethod
        def backward(ctx, grad_out):
            fn, values, idx, tensors, versions = ctx.state
            if torch.is_grad_enabled():  # create_graph=True: a second backward must fail loudly
                with torch.no_grad():
                    grads = _CudaCall.backward(ctx, grad_out)
                return first_order_only(fn.name, grads, (*tensors, grad_out))
            ctx.saved_tensors  # (a backward through a freed graph raises torch's error)
            _unchanged(fn, tensors, versions)
            return (None, None, *cuda_backward(fn, values, idx, tensors, ctx.needs_input_grad[2:], grad_out))

    return _DiffcCall, _SharedCall, _CudaCall


def _unchanged(fn, tensors, versions) -> None:
    """torch's check of saved tensors, for the inputs a graph keeps without saving them."""
    for t, v in zip(tensors, versions):
        if t._version != v:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: [{t.type()} {list(t.shape)}] is at version {t._version}; expected version {v} "
                f"instead (an input of {fn.name}() changed in place after the call)")


_DiffcCall = None  # the torch.autograd.Function class, made on first use (so that importing
_DIRECT_APPLY = None  # this module does not import torch), and its C++ apply
_functorch_active = None


_SharedCall = None
_CudaCall = None
_CUDA_APPLY = None  # _CudaCall's C++ apply (as _DIRECT_APPLY's)


def _make_apply(torch) -> None:
    global _DiffcCall, _SharedCall, _CudaCall, _DIRECT_APPLY, _CUDA_APPLY, _functorch_active
    cls, _SharedCall, _CudaCall = _autograd_function()
    base = getattr(torch._C, "_FunctionBase", None)
    active = getattr(torch._C, "_are_functorch_transforms_active", None)
    if base is None or not hasattr(base, "apply") or active is None:  # (another torch: its own way)
        direct, active = cls.apply, bool
    else:
        direct = super(torch.autograd.Function, cls).apply
    _DiffcCall, _DIRECT_APPLY, _functorch_active = cls, direct, active
    _CUDA_APPLY = _CudaCall.apply if direct is cls.apply else super(torch.autograd.Function, _CudaCall).apply


def backward_grads(fn, host: list, want: list[int], gy: np.ndarray, shape: tuple,
                   staged: dict[int, Tensor] | None = None) -> dict[int, np.ndarray]:
    """Runs `fn.bwds` with output gradient `gy` (of the output's `shape`) and returns, for each
    argument index in `want`, its gradient: of the argument's own shape where diffc reduced a
    broadcast, else of the output's shape (the caller sums it down). `staged`: device copies of
    arguments the forward made (staging.py), read instead of copying the host arrays again;
    with them and the Function's kept result, a repeated backward replays its launch."""
    values = list(host)
    events: list = []
    staged = staged or {}
    for i, t in staged.items():
        if i not in want:
            t.grad = None  # (no gradient for it)
        values[i] = t
    grads: dict[int, Tensor] = {}
    for i in want:
        param = fn.dtypes[i]
        t = staged.get(i)
        if t is None or (t.shape != shape and param != np.float32):
            a = np.asarray(host[i])
            if a.shape != shape and param != np.float32:
                # no float64 atomics for diffc's broadcast reduction: expand, sum afterwards
                a = np.broadcast_to(a, shape)
            t = upload(a, param, events)
        t.with_grads(zero=True)  # (a kept tensor keeps its gradient's buffer: the launch can replay)
        values[i] = t
        grads[i] = t
    res = fn.staging.result(shape, fn.result_dtype, gy, events)
    fn._run_bound("bwds", values, res)  # (bound, and checked by the caller)
    out = {}
    for i, t in grads.items():
        a = out[i] = np.empty(t.shape, t.dtype)
        if t.size:
            events.append(read_later(a, t.grad.buffer))
    fn._finish_host(events)  # (one wait for the copies in, the launch and the reads)
    return out


# -- m.f.bwds(...) and m.f.fwds(...) -----------------------------------------------------------


def _refuse_float64_all(fn, values: list, torch) -> None:
    for i, v in enumerate(values):
        if isinstance(v, torch.Tensor):
            refuse_float64(fn.name, fn.params[i], v, fn.dtypes[i])


def bwds(fn, args: tuple, kwargs: dict, result) -> None:
    """`.bwds` with torch tensors: `_result` is the torch result whose `.grad` holds the output
    derivatives; each torch input that requires grad (of a differentiable parameter) gets the
    gradient added to its `.grad` (made when None), as `loss.backward()` would."""
    torch = require_torch(f"{fn.name}.bwds")
    values = fn._bind(args, kwargs)
    if not isinstance(result, (torch.Tensor, Tensor)):
        raise CallError(f"error: {fn.name}.bwds: '_result' must be the result (a torch tensor or a Tensor, with "
                        f".grad holding the output derivatives), got {type(result).__name__}", "_result")
    if result.grad is None:
        raise CallError(f"error: {fn.name}.bwds: '_result' has no .grad: set it to the output derivatives", "_result")
    _refuse_float64_all(fn, values, torch)
    gy = _host(result.grad) if isinstance(result.grad, torch.Tensor) else result.grad.to_numpy()
    host = _numpy_values(values)
    want = [i for i, v in enumerate(values) if isinstance(v, torch.Tensor) and v.requires_grad and fn.diffable[i]]
    # diffc Tensors among the arguments keep their own .grad handling
    grads = backward_grads(fn, host, want, gy, tuple(gy.shape))
    for i, g in grads.items():
        add_to_grad(values[i], g)
    return None


def fwds(fn, args: tuple, kwargs: dict, result):
    """`.fwds` with torch tensors: each torch input's `.grad` is its tangent (none: zero);
    returns the torch result with `.grad` holding the output tangent."""
    torch = require_torch(f"{fn.name}.fwds")
    values = fn._bind(args, kwargs)
    _refuse_float64_all(fn, values, torch)
    like = _first_torch(values, None)
    host = list(values)
    for i, v in enumerate(values):
        if isinstance(v, torch.Tensor):
            a = _host(v)
            if v.grad is not None and fn.diffable[i]:  # (a 0-d one too: a Tensor of shape ())
                want = fn.dtypes[i]
                t = Tensor.from_numpy(np.ascontiguousarray(a, dtype=want))
                t.with_grads(Tensor.from_numpy(np.ascontiguousarray(_host(v.grad), dtype=want)), zero=False)
                host[i] = t
            else:
                host[i] = a
    primal, tangent = fn.fwds(*host, _result="numpy")
    y = _to_torch(primal, like)
    y.grad = _to_torch(tangent, like)
    return y
