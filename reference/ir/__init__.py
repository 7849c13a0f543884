"""The HLO-like IR that both sides lower into, and its services (printer, verifier, counters)."""

from reference.ir.counters import OpCounts, Stats, dot_and_conv_flops, module_stats, op_cost
from reference.ir.from_stablehlo import category, parse_stablehlo
from reference.ir.graph import (
    Block,
    ConvDims,
    DotDims,
    Function,
    Module,
    Op,
    Origin,
    TensorType,
)
from reference.ir.printer import print_module
from reference.ir.verify import verify

__all__ = [
    "Block",
    "ConvDims",
    "OpCounts",
    "DotDims",
    "Function",
    "Module",
    "Op",
    "Origin",
    "Stats",
    "TensorType",
    "category",
    "dot_and_conv_flops",
    "module_stats",
    "op_cost",
    "parse_stablehlo",
    "print_module",
    "verify",
]
