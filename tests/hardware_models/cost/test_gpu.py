"""The GPU model: its worked numbers, wave quantization, launch-bound tiny kernels, f32 on CUDA cores."""

from __future__ import annotations

import pytest

from hardware_models.calibration import gemm_module
from hardware_models.estimate import estimate
from hardware_models.target import get_target
from tests.hardware_models.programs import elementwise


def _gemm_cost(size, target, dtype="bf16", **overrides):
    t = get_target(target)
    return (
        estimate(gemm_module(size, size, size, dtype), t.with_overrides(overrides) if overrides else t).groups[0].cost
    )


def test_worked_number_h100_bf16_8192_cube():
    """gpu.py: 16 waves x 2*128*256*8192 / (989e12/132) = 1.146 ms busy at efficiency 1, 1.11 ms useful;
    the kernel's fixed cost is the launch plus a GEMM's fixed overhead (fitted on G26)."""
    cost = _gemm_cost(8192, "h100", **{"fitted.gemm_efficiency": 1.0})
    assert cost.compute_s == pytest.approx(2 * 8192**3 / 989e12)
    assert cost.time_s - cost.schedule_s == pytest.approx(cost.compute_s)
    busy = 16 * 2 * 128 * 256 * 8192 / (989e12 / 132)
    assert busy == pytest.approx(1.146e-3, rel=1e-3)
    t = get_target("h100")
    assert cost.time_s == pytest.approx(busy + t["schedule.launch_overhead_s"] + t["schedule.gemm_overhead_s"])
    assert cost.bottleneck == "compute"


def test_a_partial_last_wave_costs_a_whole_wave():
    # 8192 + 128 rows: 65 x 32 = 2080 tiles -> 16 waves, the same as 2048 tiles
    t = get_target("h100")
    a = estimate(gemm_module(8192, 8192, 8192, "bf16"), t).groups[0].cost
    b = estimate(gemm_module(8192 + 128, 8192, 8192, "bf16"), t).groups[0].cost
    assert b.time_s == pytest.approx(a.time_s, rel=1e-3) and b.compute_s > a.compute_s


def test_tiny_kernels_are_launch_bound():
    cost = estimate(elementwise(64, "f32"), get_target("a100")).groups[0].cost
    assert cost.bottleneck == "schedule"
    assert cost.schedule_s == pytest.approx(get_target("a100")["schedule.launch_overhead_s"])


def test_large_elementwise_is_memory_bound_at_the_fitted_bandwidth():
    n = 2**26
    t = get_target("h100")
    cost = estimate(elementwise(n, "f32"), t).groups[0].cost
    assert cost.bottleneck == "memory"
    assert cost.memory_bound_s == pytest.approx(3 * 4 * n / (t.main_memory_bytes_per_s * t["fitted.hbm_efficiency"]))


def test_f32_matmul_runs_on_cuda_cores_far_below_the_tensor_peak():
    t = get_target("h100")
    f32 = _gemm_cost(4096, "h100", "f32")
    bf16 = _gemm_cost(4096, "h100", "bf16")
    cuda_core_peak = 2 * t["chip.sm_count"] * t["chip.fp32_lanes_per_sm"] * t["chip.clock_hz"]
    assert f32.compute_s == pytest.approx(2 * 4096**3 / (cuda_core_peak * t["fitted.gemm_efficiency"]))
    assert f32.time_s > 10 * bf16.time_s
