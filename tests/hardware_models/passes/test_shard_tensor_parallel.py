"""shard_tensor_parallel: the fewest chips (a power of two) that hold the arguments, or --chips;
each chip tiles its share of the columns; all-reduces join the pieces."""

from __future__ import annotations

import pytest

from hardware_models.calibration import gemm_module
from hardware_models.cost.model import allreduce_cost
from hardware_models.estimate import estimate
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from reference.errors import InvalidShape

H100 = get_target("h100")
BIG = gemm_module(8192, 786432, 65536, "bf16")  # 1.1 + 103 GB of arguments: more than 72 GB usable


def test_a_program_that_fits_one_chip_is_not_split():
    plan = compile_plan(gemm_module(4096, 4096, 4096, "bf16"), H100)
    assert plan.partition.chips == 1 and all(g.kind != "transfer" for g in plan.groups)


def test_too_big_for_one_chip_takes_the_next_power_of_two_and_tiles_a_share():
    plan = compile_plan(BIG, H100)
    assert plan.partition.chips == 2 and plan.partition.mode == "tensor parallel"
    (tiling,) = plan.tilings.values()
    assert tiling.shape.n == 786432 // 2
    assert [g.label for g in plan.groups if g.kind == "transfer"] == ["all-reduce"]


def test_chips_can_be_forced_but_not_below_what_the_arguments_need():
    assert compile_plan(BIG, H100, chips=8).partition.chips == 8
    with pytest.raises(InvalidShape, match="at least 2 chips"):
        compile_plan(BIG, H100, chips=1)


def test_the_all_reduce_is_a_ring_at_the_measured_bus_bandwidth():
    est = estimate(BIG, H100, plan=compile_plan(BIG, H100, chips=4))
    (reduce,) = [g for g in est.groups if g.kind == "transfer"]
    hidden = 8192 * 786432 * 2
    expected = 1e-5 + 2 * 3 / 4 * hidden / 478.87e9
    assert reduce.cost.time_s == pytest.approx(expected)
    assert allreduce_cost(hidden, 4, 478.87e9, 1e-5).time_s == pytest.approx(expected)


def test_more_chips_shorten_the_matmul():
    two = estimate(BIG, H100, plan=compile_plan(BIG, H100, chips=2))
    eight = estimate(BIG, H100, plan=compile_plan(BIG, H100, chips=8))
    matmul = lambda est: next(g for g in est.groups if g.kind == "contraction").cost.time_s  # noqa: E731
    assert matmul(eight) < matmul(two) / 3
