"""Weights in and out of PyTorch modules as `dict[str, np.ndarray]` keyed by canonical names.

The canonical names are the modules' own state-dict keys; this is one half of the converter
between the PyTorch state dict and the JAX pytree (the other half is jax_side/params.py).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import torch
from torch import nn


def to_torch(array: np.ndarray) -> torch.Tensor:
    """numpy (bfloat16 from ml_dtypes included) -> torch, bit for bit."""
    if array.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(array.view(np.uint16).astype(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(array))


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """torch -> numpy in the same dtype (bfloat16 as ml_dtypes.bfloat16), bit for bit."""
    tensor = tensor.detach().cpu().contiguous()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return tensor.numpy()


def load_weights(module: nn.Module, weights: dict[str, np.ndarray]) -> nn.Module:
    """Copy canonical weights into the module; every key must match (strict)."""
    module.load_state_dict({k: to_torch(v) for k, v in weights.items()}, strict=True)
    return module


def export_weights(module: nn.Module) -> dict[str, np.ndarray]:
    """The module's persistent weights as canonical numpy arrays."""
    return {k: to_numpy(v) for k, v in module.state_dict().items()}
