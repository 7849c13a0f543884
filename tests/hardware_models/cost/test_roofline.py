"""The roofline: one point per kernel, none above its ceilings, PNG and SVG written."""

from __future__ import annotations

import pytest

from hardware_models.cost.roofline import ceilings, roofline_points, schedule_spans
from landscape.roofline_plot import plot_roofline
from hardware_models.estimate import estimate
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
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
