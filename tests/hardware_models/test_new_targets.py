"""The B300, MI355X and TPU v7 (Ironwood) target files, checked by hand: each peak and memory
figure is the vendor's number the file cites, a large GEMM runs between half the file's peak and
the peak, a batch-1 GEMV costs between its HBM floor and twice it, and the ridge point is the
hand division of the file's two numbers. Sources are named where each number is tested."""

from __future__ import annotations

import pytest

from hardware_models.calibration import gemm_module
from hardware_models.estimate import estimate
from hardware_models.target import get_target
from reference.errors import UnsupportedDtype

NEW = ("b300", "mi355x", "tpu-v7")
N = 8192
GEMM_FLOPS = 2 * N**3  # 1.0995e12 FLOP for C[8192, 8192] = A[8192, 8192] @ B[8192, 8192]
GEMV_BYTES = N * N * 2  # the bf16 weight matrix a batch-1 decode step streams: 134,217,728 B


def _seconds(m: int, n: int, k: int, dtype: str, name: str) -> float:
    return estimate(gemm_module(m, n, k, dtype), get_target(name)).total.time_s


# --- the vendor figures the files cite ------------------------------------------------------


def test_b300_peaks_and_memory_are_nvidias_figures():
    """AIC (aiconfigurator systems/b300_sxm.yaml): bf16 2250 TFLOP/s dense ("4.5 PFLOPS sparse / 2"),
    fp8 4.5 PFLOP/s dense, fp4 14 PFLOP/s dense, 7.75 TB/s (62 TB/s / 8); NVIDIA's Blackwell Ultra
    blog: 288 GB of HBM3e. 148 SMs x 1.855 GHz x 8192 FLOP a clock = 2.249e15 (the D derivation)."""
    t = get_target("b300")
    assert t["peak.bf16_flop_per_s"] == pytest.approx(2.25e15, rel=0.01)
    assert t["peak.fp8_flop_per_s"] == pytest.approx(4.5e15, rel=0.01)
    assert t["peak.fp4_flop_per_s"] == pytest.approx(14e15, rel=0.01)
    assert t["chip.sm_count"] * t["chip.clock_hz"] * 8192 == pytest.approx(2.249e15, rel=1e-3)
    assert t.main_memory_bytes == pytest.approx(288e9, rel=0.01)
    assert t.main_memory_bytes_per_s == pytest.approx(7.75e12, rel=0.01)


def test_mi355x_peaks_and_memory_are_amds_figures():
    """AMD's MI355X data sheet: 2.5 PFLOP/s dense bf16 (5.0 sparse), 5.0 PFLOP/s OCP fp8, 10.1
    PFLOP/s MXFP4, 8 TB/s; ROCm gpu-specs: 256 CUs, 288 GiB. By hand: 256 CUs x 2.4 GHz x 4096 =
    2516.6 TFLOP/s, which AMD rounds to 2.5."""
    t = get_target("mi355x")
    assert t["peak.bf16_flop_per_s"] == pytest.approx(2.5e15, rel=0.01)
    assert t["peak.bf16_flop_per_s"] == pytest.approx(256 * 2.4e9 * 4096, rel=1e-4)
    assert t["peak.fp8_flop_per_s"] == pytest.approx(5.0e15, rel=0.01)
    assert t["peak.fp4_flop_per_s"] == pytest.approx(10.1e15, rel=0.01)
    assert t.main_memory_bytes == 288 * 2**30
    assert t.main_memory_bytes_per_s == pytest.approx(8e12, rel=0.01)


def test_tpu_v7_figures_are_googles_per_chip_with_vmem_per_tensorcore():
    """Cloud TPU's TPU7x page: per chip 2307 TFLOP/s bf16, 192 GiB HBM, 7380 GB/s, two
    TensorCores; tpu_info (jax): 64 MiB of VMEM per TensorCore, so 128 MiB a chip."""
    t = get_target("tpu-v7")
    assert t["peak.bf16_flop_per_s"] == pytest.approx(2.307e15, rel=0.01)
    assert t.main_memory_bytes == 192 * 2**30
    assert t.main_memory_bytes_per_s == pytest.approx(7.38e12, rel=0.01)
    assert t["chip.tensorcores"] == 2
    vmem = next(lv for lv in t.levels if lv.name == "vmem")
    assert t.level_value(vmem, "bytes") == 64 * 2**20 and t.level_capacity(vmem) == 128 * 2**20


# --- (a) a large GEMM sustains between half the peak and the peak ---------------------------


@pytest.mark.parametrize("name", NEW)
def test_a_large_bf16_gemm_sustains_between_half_and_all_of_the_files_peak(name):
    """8192^3 bf16 is far past every ridge (its intensity is 2 * 8192^3 / (3 * 8192^2 * 2) = 2731
    FLOP/B), so it is compute bound: FLOPs / time lies in [0.5, 1.0] x the file's bf16 peak
    (b300 67%, mi355x 64%: the assumed gemm_efficiency; tpu-v7 ~100%: the TPU model has none)."""
    rate = GEMM_FLOPS / _seconds(N, N, N, "bf16", name)
    peak = get_target(name)["peak.bf16_flop_per_s"]
    assert 0.5 * peak <= rate <= peak


