"""The Cerebras model: a region's compute at its share of the wafer, plus the region latency."""

from __future__ import annotations

import pytest

from hardware_models.calibration import gemm_module
from hardware_models.estimate import estimate
from hardware_models.pipelines import compile_plan
from hardware_models.plan import Region
from hardware_models.target import get_target

WSE3 = get_target("wse-3")


def test_worked_number_one_gflop_on_one_percent_of_a_wse3():
    """cost/wafer.py: 1e9 / (9000 * 0.5 * 125e15 / 900000) = 1.6 us, plus 0.5 us of latency."""
    module = gemm_module(500, 1000, 1000, "bf16")  # 2 * 500 * 1000 * 1000 = 1 GFLOP
    plan = compile_plan(module, WSE3)
    (group,) = plan.groups
    plan = plan.with_(regions={group.id: Region(9000)})
    cost = estimate(module, WSE3, plan=plan).groups[0].cost
    assert cost.compute_s == pytest.approx(1e9 / (9000 * 0.5 * 125e15 / 900_000)) == pytest.approx(1.6e-6)
    assert cost.time_s == pytest.approx(max(cost.compute_s, cost.memory_bound_s) + 0.5e-6)


def test_every_kernel_pays_the_region_latency_so_depth_bounds_batch_one():
    module = gemm_module(1, 4096, 4096, "bf16")
    cost = estimate(module, WSE3).groups[0].cost
    assert cost.schedule_s == pytest.approx(WSE3["schedule.region_latency_s"])
