"""The AMD CDNA family (Instinct MI300X, MI325X): compute units with matrix cores on eight
chiplets (XCDs), each with its own L2, over a 256 MiB Infinity Cache and HBM; XGMI links between
GPUs. Its compiler stack is ROCm: torch.compile's Inductor emits Triton kernels for the
elementwise work, GEMMs go to hipBLASLt, attention to ROCm's FlashAttention (Composable Kernel).

It is a SIMT GPU, so it is costed by the GPU family's formulas (families/gpu/cost.py), read
through the `Simt` view built here from its own keys (families/gpu/view.py). What differs is
data and modelled, not renamed:
    compute units  chip.cu_count CUs (304: 38 on each of 8 XCDs) fill a wave of thread blocks;
                   FP32 lanes, transcendentals and the MFMA shape are per CU
    matrix cores   v_mfma_f32_16x16x16 (bf16) and 16x16x32 (fp8): skinny operands pad to 16
                   rows, k to 32 bytes, as on the NVIDIA parts
    fp8            the FNUZ variants (f8E4M3FNUZ, f8E5M2FNUZ) are native; OCP fp8 (f8E4M3FN)
                   runs as FNUZ, as vLLM's ROCm path converts checkpoints
    Infinity Cache the outermost on-chip level: a kernel's output that fits its resident share
                   is read from it by the next kernel, and a GEMM whose operands fit it reads
                   A and B from HBM once (place_buffers, the reuse block)
    L2             4 MiB on each XCD, 2 KB a clock each: what feeds the tiles (`tile_feed`)
    tiles          hipBLASLt's macro tiles go to 256 x 256 (AMD's MAF blog, rocm-blogs)
    XGMI           7 links to the other GPUs of a node: a ring all-reduce's bus bandwidth is
                   their one-way sum (interconnect.allreduce_bus_bytes_per_s, derived)
The wavefront (64 lanes) is not a term: the lane counts give the rates.

gemm_efficiency is fitted on AMD's max-achievable-FLOPs row for each chip (kernels.csv A01 on the
MI300X, A04 on the MI325X: bf16) and checked on the rows of the other types (A02, A03; A05, A06).
Worked number (MI300X, the A01 GEMM 4096 x 4864 x 32896 bf16): 256 x 256 tiles make 16 x 19 =
304 thread blocks, one wave over 304 CUs; 2 * 4096 * 4864 * 32896 = 1.311 PFLOP at 708 TFLOP/s
is 1.852 ms, which the fit reproduces (tests/hardware_models/test_cdna.py).
"""

from __future__ import annotations

from functools import partial

from hardware_models.cost.model import bus_allreduce
from hardware_models.families import Compiler, Family, register
from hardware_models.families.gpu import gpu_tiling, simt_pipeline
from hardware_models.families.gpu.cost import contraction_peak, gpu_group_cost, hbm_rate, vector_rate
from hardware_models.families.gpu.view import Simt, common
from hardware_models.target import Target

# Compiler choices, not hardware limits: hipBLASLt's macro tiles on gfx942, largest first (AMD:
# "larger compute tiles (up to 256x256 on MI300X/MI325X)", rocm-blogs measuring-max-achievable-
# flops-part2); each shrinks for a skinny operand to whole MFMAs.
HIPBLASLT_TILES = ((256, 256), (256, 128), (128, 256), (128, 128), (128, 64), (64, 128), (64, 64))
# A compiler choice: Composable Kernel's FMHA forward block for head_dim 128 (128 query rows x 128
# keys); a causal mask's hidden blocks are skipped, as FlashAttention's are.
CK_FMHA_TILE = (128, 128)


def cdna_view(target: Target) -> Simt:
    """An AMD CDNA file: compute units, their lanes and MFMA shape; each XCD's L2 feeds the tiles."""
    return Simt(
        units=int(target["chip.cu_count"]),
        clock_hz=target["chip.clock_hz"],
        fp32_lanes=int(target["chip.fp32_lanes_per_cu"]),
        sfu_per_clock=target["chip.transcendentals_per_cycle_per_cu"],
        mma_m=int(target["chip.mfma_m"]),
        mma_k_bytes=int(target["chip.mfma_k_bytes"]),
        **common(target, next(lv for lv in target.levels if lv.name == "l2")),
    )


def cdna_ceilings(target: Target) -> tuple[dict[str, float], dict[str, float]]:
    eff = target.view.gemm_efficiency
    return (
        {"matrix cores bf16": contraction_peak(target, "bf16") * eff, "vector f32": 2 * vector_rate(target)},
        {"HBM": hbm_rate(target), "Infinity Cache": target.level_value("infinity_cache", "bytes_per_s")},
    )


CDNA = register(
    Family(
        name="cdna",
        column=5,  # its place among the map's and compare's columns
        vendor="AMD",
        noun="GPU",
        representative="mi300x",
        schema={
            "chip": (
                "cu_count",
                "xcd_count",
                "clock_hz",
                "fp32_lanes_per_cu",
                "transcendentals_per_cycle_per_cu",
                "mfma_m",
                "mfma_k_bytes",
            ),
            "peak": ("bf16_flop_per_s", "fp16_flop_per_s"),
            "interconnect": ("xgmi_links", "xgmi_link_bytes_per_s", "allreduce_bus_bytes_per_s", "host_bytes_per_s"),
            "schedule": ("launch_overhead_s", "collective_latency_s", "gemm_overhead_s"),
            "fitted": ("gemm_efficiency", "hbm_efficiency", "flash_attention_fraction"),
            "host": ("flop_per_s",),
        },
        optional={
            "interconnect": ("scale_up_chips", "scale_out_bytes_per_s"),
            "peak": ("fp8_flop_per_s", "int8_op_per_s", "fp4_flop_per_s"),
            "chip": ("wavefront_size",),
        },
        levels={
            "hbm": ("bytes", "bytes_per_s", "usable_fraction"),
            "infinity_cache": ("bytes", "bytes_per_s", "resident_fraction"),
            "l2": ("bytes", "bytes_per_s"),
        },
        compilers=(
            Compiler(
                "inductor",
                pipeline=simt_pipeline("FlashAttention-2 (ROCm, Composable Kernel)", CK_FMHA_TILE),
                group_cost=gpu_group_cost,
                stack="ROCm: Inductor's Triton kernels for elementwise ops and reductions, GEMMs to hipBLASLt (tile "
                "and split-K chosen by cost), attention to ROCm's FlashAttention-2 (Composable Kernel)",
            ),
        ),
        ceilings=cdna_ceilings,
        peak_16bit=lambda t: t["peak.bf16_flop_per_s"],
        off_chip=lambda t: ("HBM", t.main_memory_bytes_per_s),
        tiling=partial(gpu_tiling, tiles=HIPBLASLT_TILES),
        view=cdna_view,
        allreduce=bus_allreduce,
    )
)
