"""The LPU cost: times sum to the schedule's makespan; transfers by their formula; a trace that
repeats, in microseconds, with one process per chip and the pipeline laid out across them."""

from __future__ import annotations

import json
import math

import pytest

from hardware_models.calibration import gemm_module
from hardware_models.estimate import estimate
from hardware_models.families.lpu.cost import transfer_seconds
from hardware_models.pipelines import compile_plan
from hardware_models.plan import Group, Partition
from hardware_models.target import get_target
from hardware_models.trace import chrome_trace
from reference.ir.graph import Function, Module, Op
from tests.hardware_models.programs import linear_gelu, transposing_block

GROQ = get_target("groq-lpu")


def test_op_times_sum_to_the_makespan():
    module = linear_gelu(512, 640, 320, "f16")
    plan = compile_plan(module, GROQ)
    est = estimate(module, GROQ, plan=plan)
    makespan = max(slot.finish for slot in plan.schedule.values())
    assert est.total.time_s == pytest.approx(makespan / 9e8)


def test_transfer_worked_numbers_for_llama_2_7b_decode():
    """families/lpu/cost.py: 32 stage hops take 17.2 us and 64 all-reduces 66.3 us."""
    plan = compile_plan(gemm_module(8, 8, 8, "f16"), GROQ).with_(partition=Partition(65, 2, 0, 2.076e8, 8192, 32))
    hop = transfer_seconds(plan, Group(0, "transfer", (), "main", 32, "stage hop"), GROQ)
    reduce = transfer_seconds(plan, Group(1, "transfer", (), "main", 64, "all-reduce"), GROQ)
    assert 32 * hop == pytest.approx(17.2e-6, rel=1e-2) and 64 * reduce == pytest.approx(66.3e-6, rel=1e-2)


def test_the_trace_is_byte_identical_across_runs_and_has_one_event_per_op():
    module = linear_gelu(512, 640, 320, "f16")
    first = json.dumps(chrome_trace(compile_plan(module, GROQ), GROQ), sort_keys=True)
    second = json.dumps(chrome_trace(compile_plan(module, GROQ), GROQ), sort_keys=True)
    assert first == second
    events = [e for e in json.loads(first)["traceEvents"] if e["ph"] == "X"]
    assert sorted(e["name"] for e in events) == ["add", "dot_general", "logistic", "multiply"]


def _layered(layers: int) -> Module:
    """main: an exp (before the layers), `call @block` x layers (a 64 x 128 by 128 x 128 f16
    GEMM, an exp, a transpose there and back), a negate (after them)."""
    body, x, w = transposing_block("f16")
    main = Function(
        "main",
        (("%a", x), ("%w", w)),
        (x,),
        (
            Op("stablehlo.exponential", ("%0",), (x,), ("%a",), (x,)),
            Op("func.call", ("%1",), (x,), ("%0", "%w"), (x, w), callee="block", trip_count=layers),
            Op("stablehlo.negate", ("%2",), (x,), ("%1",), (x,)),
            Op("func.return", (), (), ("%2",), (x,)),
        ),
    )
    return Module((main, body))


def _ops(trace: dict) -> list[dict]:
    """The op events (no metadata, no transfers), in the order the trace lists them."""
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] != "transfer"]


def _by_chip(trace: dict) -> dict[int, list[dict]]:
    chips: dict[int, list[dict]] = {}
    for e in _ops(trace):
        chips.setdefault(e["pid"], []).append(e)
    return chips


def _start(e: dict) -> int:
    """The cycle an event starts at on the trace's clock (compared as integers, not as µs floats)."""
    return e["args"]["trace_cycle"]


def _end(e: dict) -> int:
    """The cycle an event ends at: an op's drawn cycles (at least one), a transfer's cycles."""
    a = e["args"]
    return a["trace_cycle"] + max(a["finish_cycle"] - a["start_cycle"] if "finish_cycle" in a else a["cycles"], 1)


def _cycles(plan, label: str, target) -> int:
    (group,) = [g for g in plan.groups if g.label == label]
    return math.ceil(round(transfer_seconds(plan, group, target) * target["chip.clock_hz"], 6))


