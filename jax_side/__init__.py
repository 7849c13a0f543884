"""JAX / Flax NNX implementations of every catalogue entry (imports only `reference`).

XLA's INFO lines (`pjrt_client.cc ... PjRt-IFRT device count`) are silenced for the Python API
as for the CLI: TF_CPP_MIN_LOG_LEVEL=1 unless you set it (0 brings them back). XLA reads it when
its backend first starts, which is after this import even if jax was imported first.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

from jax_side.kernels import LAYOUTS, build, decoder
from jax_side.params import canonical_names, export_weights, load_weights
from jax_side.run import run_case, run_module

__all__ = ["LAYOUTS", "build", "decoder", "canonical_names", "export_weights", "load_weights", "run_case", "run_module"]
