"""JAX / Flax NNX implementations of every catalogue entry (imports only `reference`)."""

from jax_side.kernels import LAYOUTS, build
from jax_side.params import canonical_names, export_weights, load_weights
from jax_side.run import run_case, run_module

__all__ = ["LAYOUTS", "build", "canonical_names", "export_weights", "load_weights", "run_case", "run_module"]
