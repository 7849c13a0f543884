"""pad_to_tiles: padding is ceil-based, conserves FLOPs and reports its waste; waves and folds by the formula."""

from __future__ import annotations

import math

import pytest

from hardware_models.cost.systolic import systolic_gemm
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from tests.hardware_models.programs import linear_gelu

ODD = [1, 63, 65, 129, 150]


def _tiling(m, n, k, target, dtype="bf16"):
    plan = compile_plan(linear_gelu(m, n, k, dtype), get_target(target), stop_after="pad_to_tiles")
    return next(iter(plan.tilings.values()))


@pytest.mark.parametrize("target", ["h100", "tpu-v5e", "tpu-v6e"])
@pytest.mark.parametrize("m,n,k", [(a, b, c) for a in ODD for b, c in ((63, 129), (150, 1))])
def test_padding_covers_each_extent_with_less_than_one_tile(m, n, k, target):
    tiling = _tiling(m, n, k, target)
    for axis, (extent, tile, padded) in enumerate(zip((m, n, k), tiling.tile, tiling.padded)):
        step = 8 if target != "h100" and axis == 0 else tile  # a TPU streams m, padded to 8 sublanes
        assert padded % step == 0 and extent <= padded < extent + step
    assert tiling.padded_flops >= tiling.shape.flops == 2 * m * n * k
    assert tiling.padding_waste == pytest.approx(1 - 2 * m * n * k / tiling.padded_flops)


def test_tpu_pads_weights_to_the_mxu_128_on_v5e_and_256_on_v6e():
    assert _tiling(65, 129, 63, "tpu-v5e").padded == (72, 256, 128)
    assert _tiling(65, 129, 63, "tpu-v6e").padded == (72, 256, 256)


def test_gpu_8192_cube_takes_16_waves_of_128_by_256_tiles():
    """The worked number in pad_to_tiles: 64 * 32 = 2048 thread blocks over 132 SMs."""
    tiling = _tiling(8192, 8192, 8192, "h100")
    assert tiling.tile[:2] == (128, 256) and tiling.units == 2048 and tiling.steps == math.ceil(2048 / 132) == 16


def test_gpu_skinny_operand_pads_to_16_rows_not_128():
    tiling = _tiling(1, 4096, 4096, "h100")
    assert tiling.tile[0] == 16 and tiling.padded[0] == 16


def test_tpu_folds_are_the_systolic_cores_ws_folds_spread_over_the_mxus():
    tiling = _tiling(8192, 8192, 8192, "tpu-v5e")
    core = systolic_gemm(8192, 8192, 8192, 128, 128, "ws")
    assert tiling.units == core.folds == 4096
    assert tiling.steps == 4096 // 4 and tiling.cycles_per_step == 8192 and tiling.fill_cycles == 128 + 128 + 128 - 2
    # one fold alone is SCALE-Sim's fold
    assert tiling.cycles_per_step + tiling.fill_cycles == core.cycles_per_fold


def test_reuse_block_is_the_whole_problem_when_it_fits_on_chip():
    small = _tiling(1024, 1024, 1024, "h100")
    assert small.block == small.padded[:2]
    big = _tiling(16384, 16384, 16384, "h100")
    assert big.block[0] < 16384 and big.block[1] < 16384
