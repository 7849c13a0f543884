"""Run a catalogue case (or any module) on the PyTorch side and return float64 numpy outputs."""

from __future__ import annotations

import contextlib

import numpy as np
import torch
from torch import nn

from pytorch_side.kernels import build
from pytorch_side.params import load_weights, to_numpy, to_torch
from reference.inputs import Case

CONVOLUTIONS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)


@contextlib.contextmanager
def _without_onednn(module: nn.Module):
    """oneDNN's bfloat16 convolution in torch 2.13's CPU build returns garbage on some strided,
    padded shapes (height 9, stride 2, padding 1, kernel 2 or 3: errors of 1e13 and inf, where
    ATen's own kernel is within 4 u; tests/sides/test_agreement_properties.py). A module holding
    a bfloat16 convolution runs on ATen's kernel; every other module keeps oneDNN."""
    affected = any(isinstance(m, CONVOLUTIONS) and m.weight.dtype == torch.bfloat16 for m in module.modules())
    if not affected:
        yield
        return
    enabled = torch._C._get_mkldnn_enabled()
    torch._C._set_mkldnn_enabled(False)
    try:
        yield
    finally:
        torch._C._set_mkldnn_enabled(enabled)


def run_module(module: nn.Module, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
    """Call any module on numpy inputs without autograd; outputs come back as float64 numpy."""
    with torch.inference_mode(), _without_onednn(module):
        out = module(*(to_torch(x) for x in inputs))
    out = out if isinstance(out, tuple) else (out,)
    return tuple(to_numpy(o).astype(np.float64) for o in out)


def run_case(case: Case) -> tuple[np.ndarray, ...]:
    """Build the entry's module, load the case's weights, run it on the case's inputs."""
    module = load_weights(build(case.entry.name, case.shapes, case.dtype), dict(case.weights))
    return run_module(module, *case.inputs.values())
