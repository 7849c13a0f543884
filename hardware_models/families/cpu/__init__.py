"""The host-CPU family: the machine this runs on, the one processor the project can measure.

Cores with vector units (AVX2, AVX-512; AMX tiles, a small on-core systolic array, where the
CPU has them), a cache hierarchy read from sysfs (hardware_models/families/cpu/host.py) and DRAM. Its
compiler passes mirror Inductor's C++ backend and XLA:CPU: elementwise work and reductions fused
into loops (Inductor's CPU fusion: one kernel per contraction, epilogues apart), contractions
handed to a GEMM library blocked for the caches, loops vectorized to the SIMD width. The cost
model is hardware_models/families/cpu/cost.py; the target file is written by `landscape calibrate
host-cpu`, and `landscape validate host-cpu` checks it against kernels run here.

Tiling (BLIS/Goto blocking, as oneDNN's and MKL's GEMMs block):
    micro-tile  mr x nr = 6 x (2 * f32 lanes): 6 rows of two vector registers of C (12 of the 16
                ymm registers on AVX2; a compiler choice)
    padded      n rounded up to whole vectors (the vectorization width); m and k unpadded
    kc          the depth whose nr-wide panel of B fills half of L1d: L1d / 2 / (nr * e)
    mc, nc      the A block (mc x kc) in half of L2, the B block (kc x nc) in half of the last
                level cache: the reuse block (bm, bn) = (mc, nc), whole extents when they fit
    units       micro-tiles ceil(m / mr) * ceil(np / nr), over the cores: steps = ceil(units / cores)
Worked numbers (8 f32 lanes, L1d 32 KiB, L2 512 KiB, L3 32 MiB): nr = 16, kc = 16384 / 64 = 256,
mc = 262144 / 1024 = 256, nc = 16 MiB / 1024 = 16384; a 100 x 100 x 100 GEMM pads n to 104.
"""

from __future__ import annotations

from functools import partial

from hardware_models.families import Compiler, Family, register
from hardware_models.families.cpu.cost import (
    EAGER_KERNELS,
    FUNCTIONS,
    GEMM_CURVE,
    RUNTIMES,
    XLA_GEMM_CURVE,
    cpu_group_cost,
    gemm_rate,
)
from hardware_models.passes.assign_groups import assign_groups
from hardware_models.passes.fold_upcasts import fold_upcasts
from hardware_models.passes.fuse_attention import fuse_attention
from hardware_models.passes.fuse_elementwise import INDUCTOR, fuse_elementwise
from hardware_models.passes.pad_to_tiles import pad_to_tiles
from hardware_models.passes.place_buffers import place_buffers
from hardware_models.passes.resolve_dtypes import resolve_dtypes
from hardware_models.plan import GemmShape, Tiling, ceil_div, round_up
from hardware_models.target import Target
from reference.ir.graph import element_bytes

MICRO_ROWS = 6  # a compiler choice: rows of C a micro-kernel keeps in registers (BLIS's Haswell kernel)


def _cache(target: Target, name: str) -> float:
    """One instance of cache `name`; a machine without it blocks for the nearest level it has
    (the innermost on-chip level, else main memory)."""
    key = f"levels.{name}.bytes"
    if key in target.quantities:
        return target[key]
    inner = [lv for lv in target.levels if lv.role == "on-chip"]
    return target.level_value(inner[-1] if inner else target.level("main"), "bytes")


