"""The AMD CDNA family (families/cdna/): one package and its target files, costed by the GPU's
SIMT formulas through its own view. Worked numbers from AMD's max-achievable-FLOPs rows
(kernels.csv A01-A06; held-out rows are checked in test_calibration.py) and rules of the
hardware: the Infinity Cache keeps a producer's output, OCP fp8 runs as FNUZ, XGMI sets the
all-reduce."""

from __future__ import annotations

import pytest

from hardware_models.calibration import gemm_module
from hardware_models.estimate import estimate
from hardware_models.families import get_family, home
from hardware_models.pipelines import compile_plan
from hardware_models.predict import fewest_chips
from hardware_models.target import get_target
from tests.hardware_models.damaged import without_lines
from tests.hardware_models.programs import program, t

MI300X = get_target("mi300x")


def test_the_family_is_one_package_with_its_map_cells_and_two_target_files():
    """The Done-when of the redesign: a new family is one package plus its target files."""
    cdna = get_family("cdna")
    assert home("cdna").name == "cdna" and (home("cdna") / "map.toml").is_file()
    assert cdna.describe() == "AMD GPU" and [c.name for c in cdna.compilers] == ["inductor"]
    assert get_target("mi325x").family == "cdna" and MI300X.family == "cdna"


def test_the_view_names_compute_units_and_each_xcds_l2_feeds_the_tiles():
    v = MI300X.view
    assert (v.units, v.mma_m, v.mma_k_bytes, v.fp32_lanes) == (304, 16, 32, 128)
    assert v.tile_feed.name == "l2" and v.tile_feed_bytes_per_s == pytest.approx(8 * 2048 * 2.1e9)
    assert MI300X.with_overrides({"chip.cu_count": 152}).view.units == 152  # a --set makes a new view


def test_worked_number_amds_bf16_gemm_is_one_wave_of_256_by_256_tiles_at_the_fitted_rate():
    """A01: 4096 x 4864 x 32896 bf16 in 16 x 19 = 304 tiles of 256 x 256, one per CU, one wave;
    2 * 4096 * 4864 * 32896 = 1.311e15 FLOP at the measured 708 TFLOP/s is 1.852 ms."""
    module = gemm_module(4096, 4864, 32896, "bf16")
    (tiling,) = compile_plan(module, MI300X).tilings.values()
    assert tiling.tile[:2] == (256, 256) and (tiling.units, tiling.steps, tiling.split_k) == (304, 1, 1)
    flops = 2 * 4096 * 4864 * 32896
    assert estimate(module, MI300X).total.time_s == pytest.approx(flops / 708e12, rel=1e-3)


def test_ocp_fp8_runs_as_fnuz_at_the_fp8_peak_and_is_noted():
    module = gemm_module(4096, 4096, 4096, "f8E4M3FN")
    plan = compile_plan(module, MI300X)
    assert plan.runs_as("f8E4M3FN") == "f8E4M3FNUZ"
    assert any("f8E4M3FN is emulated on mi300x" in n for n in plan.notes)
    bf16 = estimate(gemm_module(4096, 4096, 4096, "bf16"), MI300X).total.time_s
    assert estimate(module, MI300X, plan=plan).total.time_s < 0.6 * bf16  # twice the peak, fewer bytes


def _two_gemms(n: int):
    """y = (x @ w1) @ w2, bf16 n x n: the first GEMM's output feeds the second."""
    s = t((n, n))
    return program(
        {"x": s, "w1": s, "w2": s},
        [
            f"%0 = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : ({s}, {s}) -> {s}",
            f"%1 = stablehlo.dot_general %0, %w2, contracting_dims = [1] x [0] : ({s}, {s}) -> {s}",
        ],
        "%1",
        s,
    )


def test_the_infinity_cache_keeps_a_producers_output_that_an_h100s_l2_cannot():
    """Rule: a 4096 x 4096 bf16 intermediate (33.6 MB) fits the Infinity Cache's resident half
    (134 MB), so the second GEMM reads it from there; on an H100 it exceeds L2's (26 MB) and is
    read back from HBM."""
    module = _two_gemms(4096)
    amd, nvidia = compile_plan(module, MI300X), compile_plan(module, get_target("h100"))
    second = [g.id for g in amd.groups if g.kind == "contraction"][-1]
    assert amd.placements[second].resident_inputs
    second = [g.id for g in nvidia.groups if g.kind == "contraction"][-1]
    assert not nvidia.placements[second].resident_inputs


def test_a_70b_model_in_bf16_fits_one_mi300x_where_an_h100_needs_two():
    """Rule of capacity: 70.6e9 weights x 2 bytes = 141 GB fit 192 GiB x 0.9 usable, not 80 GB."""
    weights, sequence = int(70.6e9 * 2), 8192 * 80 * 2 * 8 * 128 * 2  # one 8k sequence's cache
    assert fewest_chips(MI300X, weights, sequence, 8) == 1
    assert fewest_chips(get_target("h100"), weights, sequence, 8) == 2


def test_the_all_reduce_bus_bandwidth_is_the_xgmi_links_one_way_sum():
    assert MI300X["interconnect.allreduce_bus_bytes_per_s"] == 7 * 64e9


@pytest.mark.parametrize("key,value", [("chip.mfma_m", 3), ("chip.mfma_k_bytes", 24)])
def test_an_mfma_shape_that_is_no_power_of_two_is_refused_as_the_mma_shape_is(key, value):
    """Rule of the hardware: matrix instructions come in power-of-two shapes (a --set of 3 rows
    was accepted before: AMD's key names did not end as NVIDIA's do)."""
    from reference.errors import BadTargetFile

    with pytest.raises(BadTargetFile, match="power of two"):
        MI300X.with_overrides({key: value})


