"""The one place that builds an MLIR context: jaxlib's bindings with func, arith, stablehlo, chlo.

jaxlib ships the MLIR Python bindings and the StableHLO dialect; importing them does not
import jax. Both sides' StableHLO text (JAX's own, and torch-mlir's) parses here.
"""

from __future__ import annotations


def make_context():
    """A fresh MLIR context that knows the dialects StableHLO programs use."""
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext
    from jaxlib.mlir.dialects import chlo, stablehlo

    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)  # func, arith, tensor, ... as jax registers them
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True  # unknown ops become opaque IR ops, never a parse error
    ctx.append_dialect_registry(registry)
    ctx.load_all_available_dialects()
    stablehlo.register_dialect(ctx)
    chlo.register_dialect(ctx)
    return ctx
