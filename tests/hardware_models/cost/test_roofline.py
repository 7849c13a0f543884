"""The roofline: one point per kernel, none above its ceilings, PNG and SVG written."""

from __future__ import annotations

import pytest

from hardware_models.cost.roofline import ceilings, roofline_points, schedule_spans
from hardware_models.estimate import estimate
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from landscape.roofline_plot import plot_roofline
from tests.hardware_models.programs import linear_gelu, softmax


@pytest.mark.parametrize("target", ["h100", "tpu-v5e", "spyre", "groq-lpu", "wse-3"])
def test_points_sit_under_the_ceilings(target):
    t = get_target(target)
    module = linear_gelu(512, 1024, 2048, "f16")
    plan = compile_plan(module, t)
    est = estimate(module, t, plan=plan)
    compute, memory = ceilings(t)
    points = roofline_points(est, t.main_memory_level, schedule_spans(plan, t))
    assert len(points) == sum(1 for g in est.groups if g.cost.flops)  # a lone logistic is transcendentals only
    for p in points:
        assert p.attained_flop_per_s <= min(max(compute.values()), p.intensity * max(memory.values())) * (1 + 1e-9)


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_plot_writes_the_file_and_marks_schedule_bound_kernels(tmp_path, suffix):
    t = get_target("a100")
    est = estimate(softmax(4, 8), t, "tiny softmax")
    path = tmp_path / f"roof{suffix}"
    points = plot_roofline(est, t, str(path))
    assert path.stat().st_size > 1000
    assert [p.bottleneck for p in points] == ["schedule"]


def test_a_point_by_hand_intensity_over_main_memory_and_its_attained_rate():
    """One kernel of F FLOPs moving B main-memory bytes in t seconds: x = F / B, y = F / t; a
    kernel split over 4 chips counts F / 4 at each; a given span replaces its time; a kernel
    without main-memory bytes or FLOPs is not a point."""
    from hardware_models.cost.model import Cost, Estimate, GroupCost
    from hardware_models.cost.roofline import Point, roofline_points

    gemm = GroupCost(
        3, "contraction", ("dot_general", "add"), "main", 1, Cost(8_000, 8_000, 1e-6, 0.0, 2e-6, (("hbm", 400),))
    )
    free = GroupCost(4, "fusion", ("reshape",), "main", 1, Cost(0, 0, 0.0, 0.0, 1e-6, (("hbm", 100),)))
    onchip = GroupCost(5, "fusion", ("exp",), "main", 1, Cost(50, 50, 0.0, 0.0, 1e-6, (("vmem", 100),)))
    est = Estimate("h100", "toy", (gemm, free, onchip))
    assert roofline_points(est, "hbm") == [Point(3, "dot_general+add", 20.0, 4e9, "compute")]
    (split,) = roofline_points(est, "hbm", None, {3: 4})
    assert (split.intensity, split.attained_flop_per_s) == (5.0, 1e9)
    (spanned,) = roofline_points(est, "hbm", {3: 4e-6})
    assert spanned.attained_flop_per_s == 2e9


def test_chip_shares_and_schedule_spans_by_hand():
    """Contractions split over the tensor-parallel chips, nothing else; a one-chip plan has no
    shares. A static schedule's op spans finish - start cycles (at least 1) at the clock."""
    from dataclasses import replace

    from hardware_models.cost.roofline import chip_shares, schedule_spans
    from hardware_models.pipelines import compile_plan
    from hardware_models.plan import Partition
    from tests.hardware_models.programs import linear_gelu, softmax

    plan = compile_plan(linear_gelu(64, 128, 128, "bf16"), get_target("h100"))
    assert chip_shares(plan) == {} and chip_shares(plan.with_(partition=None)) == {}
    split = plan.with_(partition=Partition(4, 4, 0, 0, 0, 1))
    assert chip_shares(split) == {g.id: 4 for g in plan.groups if g.kind == "contraction"} != {}
    lpu = get_target("groq-lpu")
    scheduled = compile_plan(softmax(63, 129), lpu)
    spans = schedule_spans(scheduled, lpu)
    assert spans == {g: max(s.finish - s.start, 1) / 9e8 for g, s in scheduled.schedule.items()}
    assert any(s.finish - s.start > 1 for s in scheduled.schedule.values())
    zero = {g: replace(s, finish=s.start) for g, s in scheduled.schedule.items()}
    assert set(schedule_spans(scheduled.with_(schedule=zero), lpu).values()) == {1 / 9e8}
    assert schedule_spans(plan, get_target("h100")) == {}
