"""SlangPy calls with torch tensors: the call is a torch.autograd.Function, so `loss.backward()`
reaches the tensors that require gradients through the function's `bwds`. Tensors travel through
host memory (diffc's device is OpenCL's, not torch's): each call copies its torch inputs in and
its result out. A `_result` torch tensor is written in place and becomes the call's output in the
autograd graph (as SlangPy does), so it must not be a leaf that requires gradients."""

from __future__ import annotations

import numpy as np

from diffc.runtime.errors import CallError
from diffc.runtime.torch_bridge import first_order_only
from diffc.slangpy.tensor import Tensor
from diffc.slangpy.values import element_type


def holds_torch(args: tuple, kwargs: dict, result) -> bool:
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return False
    return any(isinstance(v, torch.Tensor) for v in (*args, *kwargs.values(), result))


def call(handle, args: tuple, kwargs: dict, result):
    import torch

    names = list(kwargs)
    values = [*args, *kwargs.values()]
    where = [k for k, v in enumerate(values) if isinstance(v, torch.Tensor)]
    given = result if isinstance(result, torch.Tensor) else None
    if given is not None and given.is_leaf and given.requires_grad:
        raise CallError(f"error: {handle.name}(): '_result' is a leaf tensor that requires grad: pass a detached "
                        "tensor (img.detach()) for the call to write", "_result")

    class SlangPyCall(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *tensors):
            inputs = tensors[: len(where)]
            spy_values = list(values)
            spy_inputs = []
            for k, t in zip(where, inputs):
                st = Tensor.from_numpy(None, t.detach().cpu().numpy())
                if t.requires_grad:
                    st = st.with_grads()
                spy_values[k] = st
                spy_inputs.append(st)
            spy_args = spy_values[: len(args)]
            spy_kwargs = dict(zip(names, spy_values[len(args):]))
            spy_result = None
            if given is not None:  # the call's shape may come from it (call_id)
                et = element_type(handle._pick(args, kwargs).result.name)
                k = len(et.shape) if et is not None else 0
                if et is None or tuple(given.shape[len(given.shape) - k:]) != et.shape:
                    raise CallError(f"error: {handle.name}(): '_result' of shape {tuple(given.shape)} does not hold "
                                    f"the function's {handle._pick(args, kwargs).result.name} results", "_result")
                spy_result = Tensor.empty(None, tuple(given.shape[: len(given.shape) - k]), et)
            out = handle._run("call", tuple(spy_args), spy_kwargs, spy_result)
            ctx.spy = (spy_args, spy_kwargs, spy_inputs, out)
            data = torch.from_numpy(out.to_numpy())
            if given is None:
                return data
            if tuple(given.shape) != tuple(data.shape):
                raise CallError(f"error: {handle.name}(): '_result' has shape {tuple(given.shape)}, the call gives "
                                f"{tuple(data.shape)}", "_result")
            g = tensors[-1]
            with torch.no_grad():
                g.copy_(data.to(g.dtype))
            ctx.mark_dirty(g)
            return g

        @staticmethod
        def backward(ctx, grad):
            if torch.is_grad_enabled():  # create_graph=True: a second backward must fail loudly
                with torch.no_grad():
                    grads = SlangPyCall.backward(ctx, grad)
                return first_order_only(handle.name, grads, (*inputs, grad))
            spy_args, spy_kwargs, spy_inputs, out = ctx.spy
            res = out.with_grads()
            res.grad_in.copy_from_numpy(np.ascontiguousarray(grad.detach().cpu().numpy()))
            for st in spy_inputs:
                if st.grad_out is not None:
                    st.grad_out.clear()
            handle._run("bwds", tuple(spy_args), spy_kwargs, res)
            grads = [torch.from_numpy(st.grad_out.to_numpy()) if st.grad_out is not None else None for st in spy_inputs]
            return (*grads, *([None] if given is not None else []))

    inputs = [values[k] for k in where]
    return SlangPyCall.apply(*inputs, *([given] if given is not None else []))