@pytest.mark.parametrize("name", ["b300", "mi355x", "tpu-v7"])
def test_an_fp8_gemm_runs_under_the_fp8_peak_and_faster_than_bf16(name):
    """The files' fp8 peaks are twice bf16 (dense, every vendor): an 8192^3 fp8 GEMM stays under
    the fp8 peak and takes less time than the bf16 one (on the TPU, the systolic core's passes
    stream at the fp8 peak's multiple of bf16's)."""
    fp8 = _seconds(N, N, N, "f8E4M3FN", name)
    assert GEMM_FLOPS / fp8 <= get_target(name)["peak.fp8_flop_per_s"]
    assert fp8 < 0.7 * _seconds(N, N, N, "bf16", name)


# --- (b) a decode-step GEMV costs its HBM floor, at most twice it ---------------------------


@pytest.mark.parametrize("name", NEW)
def test_a_batch_1_gemv_takes_between_its_hbm_floor_and_twice_it(name):
    """1 x 8192 @ 8192 x 8192 bf16 (a decode step's projection at batch 1) must stream the
    134,217,728-byte weight once: floor = bytes / HBM bytes_per_s (b300 17.3 us, mi355x 16.8 us,
    tpu-v7 18.2 us); the model adds the HBM efficiency and fixed costs, under 2x the floor."""
    t = get_target(name)
    floor = GEMV_BYTES / t.main_memory_bytes_per_s
    assert floor <= _seconds(1, N, N, "bf16", name) <= 2 * floor


# --- (c) the ridge point is the hand division -----------------------------------------------


@pytest.mark.parametrize(
    "name, by_hand",
    [
        ("b300", 2250e12 / 7.75e12),  # 290.3 FLOP/B
        ("mi355x", 2516.6e12 / 8e12),  # 314.6 FLOP/B
        ("tpu-v7", 2307e12 / 7.38e12),  # 312.6 FLOP/B
    ],
)
def test_the_ridge_point_is_the_bf16_peak_over_hbm_bandwidth(name, by_hand):
    """Ridge = dense bf16 FLOP/s / HBM bytes/s: b300 2250e12 / 7.75e12 = 290.3, mi355x 2516.6e12 /
    8e12 = 314.6, tpu-v7 2307e12 / 7.38e12 = 312.6 FLOP per byte."""
    t = get_target(name)
    assert t.ridge_flop_per_byte == pytest.approx(by_hand, rel=1e-3)
    assert t.ridge_flop_per_byte == pytest.approx(t["peak.bf16_flop_per_s"] / t.main_memory_bytes_per_s)


# --- the element types each file runs ---------------------------------------------------------


def test_the_new_files_run_the_types_their_hardware_and_cost_model_support():
    """MI355X (CDNA 4) runs OCP fp8 natively, not CDNA 3's FNUZ; B300 and MI355X run fp4 (NVFP4,
    MXFP4) at their stated fp4 peaks; Ironwood runs fp8 at twice bf16 but has no int8 MXU path."""
    from hardware_models.families.tpu.cost import mxu_peak

    mi355x, b300, v7 = get_target("mi355x"), get_target("b300"), get_target("tpu-v7")
    assert mi355x.runs_as("f8E4M3FN") == "f8E4M3FN" and "f8E4M3FNUZ" not in mi355x.native_dtypes
    assert "f4E2M1FN" in b300.native_dtypes and "f4E2M1FN" in mi355x.native_dtypes
    assert b300.view.tensor_peaks["f4E2M1FN"] == pytest.approx(14e15)  # AIC fp4_tc_flops
    assert mi355x.view.tensor_peaks["f4E2M1FN"] == pytest.approx(10.07e15, rel=1e-3)  # the data sheet's 10.1
    assert v7.runs_as("f8E4M3FN") == "f8E4M3FN"
    assert mxu_peak(v7, "f8E4M3FN") == pytest.approx(4.614e15) == 2 * mxu_peak(v7, "bf16")
    with pytest.raises(UnsupportedDtype):
        v7.runs_as("i8")


def test_an_int8_gemm_on_a_v5e_streams_its_systolic_passes_at_twice_the_bf16_rate():
    """TPU v5e: 394 TOP/s int8 against 197 TFLOP/s bf16 (GCP): a compute-bound 8192^3 int8 GEMM
    takes half the bf16 one's time, within the launch overhead."""
    assert _seconds(N, N, N, "i8", "tpu-v5e") == pytest.approx(_seconds(N, N, N, "bf16", "tpu-v5e") / 2, rel=0.02)
