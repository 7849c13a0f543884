"""The third compilation path: the catalogue's PyTorch modules through torch-xla (torch.export ->
torch_xla.stablehlo -> StableHLO), the path that takes PyTorch programs to TPUs.

torch-xla 2.9 needs torch 2.9, so it lives in its own venv (`make torch-xla`: .venv-torchxla) and
runs as a subprocess (driver.py); this package is the host's side of it and imports neither torch
nor torch-xla. `available()` says whether the venv is there; without it every entry point raises
PathUnavailable, one line naming the make target.
"""

from torchxla_side.lower import SIDE, available, lower_entry, lower_regional, unavailable_reason

__all__ = ["SIDE", "available", "lower_entry", "lower_regional", "unavailable_reason"]
