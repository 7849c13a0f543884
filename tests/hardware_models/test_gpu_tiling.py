"""GPU GEMM tiling chosen by an explicit cost (families/gpu/__init__.py): tiles and split-K over SMs."""

from __future__ import annotations

import pytest

from hardware_models.calibration import gemm_module
from hardware_models.estimate import estimate
from hardware_models.families.gpu import gpu_candidates
from hardware_models.families.gpu.cost import gpu_group_cost
from hardware_models.passes.place_buffers import place_buffers
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target

ODD = (1, 63, 65, 129)


def _costs(m, n, k, dtype="bf16", target="h100"):
    """(chosen tiling, its cost, the fixed 128 x 256 tiling's cost) under the same cost model."""
    t = get_target(target)
    module = gemm_module(m, n, k, dtype)
    plan = compile_plan(module, t)
    ((gid, chosen),) = plan.tilings.items()
    group = next(g for g in plan.groups if g.id == gid)
    fixed = gpu_candidates(chosen.shape, t, m * n * 2)[0]  # (128, 256) shrunk to the shape, no split
    assert fixed.tile[:2] == (min(128, -(-m // 16) * 16), min(256, -(-n // 16) * 16)) and fixed.split_k == 1
    fixed_plan = place_buffers(module, plan.with_(tilings={gid: fixed}), t)
    return chosen, gpu_group_cost(module, plan, group, t), gpu_group_cost(module, fixed_plan, group, t)


@pytest.mark.parametrize(
    "m,n,k",
    [(m, n, k) for m in ODD for n in (63, 129, 4096) for k in (65, 4096)]
    + [(8192, 8192, 8192), (256, 512, 2048), (1, 2048, 8192)],
)
def test_the_chosen_tiling_is_never_costlier_than_the_fixed_128_by_256_tile(m, n, k):
    """Property: the choice minimises the cost model's own time, so it never loses to the old tile."""
    chosen, cost, fixed = _costs(m, n, k)
    assert cost.time_s <= fixed.time_s * (1 + 1e-9)


@pytest.mark.parametrize("m", [1, 4, 16])
@pytest.mark.parametrize("k,n", [(8192, 2048), (8192, 1024), (28672, 2048)])
def test_a_skinny_decode_gemm_with_few_output_tiles_splits_k(m, k, n):
    """Few output tiles and a deep k: split-K puts more SMs to pull the weights (cuBLAS's choice)."""
    chosen, cost, fixed = _costs(m, n, k)
    assert chosen.split_k > 1 and chosen.units > fixed_units(chosen)
    assert cost.time_s < fixed.time_s


def fixed_units(tiling):
    return -(-tiling.shape.n // 256)


def test_plan_shows_the_split_k():
    plan = compile_plan(gemm_module(1, 2048, 8192, "bf16"), get_target("h100"))
    text = plan.render()
    (t,) = plan.tilings.values()
    assert f"split-K {t.split_k}" in text and "f32 partials" in text and "candidates" in text
    assert plan.to_dict()["groups"][0]["tiling"]["split_k"] == t.split_k > 1


def test_the_course_down_projection_uses_most_sms_and_runs_faster():
    """256x2048 @ 2048x512 bf16 ran as 4 tiles on 4 of 132 SMs (27.8 us); now one wave of >= 100."""
    chosen, cost, fixed = _costs(256, 512, 2048)
    assert fixed.time_s > 2 * cost.time_s
    assert chosen.units >= 100 and chosen.steps == 1


def test_worked_number_256_2048_512():
    """families/gpu/__init__.py: 64x64 tiles, split-K 4, 128 blocks; tile_s 1.590 us + partials 0.448 us + 6.50 us fixed."""
    t = get_target("h100")
    chosen, cost, _ = _costs(256, 512, 2048)
    assert (chosen.tile[:2], chosen.split_k, chosen.units) == ((64, 64), 4, 128)
    sms, peak, l2 = 132, 989e12, 5120 * t["chip.clock_hz"]
    reference = 1 + peak / l2 * (128 + 256) * 2 / (2 * 128 * 256)
    tile_s = (2 * 64 * 64 * 512 / (peak / sms) + 128 * 512 * 2 / (l2 / sms)) / (t["fitted.gemm_efficiency"] * reference)
    assert tile_s == pytest.approx(1.590e-6, rel=2e-3)
    reduce_s = 2 * 4 * 256 * 512 * 4 / l2
    fixed_s = 2 * t["schedule.launch_overhead_s"] + t["schedule.gemm_overhead_s"]
    assert cost.time_s == pytest.approx(tile_s + reduce_s + fixed_s, rel=1e-6)
    assert cost.time_s == pytest.approx(8.54e-6, rel=2e-3)


def test_g26_is_met_by_a_smaller_tile_not_the_one_wave_of_128_by_256():
    """The 1024^3 fp8 row (G26, 274.1 TFLOP/s) fits gemm_overhead_s; the rows not fitted on
    (G24, G25 on the H100, G29 on the A100) stay within 5%."""
    rows = {"G24": (16384, 1377.3e12, "h100"), "G25": (4096, 1216.9e12, "h100"), "G29": (16384, 256.5e12, "a100")}
    for size, measured, target in rows.values():
        dtype = "f8E4M3FN" if target == "h100" else "f16"
        time_s = estimate(gemm_module(size, size, size, dtype), get_target(target)).total.time_s
        assert abs(2 * size**3 / time_s / measured - 1) < 0.05
    plan = compile_plan(gemm_module(1024, 1024, 1024, "f8E4M3FN"), get_target("h100"))
    (t,) = plan.tilings.values()
    assert t.units > 32  # the fixed tile left 100 of 132 SMs idle


@pytest.mark.parametrize("m", ODD)
def test_a_blackwell_mma_pads_a_skinny_operand_to_64_rows_where_hoppers_pads_to_16(m):
    """Rule of the hardware (PTX: tcgen05.mma's smallest M is 64; Hopper's warp-level mma is
    m16n8k16): the rows a GEMM of m rows computes are m rounded up to the target's chip.mma_m."""
    for name, rows in (("h200", 16), ("b200", 64)):
        plan = compile_plan(gemm_module(m, 4096, 4096, "bf16"), get_target(name))
        ((_, tiling),) = plan.tilings.items()
        assert get_target(name)["chip.mma_m"] == rows
        assert tiling.padded[0] == -(-m // rows) * rows if m < 128 else tiling.padded[0] % rows == 0, (name, m)
