"""place_layers: regions hold their weights and share the rest by FLOPs; too big for a wafer,
the compiler splits the model over wafers or streams its weights, and says which."""

from __future__ import annotations

import pytest

from hardware_models.calibration import gemm_module
from hardware_models.estimate import estimate
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from tests.hardware_models.programs import linear_gelu

WSE3 = get_target("wse-3")


def test_a_small_program_is_resident_and_its_regions_fill_the_wafer():
    plan = compile_plan(linear_gelu(512, 1024, 2048, "bf16"), WSE3)
    assert plan.partition.mode == "resident on one wafer" and plan.partition.chips == 1
    used = sum(r.pes for r in plan.regions.values())
    assert 0.99 * 900_000 <= used <= 900_000 + len(plan.regions)


def test_regions_are_sized_by_flops_beyond_the_pes_that_hold_weights():
    plan = compile_plan(linear_gelu(512, 1024, 2048, "bf16"), WSE3)
    (group,) = plan.groups  # the matmul with its epilogue, one region
    sram_per_pe = 44e9 * 0.8 / 900_000
    assert plan.regions[group.id].pes >= (2048 * 1024 * 2 + 1024 * 2) / sram_per_pe


def test_weights_larger_than_a_wafer_are_split_over_wafers_when_hops_are_cheaper():
    module = gemm_module(16384, 131072, 131072, "f16")  # 38.7 GB of arguments, 35.2 GB usable
    plan = compile_plan(module, WSE3)
    assert plan.partition.mode == "split over 2 wafers" and plan.partition.chips == 2
    assert [g.label for g in plan.groups if g.kind == "transfer"] == ["wafer hop"]
    assert any("split over 2 wafers" in note and "streamed" in note for note in plan.notes)


def test_weights_are_streamed_when_hopping_between_wafers_would_cost_more():
    slow_hops = WSE3.with_overrides({"schedule.wafer_hop_latency_s": 10.0})
    module = gemm_module(16384, 131072, 131072, "f16")
    plan = compile_plan(module, slow_hops)
    assert plan.partition.mode == "streamed from MemoryX" and plan.partition.chips == 1
    est = estimate(module, slow_hops, plan=plan)
    assert est.total.bytes_at("memoryx") == 2 * (16384 * 131072 + 131072 * 131072)
    assert est.groups[0].cost.bottleneck == "memory"
