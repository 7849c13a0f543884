"""The LPU cost: times sum to the schedule's makespan; transfers by their formula; a trace that repeats."""

from __future__ import annotations

import json

import pytest

from hardware_models.calibration import gemm_module
from hardware_models.cost.lpu import transfer_seconds
from hardware_models.estimate import estimate
from hardware_models.pipelines import compile_plan
from hardware_models.plan import Group, Partition
from hardware_models.target import get_target
from hardware_models.trace import chrome_trace
from tests.hardware_models.programs import linear_gelu

GROQ = get_target("groq-lpu")


def test_op_times_sum_to_the_makespan():
    module = linear_gelu(512, 640, 320, "f16")
    plan = compile_plan(module, GROQ)
    est = estimate(module, GROQ, plan=plan)
    makespan = max(slot.finish for slot in plan.schedule.values())
    assert est.total.time_s == pytest.approx(makespan / 9e8)


def test_transfer_worked_numbers_for_llama_2_7b_decode():
    """cost/lpu.py: 32 stage hops take 17.2 us and 64 all-reduces 66.3 us."""
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
