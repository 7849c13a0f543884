"""The cost record: addable, three-way bottleneck, a program's cost = the sum of its kernels' costs."""

from __future__ import annotations

import pytest

from hardware_models.cost.model import Cost, roofline_cost
from hardware_models.estimate import estimate
from hardware_models.target import get_target
from tests.hardware_models.programs import linear_gelu, softmax


def test_costs_add_field_by_field_and_merge_levels():
    a = Cost(10, 12, 1.0, 0.5, 2.0, (("hbm", 100),), (("hbm", 1.0),))
    b = Cost(5, 5, 0.5, 0.1, 1.0, (("hbm", 50), ("l2", 7)), (("hbm", 0.5),))
    total = a + b * 2
    assert (total.flops, total.padded_flops, total.time_s) == (20, 22, 4.0)
    assert dict(total.bytes) == {"hbm": 200, "l2": 14}


def test_schedule_time_is_what_the_busy_time_and_fixed_cost_add_above_the_roofline_bound():
    cost = roofline_cost(100, 120, compute_s=2.0, bytes_={"hbm": 1}, memory_s={"hbm": 3.0}, busy_s=2.4, fixed_s=0.5)
    assert cost.time_s == pytest.approx(3.5) and cost.schedule_s == pytest.approx(0.5) and cost.bottleneck == "memory"
    padded = roofline_cost(100, 200, compute_s=2.0, bytes_={}, memory_s={"hbm": 1.0}, busy_s=5.0, fixed_s=0.0)
    assert padded.schedule_s == pytest.approx(3.0) and padded.bottleneck == "schedule"


@pytest.mark.parametrize("target", ["a100", "h100", "tpu-v4", "tpu-v6e"])
@pytest.mark.parametrize("module", [linear_gelu(65, 129, 63), softmax(129, 150)], ids=["linear_gelu", "softmax"])
def test_program_total_is_the_sum_of_its_kernels(module, target):
    est = estimate(module, get_target(target))
    assert est.total.time_s == pytest.approx(sum(g.cost.time_s * g.repeats for g in est.groups))
    data = est.to_dict()
    for g in est.groups:
        c = g.cost
        assert c.time_s == pytest.approx(max(c.compute_s, c.memory_bound_s) + c.schedule_s)
        assert c.schedule_s > 0  # every kernel pays at least its fixed cost
        assert 0 < c.utilization < 1 and c.utilization == pytest.approx(c.compute_s / c.time_s)
    assert sum(data["bottleneck_counts"].values()) == data["kernels"]


@pytest.mark.parametrize("target", ["a100", "tpu-v5p", "spyre", "groq-lpu", "wse-2"])
def test_an_unsupported_op_runs_on_the_host_and_the_output_names_it_with_its_cost(target):
    from tests.hardware_models.programs import program, t

    v = t((1 << 20,), "f16")
    module = program(
        {"a": v},
        [f"%0 = stablehlo.negate %a : {v}", f"%1 = stablehlo.custom_call @my_kernel(%0) : ({v}) -> {v}"],
        "%1",
        v,
    )
    chip = get_target(target)
    est = estimate(module, chip)
    (fallback,) = [g for g in est.groups if g.kind == "fallback"]
    link_s = fallback.cost.bytes_at("host") / chip["interconnect.host_bytes_per_s"]
    assert fallback.cost.bytes_at("host") >= 2 * 2 * (1 << 20)  # the operand out and the result back
    assert fallback.cost.time_s >= link_s > 0
    note = next(n for n in est.notes if n.startswith("host fallbacks"))
    assert "custom_call" in note and "of the total" in note