def cpu_tiling(shape: GemmShape, target: Target, out_bytes: int) -> Tiling:
    lanes = int(target["chip.f32_lanes"])
    e = element_bytes(shape.dtype)
    mr, nr = MICRO_ROWS, 2 * lanes
    np_ = round_up(shape.n, lanes)
    l1, l2 = _cache(target, "l1d"), _cache(target, "l2")
    last = target.level_capacity(target.level("on-chip")) if target.has_level("on-chip") else l2
    kc = max(1, min(shape.k, int(l1 / 2 // (nr * e))))
    mc = max(mr, min(round_up(shape.m, mr), int(l2 / 2 // (kc * e)) // mr * mr))
    nc = max(nr, min(round_up(np_, nr), int(last / 2 // (kc * e)) // nr * nr))
    units = shape.batch * ceil_div(shape.m, mr) * ceil_div(np_, nr)
    return Tiling(
        shape, (mr, nr, kc), (shape.m, np_, shape.k), units, ceil_div(units, int(target["chip.cores"])), (mc, nc)
    )


def cpu_ceilings(target: Target) -> tuple[dict[str, float], dict[str, float]]:
    return (
        {
            "GEMM f32": gemm_rate(target, "f32"),
            "GEMM bf16": gemm_rate(target, "bf16"),
            "vector f32": target["peak.f32_flop_per_s"] / 2,
        },
        {lv.name.upper(): target.level_value(lv, "bytes_per_s") for lv in target.levels},
    )


def _pipeline(rules, attention: bool):
    return (
        resolve_dtypes,  # first because every later pass reads the types it decides
        fold_upcasts,  # after resolve_dtypes because it narrows to checked types only; oneDNN takes bf16 operands with f32 accumulation
        partial(
            assign_groups, fold_iota=False
        ),  # after fold_upcasts because a folded convert forms no kernel; XLA:CPU and Inductor compute iotas at run time
        partial(fuse_elementwise, rules=rules),  # loops fused as the compiler does; GEMMs go to the library
        # after fuse_elementwise because it takes the dots and softmax out of its kernels: Inductor
        # calls ATen's flash attention for CPU (its output code: aten._scaled_dot_product_flash_attention_for_cpu)
        *((partial(fuse_attention, stack="ATen flash attention (CPU)"),) if attention else ()),
        pad_to_tiles,  # after fusion because only contraction groups are blocked, once
        place_buffers,  # after pad_to_tiles because re-reads follow the cache blocks
    )


# The family's usual compiler is Inductor's C++ backend (it fuses loops the way its GPU backend
# does); jax.jit's, XLA:CPU, is its own module (families/cpu/xla.py), added to the record.


def machine_note(target: Target) -> str:
    """A note when the target file was calibrated on another CPU than this one ('' when it matches)."""
    from hardware_models.families.cpu.host import read_host

    host = read_host()
    if target.description == host.summary:
        return ""
    return (
        f"note: {target.path} was calibrated on {target.description}; this machine is {host.summary}. "
        "Its rates were measured there and may be several times off here: run `landscape calibrate host-cpu`, "
        "then give the file it writes (out/calibration/host-cpu.toml) as --target-file, or as --target to "
        "estimate, predict and serve."
    )


CPU = register(
    Family(
        name="cpu",
        vendor="host",
        noun="CPU",
        representative="host-cpu",
        schema={
            "chip": ("cores", "clock_hz", "f32_lanes", "fma_per_cycle", "l1_ways", "l1_line_bytes"),
            "peak": ("f32_flop_per_s",),
            "fitted": (
                "gemm_f32_flop_per_s",
                "gemm_bf16_flop_per_s",
                "gemm_f16_flop_per_s",
                "xla_gemm_f32_flop_per_s",
                # every function calibrate times, through every runtime: a file that lost one is refused
                *(f"{r}_{fn}_per_s" for r in RUNTIMES for fn in FUNCTIONS + (EAGER_KERNELS if r == "eager" else ())),
                "eager_dispatch_s",
                "eager_nested_s",
                "eager_module_call_s",
                "inductor_call_s",
                "xla_call_s",
                "inductor_loop_call_s",
                "xla_loop_call_s",
                *(f"{r}_reduce_per_s" for r in RUNTIMES),
                *(f"gemm_f32{suffix}_flop_per_s" for _, suffix in GEMM_CURVE[:-1]),
                *(f"xla_gemm_f32{suffix}_flop_per_s" for _, suffix in XLA_GEMM_CURVE[:-1]),
                "eager_sdpa_row_s",
                "eager_param_s",
                "eager_index_add_s",
                "xla_stream_bytes_per_s",
                "xla_strided_per_s",
                "xla_conflict_per_s",
                "xla_conv_pixel_s",
                "gemm_pack_bytes_per_s",
                "xla_gemm_pack_bytes_per_s",
                "gemv_bytes_per_s",
                "xla_gemv_bytes_per_s",
                *(f"eager_{fn}_s" for fn in EAGER_KERNELS),
                "gemm_cold_bytes_per_s",
                "xla_gemm_cold_bytes_per_s",
                "xla_dot_s",
                "inductor_kernel_s",
                "xla_kernel_s",
                "inductor_arg_s",
                "xla_arg_s",
                "dram_bytes_per_s",
                *(f"{r}_conv{q}" for r in RUNTIMES for q in ("_flop_per_s", "_s", "_batched_s", "_depth")),
            ),
        },
        # the caches this machine has (sysfs), each with the bandwidth its stream rows measured
        optional={"fitted": ("l1d_bytes_per_s", "l2_bytes_per_s", "l3_bytes_per_s", "l4_bytes_per_s")},
        levels={"dram": ("bytes", "bytes_per_s", "usable_fraction")},
        compilers=(
            Compiler(
                "inductor",
                pipeline=_pipeline(INDUCTOR, attention=True),
                group_cost=partial(cpu_group_cost, runtime="inductor"),
                stack="torch.compile's Inductor C++ back end: loops fused as its GPU back end fuses them, GEMMs to "
                "oneDNN, attention to ATen's flash kernel for CPU",
            ),
        ),
        ceilings=cpu_ceilings,
        peak_16bit=lambda t: gemm_rate(t, "bf16"),
        off_chip=lambda t: ("DRAM", t.main_memory_bytes_per_s),
        tiling=cpu_tiling,
        caveat=machine_note,
    )
)
