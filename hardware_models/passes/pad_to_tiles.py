"""pad_to_tiles: cut each contraction into the tiles its target runs, and pad to them.

Padding is computed here, once, with ceil_div, and stored in the plan's `Tiling`; the cost
models read it and never recompute it. The rules below are each family's `tiling`, declared in
its module under hardware_models/families/; this pass applies the target's.

A contraction becomes a batched GEMM (`gemm_shape`) in the type the plan says it runs as, its n
cut to this chip's share under tensor parallelism; the family's rule gives its tile (tm, tn, tk),
padded extents (mp, np, kp), units that run in parallel, steps (rounds of units) and reuse block.
Each rule's formula and worked number is in its family's module: thread blocks in waves over SMs
(families/gpu/__init__.py), weight-stationary MXU folds (families/tpu/__init__.py), 8-row passes by sticks
(families/spyre/__init__.py). A family with no `tiling` (the LPU, the wafer) does not run this pass.
"""

from __future__ import annotations

from dataclasses import replace

from hardware_models.plan import Plan, ceil_div, gemm_shape, shard_factor
from hardware_models.target import Target
from reference.ir import Module


def pad_to_tiles(module: Module, plan: Plan, target: Target) -> Plan:
    rule = target.family_record.tiling  # the family's tiling rules (hardware_models/families/)
    tilings = {}
    for group in plan.groups:
        if group.kind != "contraction":
            continue
        op = plan.ops[group.members[0]].op
        shape = gemm_shape(op, plan.runs_as(op.operand_types[0].dtype))
        shape = replace(shape, n=ceil_div(shape.n, shard_factor(plan, group)))  # this chip's columns
        tilings[group.id] = rule(shape, target, op.result_types[0].nbytes)
    return plan.with_(tilings=tilings) if tilings else plan
