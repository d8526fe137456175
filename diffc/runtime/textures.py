"""Binding textures (frontend/textures.py) to a dispatch: an argument of shape (H, W) or (H, W, C),
C the scalars of one texel (the `x C` of its `#diff.abi<texels ...>` role), gives the texels'
buffer (row-major, as the array holds them), the width W and the height H; a global texture's
size buffer (role `dims`) gets (W, H).

A diffc.Tensor is bound as it is (an RWTexture2D writes into it); a numpy array is copied into a
new Tensor for the dispatch, so what a kernel writes there is not seen (pass a Tensor to read it)."""

from __future__ import annotations

import numpy as np

from diffc.runtime.errors import CallError
from diffc.runtime.tensor import Tensor

ROLES = ("texels", "width", "height", "dims")  # a texture's parameters' ABI roles (dialects/abi.py)
SIZES = ("width", "height", "dims")  # the ones passed with the texture, not named by the caller
NAMED = ("texels", "dims")  # the ones whose `of` is the texture's argument name


class BoundTexture:
    def __init__(self, tensor: Tensor, width: int, height: int):
        self.tensor, self.width, self.height = tensor, width, height
        self._dims: Tensor | None = None

    @property
    def dims(self) -> Tensor:
        if self._dims is None:
            self._dims = Tensor.from_numpy(np.array([self.width, self.height], np.int32))
        return self._dims


def bind_texture(where: str, name: str, value, lanes: int, dtypes: tuple) -> BoundTexture:
    """The texture argument `name` (path as written), checked against its texel layout."""
    if isinstance(value, np.ndarray):
        if value.dtype not in dtypes:
            if not (np.issubdtype(value.dtype, np.number) and np.can_cast(value.dtype, dtypes[0], "same_kind")):
                raise CallError(f"error: {where}: texture '{name}' holds {_names(dtypes)} texels, got a "
                                f"{value.dtype.name} array", name)
            value = value.astype(dtypes[0])
        shape = value.shape
        value_tensor = None
    elif isinstance(value, Tensor):
        if value.dtype not in dtypes:
            raise CallError(f"error: {where}: texture '{name}' holds {_names(dtypes)} texels, got a "
                            f"{value.dtype.name} Tensor", name)
        shape, value_tensor = value.shape, value
    else:
        raise CallError(f"error: {where}: argument '{name}' is a texture: pass a Tensor or numpy array of shape "
                        f"(H, W{'' if lanes == 1 else f', {lanes}'}), got {type(value).__name__}", name)
    ok = len(shape) == 3 and shape[2] == lanes or len(shape) == 2 and lanes == 1
    if not ok or shape[0] == 0 or shape[1] == 0:
        want = "(H, W) or (H, W, 1)" if lanes == 1 else f"(H, W, {lanes})"
        raise CallError(f"error: {where}: texture '{name}' needs a non-empty array of shape {want} ({lanes} "
                        f"scalar{'s' if lanes > 1 else ''} a texel), got shape {tuple(shape)}", name)
    if shape[0] * shape[1] * lanes >= 2**31:
        raise CallError(f"error: {where}: texture '{name}' of shape {tuple(shape)} has 2^31 scalars or more "
                        "(texel addresses are 32-bit)", name)
    tensor = value_tensor if value_tensor is not None else Tensor.from_numpy(np.ascontiguousarray(value))
    return BoundTexture(tensor, int(shape[1]), int(shape[0]))


def _names(dtypes: tuple) -> str:
    return " or ".join(d.name for d in dtypes)
