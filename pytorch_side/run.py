"""Run a catalogue case (or any module) on the PyTorch side and return float64 numpy outputs."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from pytorch_side.kernels import build
from pytorch_side.params import load_weights, to_numpy, to_torch
from reference.inputs import Case


def run_module(module: nn.Module, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
    """Call any module on numpy inputs without autograd; outputs come back as float64 numpy."""
    with torch.inference_mode():
        out = module(*(to_torch(x) for x in inputs))
    out = out if isinstance(out, tuple) else (out,)
    return tuple(to_numpy(o).astype(np.float64) for o in out)


def run_case(case: Case) -> tuple[np.ndarray, ...]:
    """Build the entry's module, load the case's weights, run it on the case's inputs."""
    module = load_weights(build(case.entry.name, case.shapes, case.dtype), dict(case.weights))
    return run_module(module, *case.inputs.values())