def test_trace_times_are_microseconds_and_say_so():
    """ts and dur are µs (the trace-event format's unit) and displayTimeUnit is "ms", the
    default that shows µs as µs: ts = start cycle / clock x 1e6 on one chip, and on several the
    event's trace_cycle (its start cycle plus its layer's place in the pipeline) / clock x 1e6."""
    one = chrome_trace(compile_plan(linear_gelu(512, 640, 320, "f16"), GROQ), GROQ)
    many = chrome_trace(compile_plan(_layered(7), GROQ, chips=3), GROQ)
    clock = GROQ["chip.clock_hz"]
    for trace in (one, many):
        assert trace["displayTimeUnit"] == "ms" and trace["otherData"] == {
            "target": "groq-lpu",
            "clock_hz": clock,
            "ts_unit": "us",
        }
    assert _ops(one)
    for e in _ops(one):
        a = e["args"]
        assert e["ts"] == a["start_cycle"] / clock * 1e6 and a["trace_cycle"] == a["start_cycle"]
        assert e["dur"] == max(a["finish_cycle"] - a["start_cycle"], 1) / clock * 1e6
    for e in many["traceEvents"]:
        if e["ph"] == "X":
            assert e["ts"] == e["args"]["trace_cycle"] / clock * 1e6
    for e in _ops(many):
        a = e["args"]
        assert e["dur"] == max(a["finish_cycle"] - a["start_cycle"], 1) / clock * 1e6
        assert a["trace_cycle"] >= a["start_cycle"]