SIMT_UNITS = [("mi300x", "chip.cu_count"), ("h100", "chip.sm_count"), ("a100", "chip.sm_count")]


@pytest.mark.parametrize(("name", "units"), SIMT_UNITS)
def test_fewer_compute_units_never_make_a_gemm_faster(name, units):
    """A rule of the hardware: at one clock, half the SMs (CUs) are half the matrix peak (the peaks
    are derived as units x clock x FLOP a clock), so no GEMM that fills the chip runs faster on
    them. (A single tile may: the model feeds each unit its share of the L2's bandwidth, and
    fewer units share it.)"""
    target = get_target(name)
    half = target.with_overrides({units: target[units] // 2})
    assert half["peak.bf16_flop_per_s"] == pytest.approx(target["peak.bf16_flop_per_s"] / 2, rel=0.02)
    for m, n, k in ((4096, 4864, 32896), (1, 8192, 8192), (8192, 8192, 8192), (4097, 4095, 1025)):
        module = gemm_module(m, n, k, "bf16")
        assert estimate(module, half).total.time_s >= estimate(module, target).total.time_s * 0.999, (m, n, k)


@pytest.mark.parametrize("name", ["mi300x", "h100"])
def test_more_tile_feed_bandwidth_never_slows_a_gemm_and_less_never_speeds_it(name):
    """The L2 (each XCD's on AMD) feeds the tiles: the tile time's normalisation is the chip the
    efficiency was fitted on, so a --set of the L2's bandwidth moves a GEMM the hardware's way,
    for the 256 x 256 tiles too."""
    target = get_target(name)
    l2 = "levels.l2.bytes_per_s"
    slow, fast = (target.with_overrides({l2: target[l2] * f}) for f in (0.5, 2.0))
    for m, n, k in ((4096, 4864, 32896), (512, 512, 8192), (63, 65, 129)):
        module = gemm_module(m, n, k, "bf16")
        times = [estimate(module, t).total.time_s for t in (slow, target, fast)]
        assert times[0] >= times[1] >= times[2], (m, n, k, times)


def test_a_set_recomputes_what_is_derived_from_it_and_keeps_what_the_user_set():
    """--set chip.clock_hz scales the peaks and the L2 (both derived from the clock); a derived key
    the user sets is theirs; a value pushed out of its domain by a --set is refused, naming both."""
    from reference.errors import BadTargetFile

    h100 = get_target("h100")
    slow = h100.with_overrides({"chip.clock_hz": 1.2e9})
    assert slow["peak.fp8_flop_per_s"] == pytest.approx(132 * 1.2e9 * 8192)
    assert slow["levels.l2.bytes_per_s"] == pytest.approx(1.2e9 * 5120)
    assert "recomputed after --set" in slow.quantities["levels.l2.bytes_per_s"].note
    mine = h100.with_overrides({"chip.clock_hz": 1.2e9, "peak.bf16_flop_per_s": 500e12})
    assert mine["peak.bf16_flop_per_s"] == 500e12 and mine.as_loaded is h100
    spyre = get_target("spyre")
    assert spyre.with_overrides({"levels.lx.bytes": 4_000_000})["levels.lx.usable_bytes"] == pytest.approx(
        (4_000_000 - 65536) * 0.8
    )
    with pytest.raises(BadTargetFile, match="levels.lx.usable_bytes.*follows from levels.lx.bytes"):
        spyre.with_overrides({"levels.lx.bytes": 1000})


def test_a_set_of_a_derived_key_says_its_derivation_is_replaced_and_a_plain_key_says_nothing():
    """The user's value wins over the file's formula; they are told which formula it replaced."""
    from landscape.options import derived_set_notes

    h100 = get_target("h100")
    (line,) = derived_set_notes(h100, {"peak.bf16_flop_per_s": 1e15, "chip.clock_hz": 1.2e9})
    assert "--set peak.bf16_flop_per_s replaces a derived quantity" in line
    assert "chip.sm_count * chip.clock_hz * 4096" in line
    assert derived_set_notes(h100, {"chip.clock_hz": 1.2e9}) == []


def test_a_simt_file_that_runs_fp8_natively_without_an_fp8_peak_is_refused_as_it_loads(tmp_path):
    """Its fp8 contractions would otherwise run, unsaid, on the FP32 lanes."""
    from hardware_models.target import load_target_file
    from reference.errors import BadTargetFile

    with pytest.raises(BadTargetFile, match="peak.fp8_flop_per_s.*runs f8E4M3FN natively"):
        load_target_file(without_lines("h100", tmp_path, "fp8_flop_per_s"))


def test_tile_loads_are_counted_at_each_xcds_l2_and_the_infinity_cache_sees_hbms_traffic():
    """AMD's tiles load through the L2 (`tile_feed`), under the Infinity Cache: 4096^3 bf16 in
    256 x 256 tiles reads A and B 16 times each there, 2 * 16 * 32 MiB = 1 GiB, while HBM and the
    Infinity Cache in front of it move A, B and C once (the problem fits its 256 MiB)."""
    (placement,) = compile_plan(gemm_module(4096, 4096, 4096, "bf16"), MI300X).placements.values()
    once = 3 * 4096 * 4096 * 2
    assert placement.at("hbm") == placement.at("infinity_cache") == once
    assert placement.at("l2") == 2 * 16 * 4096 * 4096 * 2 + 4096 * 4096 * 2
    (h100,) = compile_plan(gemm_module(4096, 4096, 4096, "bf16"), get_target("h100")).placements.values()
    assert {name for name, _ in h100.bytes} == {"hbm", "l2"}  # NVIDIA's L2 is both: one level counts both
