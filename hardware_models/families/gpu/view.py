"""What the SIMT model reads of a target file, named once: the `Simt` view the loader builds.

The GPU's cost model and tiling (families/gpu/cost.py, families/gpu/__init__.py) read this view,
never a key of the file. A family of SIMT chips names its hardware in its own words (NVIDIA's
SMs and CUDA cores; AMD's compute units, wavefronts and matrix cores: families/cdna/) and builds
the view from them (`Family.view`, read as `target.view`), so one set of formulas costs both.
A `--set` makes a new target, and with it a new view.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hardware_models.target import Level, Target
from reference.errors import BadTargetFile


@dataclass(frozen=True)
class Simt:
    """A SIMT chip as its cost model reads it (per chip unless said).

    units:         the processors a wave of thread blocks fills (SMs; AMD's compute units)
    clock_hz:      the clock the rates below are per
    fp32_lanes:    FP32 lanes per unit (an FMA is two FLOPs)
    sfu_per_clock: transcendentals per clock per unit
    mma_m:         rows (and columns) of one matrix instruction: a skinny operand pads to it
    mma_k_bytes:   bytes of k one matrix instruction consumes per row: k pads to it / element bytes
    tensor_peaks:  element type -> dense matrix-unit FLOP/s (others run on the FP32 lanes)
    hbm_bytes_per_s: sustained main-memory bandwidth: peak x hbm_efficiency
    tile_feed:     the cache level whose bandwidth feeds the units' tiles (the L2)
    launch_s, gemm_overhead_s: a kernel's fixed cost, and a library GEMM's above it
    gemm_efficiency, flash_attention_fraction: shares of the matrix peak a full wave of tiles,
                   and the fused attention kernel, sustain
    """

    units: int
    clock_hz: float
    fp32_lanes: int
    sfu_per_clock: float
    mma_m: int
    mma_k_bytes: int
    tensor_peaks: Mapping[str, float]
    hbm_bytes_per_s: float
    tile_feed: Level
    tile_feed_bytes_per_s: float
    launch_s: float
    gemm_overhead_s: float
    gemm_efficiency: float
    flash_attention_fraction: float

    @property
    def vector_rate(self) -> float:
        """FP32 element operations per second over all units."""
        return self.units * self.fp32_lanes * self.clock_hz

    @property
    def sfu_rate(self) -> float:
        return self.units * self.sfu_per_clock * self.clock_hz

    def contraction_peak(self, dtype: str) -> float:
        """FLOP/s of a contraction in `dtype`: the matrix units', or the FP32 lanes' FMAs."""
        return self.tensor_peaks.get(dtype, 2 * self.vector_rate)


# The matrix-unit peaks a file may declare, by the element types they run.
PEAK_KEYS = {
    "bf16": "peak.bf16_flop_per_s",
    "f16": "peak.fp16_flop_per_s",
    "f8E4M3FN": "peak.fp8_flop_per_s",
    "f8E5M2": "peak.fp8_flop_per_s",
    "f8E4M3FNUZ": "peak.fp8_flop_per_s",
    "f8E5M2FNUZ": "peak.fp8_flop_per_s",
    "i8": "peak.int8_op_per_s",
    "f4E2M1FN": "peak.fp4_flop_per_s",
}


def tensor_peaks(target: Target) -> dict[str, float]:
    """Element type -> the matrix units' peak, for each type the file gives a peak of.

    Raises:
        BadTargetFile: a type the file runs natively with no peak of its own, whose contractions
            would run, unsaid, on the FP32 lanes (an fp8 chip without peak.fp8_flop_per_s).
    """
    for dtype in target.native_dtypes:
        key = PEAK_KEYS.get(dtype)
        if key and key not in target.quantities:
            raise BadTargetFile(target.path, key, f"missing: [dtypes] runs {dtype} natively, on the matrix units")
    return {dtype: target[key] for dtype, key in PEAK_KEYS.items() if key in target.quantities}


def common(target: Target, tile_feed: Level) -> dict:
    """The view's fields every SIMT family's files name alike: peaks, memory, schedule, fits."""
    return {
        "tensor_peaks": tensor_peaks(target),
        "hbm_bytes_per_s": target.main_memory_bytes_per_s * target["fitted.hbm_efficiency"],
        "tile_feed": tile_feed,
        "tile_feed_bytes_per_s": target.level_value(tile_feed, "bytes_per_s"),
        "launch_s": target["schedule.launch_overhead_s"],
        "gemm_overhead_s": target["schedule.gemm_overhead_s"],
        "gemm_efficiency": target["fitted.gemm_efficiency"],
        "flash_attention_fraction": target["fitted.flash_attention_fraction"],
    }


def nvidia_view(target: Target) -> Simt:
    """An NVIDIA GPU's file: SMs, CUDA cores, SFUs, the tensor cores' MMA shape; L2 feeds the tiles."""
    return Simt(
        units=int(target["chip.sm_count"]),
        clock_hz=target["chip.clock_hz"],
        fp32_lanes=int(target["chip.fp32_lanes_per_sm"]),
        sfu_per_clock=target["chip.sfu_ops_per_cycle_per_sm"],
        mma_m=int(target["chip.mma_m"]),
        mma_k_bytes=int(target["chip.mma_k_bytes"]),
        **common(target, target.level("on-chip")),
    )
