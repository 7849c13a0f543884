"""The Spyre model: a 65-element fp16 copy moves two sticks each way; rates by matmul shape."""

from __future__ import annotations

import pytest

from hardware_models.calibration import bmm_module, gemm_module
from hardware_models.estimate import estimate
from hardware_models.families.spyre.cost import lpddr5_seconds, matmul_rate
from hardware_models.families.spyre.plan import SpyreState
from hardware_models.target import get_target
from tests.hardware_models.programs import program, t

SPYRE = get_target("spyre")


def test_a_65_element_fp16_copy_moves_two_sticks_in_and_two_out():
    """The worked number in families/spyre/cost.py: 512 bytes over LPDDR5, 260 of them data."""
    v = t((65,), "f16")
    est = estimate(program({"a": v}, [f"%0 = stablehlo.negate %a : {v}"], "%0", v), SPYRE)
    (group,) = est.groups
    assert group.cost.bytes_at("lpddr5") == 4 * 128
    assert group.cost.memory_bound_s == pytest.approx(512 / 150e9 + 256 * (2 / 105e9 - 2 / 150e9))
    assert group.cost.memory_bound_s == pytest.approx(4.9e-9, rel=0.01)


def test_lpddr5_time_is_the_one_way_rate_alone_and_the_balanced_rate_together():
    assert lpddr5_seconds(10**9, 0, SPYRE) == pytest.approx(1e9 / 150e9)
    assert lpddr5_seconds(10**9, 10**9, SPYRE) == pytest.approx(2e9 / 105e9)


def test_matmul_rate_depends_on_batch_as_the_measured_rows_do():
    assert matmul_rate(SPYRE, 1) == 1.14e12 and matmul_rate(SPYRE, 2) == 7.05e11 and matmul_rate(SPYRE, 8) == 1.6e11


def test_matmul_padding_to_row_passes_and_sticks_is_reported_and_costs_time():
    est = estimate(gemm_module(65, 65, 65, "f16"), SPYRE)
    (group,) = est.groups
    assert group.cost.padded_flops == 2 * 72 * 128 * 128 > group.cost.flops == 2 * 65**3


def test_batched_matmul_is_seven_times_slower_per_mac_than_a_2d_one():
    two_d = estimate(gemm_module(4096, 4096, 4096, "f16"), SPYRE).total.compute_s / 4096**3
    batched = estimate(bmm_module(8, 2048, "f16"), SPYRE).total.compute_s / (8 * 2048**3)
    assert batched / two_d == pytest.approx(1140 / 160)


def test_a_kernels_weight_load_hides_behind_the_compute_of_the_kernel_before():
    """fire_kernels: the second matmul's weights do not depend on the first matmul, so their
    load overlaps its compute; the first kernel's own input cannot."""
    from hardware_models.pipelines import compile_plan

    x, w1, h = t((4096, 4096), "f16"), t((4096, 4096), "f16"), t((4096, 4096), "f16")
    w2, y = t((4096, 64), "f16"), t((4096, 64), "f16")
    module = program(
        {"x": x, "w1": w1, "w2": w2},
        [
            f"%0 = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : ({x}, {w1}) -> {h}",
            f"%1 = stablehlo.dot_general %0, %w2, contracting_dims = [1] x [0] : ({h}, {w2}) -> {y}",
        ],
        "%1",
        y,
    )
    plan = compile_plan(module, SPYRE)
    second = plan.groups[1]
    assert dict(plan.placements[second.id].split)["prefetchable"] == 4096 * 64 * 2  # w2, not h
    assert any(e.producer == 0 and e.consumer == 1 for e in SpyreState.of(plan).dataflow)
    cost = estimate(module, SPYRE, plan=plan).groups[1].cost
    from hardware_models.families.spyre.cost import kernel_times

    alone = kernel_times(module, plan, second, SPYRE)[2]
    assert cost.memory_bound_s < alone
