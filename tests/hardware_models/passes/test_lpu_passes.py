"""The LPU's passes: chips from SRAM capacity, and a deterministic cycle-level list schedule."""

from __future__ import annotations

import math

import pytest

from hardware_models.calibration import gemm_module
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from tests.hardware_models.programs import linear_gelu, softmax

GROQ = get_target("groq-lpu")


def test_a_small_program_fits_one_chip_and_adds_no_transfers():
    plan = compile_plan(linear_gelu(65, 129, 63, "f16"), GROQ)
    assert plan.partition.chips == 1 and all(g.kind != "transfer" for g in plan.groups)


def test_weights_larger_than_sram_spread_over_chips_that_share_the_layer():
    plan = compile_plan(gemm_module(8192, 16384, 16384, "f16"), GROQ)  # 0.27 + 0.54 GB of arguments
    usable = 230_686_720 * 0.9
    needed = 2 * (8192 * 16384 + 16384 * 16384)
    assert plan.partition.chips == math.ceil(needed / usable) == plan.partition.tensor_parallel
    assert [g.label for g in plan.groups if g.kind == "transfer"] == ["all-reduce"]


@pytest.mark.parametrize(
    "module", [linear_gelu(129, 320, 65, "f16"), softmax(63, 150, "f32")], ids=["linear_gelu", "softmax"]
)
def test_the_schedule_is_deterministic_and_no_unit_runs_two_ops_at_once(module):
    first, second = compile_plan(module, GROQ), compile_plan(module, GROQ)
    assert first.schedule == second.schedule
    by_unit = {}
    for slot in first.schedule.values():
        by_unit.setdefault(slot.unit, []).append((slot.start, slot.finish))
    for spans in by_unit.values():
        spans.sort()
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
    assert sum(s.increment for s in first.schedule.values()) == max(s.finish for s in first.schedule.values())


def test_matmul_pads_n_and_k_to_the_320_tile_and_runs_at_the_fp16_rate():
    plan = compile_plan(gemm_module(65, 129, 63, "f16"), GROQ)
    (slot,) = plan.schedule.values()
    macs_per_cycle = 188e12 / (2 * 9e8)
    assert slot.unit == "MXM" and slot.busy == math.ceil(65 * 320 * 320 / macs_per_cycle)


def test_an_elementwise_consumer_chains_onto_its_producers_stream():
    plan = compile_plan(linear_gelu(1024, 1024, 1024, "f16"), GROQ)
    dot, add = (plan.schedule[g.id] for g in plan.groups[:2])
    assert add.unit == "VXM" and dot.start < add.start < dot.finish <= add.finish


def test_each_op_goes_to_its_functional_unit():
    from tests.hardware_models.programs import program, t

    x, y, s = t((640, 320), "f16"), t((320, 640), "f16"), t((320, 320), "f16")
    module = program(
        {"x": x},
        [
            f"%0 = stablehlo.transpose %x, dims = [1, 0] : ({x}) -> {y}",
            f"%1 = stablehlo.slice %0 [0:320, 0:320] : ({y}) -> {s}",
            f"%2 = stablehlo.negate %1 : {s}",
        ],
        "%2",
        s,
    )
    plan = compile_plan(module, GROQ)
    assert [plan.schedule[g.id].unit for g in plan.groups] == ["SXM", "MEM", "VXM"]
