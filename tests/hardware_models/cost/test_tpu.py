"""The TPU model: MXU time is the systolic core's, epilogues ride on the VPU, the worked number holds."""

from __future__ import annotations

import pytest

from hardware_models.calibration import gemm_module
from hardware_models.cost.systolic import double_buffered_cycles, systolic_gemm
from hardware_models.estimate import estimate
from hardware_models.target import get_target
from tests.hardware_models.programs import linear_gelu


def test_worked_number_v5e_bf16_8192_cube():
    """tpu.py: (128 + 1024 folds per MXU x 8192 + 254) cycles / 1.5 GHz = 5.593 ms busy, 5.581 ms of compute."""
    t = get_target("tpu-v5e")
    cost = estimate(gemm_module(8192, 8192, 8192, "bf16"), t).groups[0].cost
    assert cost.compute_s == pytest.approx(2 * 8192**3 / 197e12)
    busy = (128 + 1024 * 8192 + 254) / 1.5e9
    assert busy == pytest.approx(5.593e-3, rel=1e-3)
    assert cost.time_s == pytest.approx(busy + t["schedule.launch_overhead_s"])
    assert cost.bottleneck == "compute"


@pytest.mark.parametrize("m,n,k", [(1, 63, 65), (129, 150, 1), (65, 129, 63), (300, 257, 129)])
def test_mxu_busy_time_is_the_systolic_cores_folds_double_buffered_over_the_mxus(m, n, k):
    t = get_target("tpu-v4")
    est = estimate(gemm_module(m, n, k, "bf16"), t)
    core = systolic_gemm(m, n, k, 128, 128, "ws")
    mxus = 2 * 4
    busy = double_buffered_cycles(-(-core.folds // mxus), 128, 128, m) / t["chip.clock_hz"]
    cost = est.groups[0].cost
    assert cost.time_s == pytest.approx(max(busy, cost.memory_bound_s) + t["schedule.launch_overhead_s"])


def test_decode_sized_matmul_is_bound_by_streaming_its_weights():
    """A GEMV reads each weight once: with double-buffered weight loads the MXUs take a 128 x 128
    tile every 128 cycles (4 x 32 KiB / 85 ns = 1.5 TB/s on v5e), faster than HBM (0.82 TB/s)."""
    cost = estimate(gemm_module(1, 4096, 4096, "bf16"), get_target("tpu-v5e")).groups[0].cost
    assert cost.bottleneck == "memory"


def test_fused_epilogue_adds_vpu_work_to_the_mxu_kernel():
    est = estimate(linear_gelu(512, 512, 512), get_target("tpu-v5e"))
    (group,) = est.groups
    assert group.ops == ("dot_general", "add", "logistic", "multiply")
    assert group.cost.flops == 2 * 512**3 + 2 * 512 * 512


def test_padded_flops_of_a_fused_matmul_count_its_epilogue():
    """Output fusion puts the epilogue in the MXU fusion: its padded FLOPs are the padded GEMM's
    plus the epilogue's, so padding waste is never negative (it was -0.04% on a layer)."""
    t = get_target("tpu-v5e")
    (g,) = estimate(linear_gelu(64, 64, 64, "bf16"), t).groups  # pads n and k from 64 to 128
    epilogue = g.cost.flops - 2 * 64**3
    assert epilogue > 0
    assert g.cost.padded_flops == 2 * 64 * 128 * 128 + epilogue
