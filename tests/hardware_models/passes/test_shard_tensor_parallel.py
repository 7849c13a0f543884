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


@pytest.mark.parametrize(
    "needed,cache,kv,chips,expected",
    [
        (100, 0, 0, 4, 25),  # no cache: an even share, rounded up
        (101, 0, 0, 4, 26),
        (100, 60, 8, 4, 10 + 15),  # the rest split 4 ways, the cache 2 of its 8 KV heads a chip
        (100, 60, 8, 16, 3 + 8),  # more chips than KV heads: one head each, 60 / 8 rounded up
    ],
)
def test_per_chip_bytes_by_hand(needed, cache, kv, chips, expected):
    from hardware_models.passes.shard_tensor_parallel import per_chip_bytes

    assert per_chip_bytes(needed, cache, kv, chips) == expected


@pytest.mark.parametrize(
    "needed,cache,kv,whole,expected",
    [
        (100, 0, 0, 30, 4),  # ceil(100 / 30) = 4 chips, already a power of two
        (100, 0, 0, 40, 4),  # 3, rounded up to a power of two
        (100, 0, 0, 100, 1),
        (100, 100, 5, 30, 8),  # 4 chips hold 2 of the 5 KV heads each, 40 B: doubled to 8, one head each
        (100, 80, 2, 30, None),  # one KV head's 40 B alone exceeds a chip: no count can hold it
    ],
)
def test_fewest_chips_by_hand(needed, cache, kv, whole, expected):
    from hardware_models.passes.shard_tensor_parallel import fewest_chips

    assert fewest_chips(needed, cache, kv, whole) == expected


@pytest.mark.parametrize("target_name", ["h100", "tpu-v5e", "spyre"])
def test_a_regional_block_over_two_chips_adds_two_all_reduces_a_layer(target_name):
    """Three layers over 2 chips: one transfer group after the kernels, in main, repeated
    2 x 3 times, and the note says so with the hidden state's size (64 x 128 bf16 = 16.4 kB)."""
    from tests.hardware_models.test_survivors import _regional

    plan = compile_plan(_regional(3), get_target(target_name), chips=2)
    kernels = [g for g in plan.groups if g.kind != "transfer"]
    (reduces,) = [g for g in plan.groups if g.kind == "transfer"]
    assert (reduces.id, reduces.members, reduces.instance, reduces.repeats, reduces.label) == (
        len(kernels),
        (),
        "main",
        6,
        "all-reduce",
    )
    p = plan.partition
    assert (p.chips, p.tensor_parallel, p.mode, p.hidden_bytes, p.layers) == (2, 2, "tensor parallel", 16_384, 3)
    assert any(n.endswith("tensor parallel over 2 chips, 6 all-reduces of 16.4 kB") for n in plan.notes)
    one = compile_plan(_regional(3), get_target(target_name))
    assert one.partition.mode == "" and not [g for g in one.groups if g.kind == "transfer"]


def test_the_kv_cache_fused_attention_reads_from_the_arguments_by_hand():
    """attention_module's K and V are program arguments: 2 x 4 x 65 x 16 x 2 B, 1 KV head a
    sequence (heads folded into the batch); a program without attention has none."""
    from hardware_models.calibration import attention_module
    from hardware_models.passes.shard_tensor_parallel import fused_kv_cache
    from tests.hardware_models.programs import linear_gelu

    module = attention_module(1, 4, 65, 16, "bf16")
    plan = compile_plan(module, get_target("h100"))
    assert fused_kv_cache(module, plan) == (2 * 4 * 65 * 16 * 2, 1)
    flat = linear_gelu(64, 128, 128, "bf16")
    assert fused_kv_cache(flat, compile_plan(flat, get_target("h100"))) == (0, 0)


def test_more_chips_than_tensor_parallelism_can_split_over_are_refused_not_planned():
    """A chip of almost no memory (`--set levels.hbm.bytes=1`) would need 32,768 H100s for a
    256 x 64 matmul whose narrowest weight has 64 columns: refused, one line, naming the limit."""
    tiny = get_target("h100").with_overrides({"levels.hbm.bytes": 1})
    with pytest.raises(InvalidShape, match="at most 64 .*64 output columns"):
        compile_plan(gemm_module(256, 64, 64, "bf16"), tiny)
