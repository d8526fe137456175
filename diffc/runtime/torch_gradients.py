"""The gradients a torch autograd backward returns for a diffc call's inputs."""

from __future__ import annotations


def input_gradients(idx, tensors, grads: dict) -> list:
    """For each input `tensors[k]` (argument `idx[k]`): its gradient from `grads` (argument ->
    torch tensor of the call's shape and dtype), in the input's dtype and summed down to its
    shape (broadcast inputs), or None where it takes none."""
    out = []
    for i, t in zip(idx, tensors):
        g = grads.get(i)
        if g is None:
            out.append(None)
            continue
        if g.dtype != t.dtype:
            g = g.to(t.dtype)
        if g.shape != t.shape:
            g = g.sum_to_size(t.shape) if t.dim() else g.sum()
        out.append(g)
    return out
