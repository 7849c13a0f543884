"""A small Comparison built from IR programs, with no framework: for the rendering and report tests."""

from __future__ import annotations

import dataclasses

from hardware_models.comparison import compare_lowerings
from landscape.comparison_workload import plan_workloads
from reference.lowering import Lowering
from tests.hardware_models.programs import linear_gelu, softmax


def small_comparison(targets=("h100", "groq-lpu"), segments: int = 0, phase: str = "prefill"):
    """Two different programs standing in for the two paths, compared on `targets` (names), with the
    default workload's record for `phase`; `segments` > 0 replaces the diff by that many divergent
    segments and a histogram where one op exists in two dialects."""
    torch_side = Lowering("torch", "toy", {"stablehlo": "// toy"}, linear_gelu(64, 128, 256))
    jax_side = Lowering("jax", "toy", {"stablehlo": "// toy"}, softmax(64, 128))
    (workload,) = plan_workloads(None, {"mode": phase}, "bfloat16")
    result = compare_lowerings(torch_side, jax_side, list(targets), "block", workload=workload.to_dict())
    if segments:
        diff = {
            "histogram": {"arith.constant": [7, 0], "stablehlo.constant": [11, 17], "stablehlo.add": [1, 1]},
            "divergences": [{"segment": i, "after": f"op{i}", "reasons": [f"reason {i}"]} for i in range(segments)],
        }
        result = dataclasses.replace(result, diff=diff)
    return result, {"torch": torch_side, "jax": jax_side}
