"""The replayable launch of a Function's last call, so that a repeated call skips the binding,
the checks, the kernel lookup and the argument list (tiny calls are overhead-bound).

A plan holds what its launch read: each tensor argument through a weak reference (a plan does
not keep tensors alive, so their buffers still go back to the pool) and the device buffers
the kernel was given (held, so no buffer a plan compares against can be freed). A call
replays the plan only when every argument is the same tensor with the same buffer and the
same gradient buffer (where the kernel reads one), or a Python number of the same type and
value, and `_result` is the same tensor or the same string. Anything else takes the full path,
which checks everything and makes the next plan. Numbers of other types and numpy arrays are
never planned (arrays are mutable, and are copied to a new tensor on every call).
"""

from __future__ import annotations

import math
import weakref

from diffc.runtime.tensor import Tensor

# a plan's expected gradient buffer where the kernel reads no gradient (any will do)
ANY_GRAD = object()
# what `replay` returns when the call is not the planned one
MISS = object()
_NUMBERS = (int, float, bool)


class LaunchPlan:
    __slots__ = (
        "npos", "kw_names", "values", "buffers", "grad_buffers", "result", "result_buffers",
        "settings", "kernel", "queue", "global_size", "local_size", "args", "out_arg", "shape",
        "dtype", "out_grad", "enqueue",
    )

    @classmethod
    def make(cls, params, npos: int, values: list, result, reads_grad: list[bool], out_grad: bool,
             settings: tuple, kernel, queue, global_size: int, local_size: int, args: list, out_arg: int,
             shape: tuple, dtype):
        """The plan of a launch just made, or None where the call's arguments cannot be replayed.
        `reads_grad[i]`: the kernel reads argument i's gradient (or whether it has one shaped the
        kernel); `out_grad`: it reads the result's gradient; `args`: the kernel's argument list,
        whose `out_arg` entry (and the next, with `out_grad`) is the result's buffer."""
        import pyopencl as cl

        plan = cls()
        plan.enqueue = cl.enqueue_nd_range_kernel
        plan.npos = npos
        plan.kw_names = tuple(params[npos:])
        plan.values, plan.buffers, plan.grad_buffers = [], [], []
        for v, grad in zip(values, reads_grad):
            if type(v) is Tensor:
                plan.values.append(weakref.ref(v))
                plan.buffers.append(v.buffer)
                plan.grad_buffers.append(_grad_buffer(v) if grad else ANY_GRAD)
            elif type(v) in _NUMBERS:
                plan.values.append(v)
                plan.buffers.append(None)
                plan.grad_buffers.append(None)
            else:
                return None
        if type(result) is Tensor:
            plan.result = weakref.ref(result)
            plan.result_buffers = (result.buffer, _grad_buffer(result) if out_grad else ANY_GRAD)
        elif type(result) is str:
            plan.result = result
            plan.result_buffers = None
        else:
            return None
        plan.settings = settings
        plan.kernel, plan.queue = kernel, queue
        plan.global_size, plan.local_size = (global_size,), (local_size,)
        plan.args, plan.out_arg = args, out_arg
        plan.shape, plan.dtype, plan.out_grad = shape, dtype, out_grad
        return plan

    def replay(self, args: tuple, kwargs: dict, result, settings: tuple):
        """Launches again and returns (output tensor, event) when this is the planned call, else MISS."""
        if len(args) != self.npos or len(kwargs) != len(self.kw_names) or settings != self.settings:
            return MISS
        try:
            values = (*args, *map(kwargs.__getitem__, self.kw_names))
        except KeyError:
            return MISS
        if not self._same_arguments(values):
            return MISS
        planned = self.result
        if self.result_buffers is None:  # a new result tensor each call
            if type(result) is not str or result != planned:
                return MISS
            out = Tensor(self.shape, self.dtype)
            k, kernel, arg_list = self.out_arg, self.kernel, self.args
            arg_list[k] = out.buffer  # the list stays the kernel's arguments as set
            kernel.set_arg(k, out.buffer)
            if self.out_grad:
                out.with_grads(zero=False)
                arg_list[k + 1] = out.grad.buffer
                kernel.set_arg(k + 1, out.grad.buffer)
        else:
            out = result
            buf, gbuf = self.result_buffers
            if planned() is not out or out.buffer is not buf or (gbuf is not ANY_GRAD and _grad_buffer(out) is not gbuf):
                return MISS
        return out, self.enqueue(self.queue, self.kernel, self.global_size, self.local_size)


    def _same_arguments(self, values) -> bool:
        for v, old, buf, gbuf in zip(values, self.values, self.buffers, self.grad_buffers):
            if buf is not None:  # a tensor
                if old() is not v or v.buffer is not buf or (gbuf is not ANY_GRAD and _grad_buffer(v) is not gbuf):
                    return False
            elif v is not old and (type(v) is not type(old) or v != old or (v == 0 and type(v) is float and
                                                                             math.copysign(1.0, v) != math.copysign(1.0, old))):
                return False
        return True

    def replay_into(self, values: list, out: Tensor, settings: tuple):
        """`replay` of a call planned with a result Tensor (all arguments positional, no result
        gradient) into another result Tensor of the same shape and dtype, whose buffer the
        launch takes instead: a call that writes each result into new shared memory
        (cuda_shared.py) replays too."""
        if (self.result_buffers is None or self.out_grad or self.kw_names or len(values) != self.npos
                or settings != self.settings or out.shape != self.shape or out.dtype != self.dtype
                or not self._same_arguments(values)):
            return MISS
        k = self.out_arg
        self.args[k] = out.buffer
        self.kernel.set_arg(k, out.buffer)
        self.result, self.result_buffers = weakref.ref(out), (out.buffer, ANY_GRAD)
        return out, self.enqueue(self.queue, self.kernel, self.global_size, self.local_size)


def _grad_buffer(t: Tensor):
    g = t.grad
    return None if g is None else g.buffer
