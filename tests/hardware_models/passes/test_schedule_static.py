"""schedule_static's cycles worked by hand: every unit (MEM, VXM, SXM, MXM, HOST), a chained
and an unchained consumer, and distinct latencies per unit (7, 11, 13 and 17 cycles, set over the
target file's), so a latency read from the wrong unit cannot pass."""

from __future__ import annotations

import math

import pytest

from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from reference.ir import parse_stablehlo

A, S, T, R, W = (
    "tensor<1024x640xf16>",
    "tensor<1024x320xf16>",
    "tensor<320x1024xf16>",
    "tensor<320xf16>",
    "tensor<320x320xf16>",
)


def _program(dot_type: str = "f16", extra: str = ""):
    w = W.replace("f16", dot_type)
    s_dot = S.replace("f16", dot_type)
    convert = f"  %c = stablehlo.convert %1 : ({S}) -> {s_dot}\n" if dot_type != "f16" else ""
    lhs = "%c" if dot_type != "f16" else "%1"
    return parse_stablehlo(
        f"func.func @main(%a: {A}, %w: {w}) -> ({R}, {s_dot}) {{\n"
        f"  %z = stablehlo.constant dense<0.0> : tensor<f16>\n"
        f"  %0 = stablehlo.slice %a [0:1024, 0:320] : ({A}) -> {S}\n"
        f"  %1 = stablehlo.exponential %0 : {S}\n"
        f"  %2 = stablehlo.transpose %1, dims = [1, 0] : ({S}) -> {T}\n"
        f"  %3 = stablehlo.reduce(%2 init: %z) applies stablehlo.add across dimensions = [1] : ({T}, tensor<f16>) -> {R}\n"
        + convert
        + extra
        + f"  %4 = stablehlo.dot_general {lhs}, %w, contracting_dims = [1] x [0] : ({s_dot}, {w}) -> {s_dot}\n"
        f"  return %3, %4 : {R}, {s_dot}\n}}\n"
    )


def _target():
    return get_target("groq-lpu").with_overrides(
        {
            "schedule.mem_latency_cycles": 7,
            "schedule.vxm_latency_cycles": 11,
            "schedule.sxm_latency_cycles": 13,
            "schedule.mxm_latency_cycles": 17,
        }
    )


def test_start_and_finish_cycles_of_five_units_by_hand():
    """Feed: bytes / (80e12 / 0.9e9 B a cycle). Latency: memory 7 + the unit's own (MEM: 7 alone).
    slice   MEM  reads 1024 x 320 f16 and writes it, 1,310,720 B: 15 cycles, 0-15
    exp     VXM  chains onto the slice: starts at 0 + 7 + (7 + 11) = 25, busy 327,680 / 5120 = 64,
                 ends at max(25 + 64, 15 + 18) = 89
    trans.  SXM  chains onto exp: 25 + 18 + (7 + 13) = 63, busy 1024 vectors / 2 a cycle = 512: 575
    reduce  VXM  does not chain: 575 + 18 = 593, busy 327,680 / 5120 = 64 (its feed is 8): 657
    dot     MXM  waits for exp to finish: 89 + (7 + 17) = 113; 1024 x 320 x 320 MACs (n, k already
                 whole 320-tiles) at 188e12 / (2 x 0.9e9) = 104,444 a cycle: 1004 cycles, to 1117
    Each adds to the makespan what it pushes it past the previous end: 15, 74, 486, 82, 460."""
    plan = compile_plan(_program(), _target())
    slots = [plan.schedule[g.id] for g in plan.groups]
    got = [(s.unit, s.start, s.finish, s.busy, s.increment) for s in slots]
    assert got == [
        ("MEM", 0, 15, 15, 15),
        ("VXM", 25, 89, 64, 74),
        ("SXM", 63, 575, 512, 486),
        ("VXM", 593, 657, 64, 82),
        ("MXM", 113, 1117, 1004, 460),
    ]
    assert [s.feed for s in slots] == [15, 15, 15, 8, 18]
    assert slots[4].padded_flops == 2 * 1024 * 320 * 320
    assert sum(s.increment for s in slots) == max(s.finish for s in slots)


def test_an_int8_matmul_runs_at_the_four_planes_full_rate():
    """i8: 409,600 MACs a cycle (the target file's mxm_macs_per_cycle), 4x the fp16 rate's
    104,444: 1024 x 320 x 320 MACs in 256 cycles, where fp16 takes 1004."""
    plan = compile_plan(_program("i8"), _target())
    dot = plan.schedule[plan.groups[-1].id]
    assert (dot.unit, dot.busy) == ("MXM", math.ceil(1024 * 320 * 320 / 409_600))


def test_an_op_the_chip_cannot_run_goes_to_the_host_and_occupies_no_unit():
    """The host op's operands still stream out of SRAM (its feed), but no unit is busy."""
    extra = f'  %u = "foo.bar"(%1) : ({S}) -> {S}\n'
    plan = compile_plan(_program(extra=extra), _target())
    (host,) = [plan.schedule[g.id] for g in plan.groups if g.kind == "fallback"]
    assert (host.unit, host.busy) == ("HOST", 0)
    assert host.feed == math.ceil(2 * 1024 * 320 * 2 / (80e12 / 9e8))


@pytest.mark.parametrize("chips", [2, 4])
def test_a_matmul_split_over_chips_that_share_its_layer_takes_its_share_of_the_cycles(chips):
    """tensor_parallel chips each run 1/tp of the padded MACs: ceil(1024 x 320 x 320 / tp / 104,444)."""
    from dataclasses import replace

    from hardware_models.families.lpu.schedule_static import op_cycles

    target = _target()
    module = _program()
    plan = compile_plan(module, target)
    plan = plan.with_(partition=replace(plan.partition, tensor_parallel=chips))
    unit, busy, _, padded = op_cycles(plan, module, plan.groups[-1], target)
    rate = target["peak.fp16_flop_per_s"] / (2 * target["chip.clock_hz"])
    assert (unit, busy, padded) == ("MXM", math.ceil(1024 * 320 * 320 / chips / rate), 2 * 1024 * 320 * 320)


def test_lpu_bytes_and_times_per_op_by_hand():
    """The LPU's one level, SRAM: each op moves its operands and results (the slice reads only the
    half it returns): slice 2 x 655,360 B, exp 2 x 655,360, transpose 2 x 655,360, the row sum
    655,360 + 640 + its f16 zero (2 B), the dot 655,360 + 204,800 + 655,360. Its time is what it adds to the makespan
    over the 0.9 GHz clock; its memory time the feed, at most that."""
    from hardware_models.estimate import estimate

    target = _target()
    module = _program()
    plan = compile_plan(module, target)
    est = estimate(module, target, plan=plan)
    V = 1024 * 320 * 2
    assert [dict(g.cost.bytes) for g in est.groups] == [
        {"sram": 2 * V},
        {"sram": 2 * V},
        {"sram": 2 * V},
        {"sram": V + 640 + 2},
        {"sram": V + 320 * 320 * 2 + V},
    ]
    for g in est.groups:
        slot = plan.schedule[g.group]
        assert g.cost.time_s == pytest.approx(slot.increment / 9e8, rel=1e-12)
        assert dict(g.cost.memory_s)["sram"] == pytest.approx(min(slot.feed, slot.increment) / 9e8, rel=1e-12)
