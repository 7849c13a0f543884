"""PyTorch implementations of every catalogue entry (imports only `reference`)."""

from pytorch_side.kernels import build, decoder
from pytorch_side.params import export_weights, load_weights
from pytorch_side.run import run_case, run_module

__all__ = ["build", "decoder", "export_weights", "load_weights", "run_case", "run_module"]
