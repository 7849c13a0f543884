"""A toy target family for tests/hardware_models/test_families.py: a single-core vector machine
with a DRAM and a cache, declared in this one module; its chip is toy.toml beside it.

Tiling: one 8 x 8 tile per step (m and n padded to 8). Cost: a roofline of the plan,
time = max(padded FLOPs / peak, DRAM bytes / bandwidth) + launch. Two compilers: "toy" computes
its tiles' padding; "toy-masked" masks the edge tiles, so a program costs its unpadded FLOPs there.
"""

from __future__ import annotations

from functools import partial

from hardware_models.cost.model import Cost, roofline_cost
from hardware_models.families import Compiler, Family, register
from hardware_models.passes.assign_groups import assign_groups
from hardware_models.passes.pad_to_tiles import pad_to_tiles
from hardware_models.passes.place_buffers import place_buffers
from hardware_models.passes.resolve_dtypes import resolve_dtypes
from hardware_models.plan import GemmShape, Tiling, group_work, round_up

TILE = 8


def toy_tiling(shape: GemmShape, target, out_bytes: int) -> Tiling:
    mp, np_ = round_up(shape.m, TILE), round_up(shape.n, TILE)
    units = shape.batch * (mp // TILE) * (np_ // TILE)
    return Tiling(shape, (TILE, TILE, 1), (mp, np_, shape.k), units, units, (mp, np_))


def toy_cost(module, plan, group, target, masked: bool = False) -> Cost:
    placement = plan.placements[group.id]
    flops = group_work(plan, module, group).flops
    padded = plan.tilings[group.id].padded_flops if group.id in plan.tilings and not masked else flops
    peak = target["peak.flop_per_s"]
    main = target.main_memory_level
    memory_s = {main: placement.at(main) / target.main_memory_bytes_per_s}
    return roofline_cost(
        flops, padded, flops / peak, dict(placement.bytes), memory_s, padded / peak, target["schedule.launch_s"]
    )


TOY = register(
    Family(
        name="toy",
        vendor="Example",
        noun="vector chip",
        representative="toy",
        schema={
            "peak": ("flop_per_s",),
            "schedule": ("launch_s",),
            "interconnect": ("host_bytes_per_s",),
            "host": ("flop_per_s",),
        },
        levels={"dram": ("bytes", "bytes_per_s", "usable_fraction"), "cache": ("bytes", "resident_fraction")},
        compilers=(
            Compiler(
                "toy",
                pipeline=(
                    resolve_dtypes,  # first because a type the target lacks is an error before any work
                    assign_groups,
                    pad_to_tiles,  # after assign_groups because only contraction groups are tiled
                    place_buffers,  # after pad_to_tiles because re-reads follow the reuse block
                ),
                group_cost=toy_cost,
                stack="a made-up compiler: groups, tiles and buffers, nothing fused",
            ),
            Compiler(
                "toy-masked",  # a second compiler for the same chip: the same tiles, edges masked
                pipeline=(resolve_dtypes, assign_groups, pad_to_tiles, place_buffers),
                group_cost=partial(toy_cost, masked=True),
                stack="a made-up compiler that masks each edge tile instead of computing its padding",
            ),
        ),
        ceilings=lambda t: ({"vector": t["peak.flop_per_s"]}, {"DRAM": t.main_memory_bytes_per_s}),
        peak_16bit=lambda t: t["peak.flop_per_s"],
        off_chip=lambda t: ("DRAM", t.main_memory_bytes_per_s),
        tiling=toy_tiling,
    )
)