def test_each_chip_is_a_process_running_the_layers_the_partition_gives_it():
    """7 layers over 3 chips (3 stages of 1): chip k is pid k, named "chip k" with its block
    and layers; layer i runs on stage i * 3 // 7 (3, 2 and 2 layers), each layer once with every
    op of the block; main's exp runs first on chip 0, its negate last on the last chip."""
    plan = compile_plan(_layered(7), GROQ, chips=3)
    assert (plan.partition.chips, plan.partition.stages, plan.partition.layers) == (3, 3, 7)
    trace = chrome_trace(plan, GROQ)
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    block = next(g.instance for g in plan.groups if g.repeats == 7)
    assert names == {
        0: f"chip 0 (stage 0): main, {block} layers 0-2",
        1: f"chip 1 (stage 1): {block} layers 3-4",
        2: f"chip 2 (stage 2): {block} layers 5-6, main",
    }
    block_ops = sorted(g.id for g in plan.groups if g.instance == block)
    assert len(block_ops) == 4
    for layer in range(7):
        events = [e for e in _ops(trace) if e["args"].get("layer") == layer]
        assert {e["pid"] for e in events} == {layer * 3 // 7}
        assert sorted(e["args"]["group"] for e in events) == block_ops
    chips = _by_chip(trace)
    main = [e for e in _ops(trace) if "layer" not in e["args"]]
    assert [(e["name"], e["pid"]) for e in main] == [("exponential", 0), ("negate", 2)]
    assert _start(main[0]) == 0 and all(_end(main[0]) <= _start(e) for e in chips[0] if e is not main[0])
    assert all(_end(e) <= _start(main[1]) for e in chips[2] if e is not main[1])


def test_chip_k_starts_after_chip_k_minus_1_and_the_stage_hop():
    """The pipeline in order: chip k's first op starts once chip k-1's last op has ended and one
    stage hop (families/lpu/cost.py's time, in whole cycles, on chip k-1's C2C thread) has passed; layer
    i + 1 starts after layer i; the trace draws the stages - 1 hops the cost counts."""
    plan = compile_plan(_layered(7), GROQ, chips=3)
    trace = chrome_trace(plan, GROQ)
    hop = _cycles(plan, "stage hop", GROQ)
    hops = [e for e in trace["traceEvents"] if e.get("name") == "stage hop"]
    assert [(e["pid"], e["args"]["to_chip"], e["args"]["cycles"]) for e in hops] == [(0, 1, hop), (1, 2, hop)]
    assert len(hops) == next(g.repeats for g in plan.groups if g.label == "stage hop")
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert {threads[(e["pid"], e["tid"])] for e in hops} == {"C2C"}
    chips = _by_chip(trace)
    for k in (1, 2):
        first, before = min(_start(e) for e in chips[k]), max(_end(e) for e in chips[k - 1])
        assert first >= before and first == before + hop
        assert _start(hops[k - 1]) == before and first == _end(hops[k - 1])
    for layer in range(6):
        this = [e for e in _ops(trace) if e["args"].get("layer") == layer]
        after = [e for e in _ops(trace) if e["args"].get("layer") == layer + 1]
        assert min(_start(e) for e in after) >= max(_end(e) for e in this)


def test_chips_sharing_a_layer_each_run_it_and_end_it_with_two_all_reduces():
    """A layer's weights over one chip's SRAM (tensor_parallel 2): 9 chips are 5 stages (the last
    of one chip), layer i on stage i * 5 // 7; every chip of a stage runs its layers, each ended
    by two all-reduces on that chip's C2C thread as long as families/lpu/cost.py's (in whole cycles)."""
    target = GROQ.with_overrides({"levels.sram.bytes": 32000 / 0.9})
    plan = compile_plan(_layered(7), target, chips=9)
    p = plan.partition
    assert (p.chips, p.tensor_parallel, p.stages) == (9, 2, 5)
    trace = chrome_trace(plan, target)
    reduce = _cycles(plan, "all-reduce", target)
    stage_chips = {0: [0, 1], 1: [2, 3], 2: [4, 5], 3: [6, 7], 4: [8]}
    for layer in range(7):
        chips = stage_chips[layer * 5 // 7]
        events = [e for e in _ops(trace) if e["args"].get("layer") == layer]
        assert sorted({e["pid"] for e in events}) == chips
        reduces = [e for e in trace["traceEvents"] if e.get("name") == "all-reduce" and e["args"]["layer"] == layer]
        assert sorted(e["pid"] for e in reduces) == sorted(2 * chips)
        assert {e["args"]["cycles"] for e in reduces} == {reduce}
        assert min(_start(e) for e in reduces) >= max(_end(e) for e in events)
    assert len([e for e in trace["traceEvents"] if e.get("name") == "stage hop"]) == p.stages - 1


def test_a_program_without_layers_is_split_over_the_chips_in_program_order():
    """No layer call: the scheduled kernels go to the stages in program order (kernel j of 4 on
    stage j * 3 // 4), each op once, and chip k starts after chip k-1 has finished."""
    plan = compile_plan(linear_gelu(512, 640, 320, "f16"), GROQ, chips=3)
    trace = chrome_trace(plan, GROQ)
    scheduled = [g.id for g in plan.groups if g.id in plan.schedule]
    assert len(scheduled) == 4
    assert [(e["args"]["group"], e["pid"]) for e in _ops(trace)] == [(g, j * 3 // 4) for j, g in enumerate(scheduled)]
    chips = _by_chip(trace)
    assert all(min(_start(e) for e in chips[k]) >= max(_end(e) for e in chips[k - 1]) for k in (1, 2))


def test_a_multi_chip_trace_is_byte_identical_across_runs():
    first = json.dumps(chrome_trace(compile_plan(_layered(7), GROQ, chips=3), GROQ))
    second = json.dumps(chrome_trace(compile_plan(_layered(7), GROQ, chips=3), GROQ))
    assert first == second


@pytest.mark.parametrize("n", [1, 63, 65, 129, 320])
def test_utilization_counts_useful_macs_not_padding(n):
    """A GEMM whose n is not a whole 320-element vector pads to one: the MXM is busy on padded
    MACs, but utilization is useful work only, so it never exceeds FLOPs / padded FLOPs."""
    module = gemm_module(256, n, 256, "f16")
    est = estimate(module, GROQ)
    (group,) = [g for g in est.groups if g.kind == "contraction"]
    cost = group.cost
    assert cost.padded_flops >= cost.flops > 0
    assert cost.utilization <= cost.flops / cost.padded_flops + 1e-12
    if n < 320:
        assert cost.utilization < 1.0
