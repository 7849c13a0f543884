"""Every target family's compiler pipeline and cost model, declared once.

A pipeline is an ordered tuple of passes `verb(module, plan, target) -> Plan` (one module each
in hardware_models/passes/); a family's cost model reads the finished plan. A new family
(Cerebras, Groq, Spyre) adds one entry to each table, without changing the core.
"""

from __future__ import annotations

from functools import partial

from hardware_models.cost.gpu import gpu_group_cost
from hardware_models.cost.lpu import lpu_group_cost
from hardware_models.cost.spyre import spyre_group_cost
from hardware_models.cost.tpu import tpu_group_cost
from hardware_models.cost.wafer import wafer_group_cost
from hardware_models.passes.assign_groups import assign_groups
from hardware_models.passes.divide_work import divide_work
from hardware_models.passes.fire_kernels import fire_kernels
from hardware_models.passes.fuse_elementwise import INDUCTOR, XLA_TPU, fuse_elementwise
from hardware_models.passes.insert_restickify import insert_restickify
from hardware_models.passes.partition_chips import partition_chips
from hardware_models.passes.pad_to_tiles import pad_to_tiles
from hardware_models.passes.place_buffers import GPU_L2, TPU_VMEM, place_buffers
from hardware_models.passes.place_layers import place_layers
from hardware_models.passes.plan_scratchpad import plan_scratchpad
from hardware_models.passes.resolve_dtypes import resolve_dtypes
from hardware_models.passes.schedule_static import schedule_static
from hardware_models.passes.shard_tensor_parallel import shard_tensor_parallel
from hardware_models.passes.stickify import stickify
from hardware_models.plan import Plan, expand_workload
from hardware_models.target import Target
from reference.errors import UnknownName
from reference.ir import Module

PIPELINES = {
    "gpu": (
        resolve_dtypes,  # first because a type the target lacks is an error before any work
        assign_groups,
        partial(fuse_elementwise, rules=INDUCTOR),  # after assign_groups because it merges its groups
        shard_tensor_parallel,  # before pad_to_tiles because a chip tiles only its share of the columns
        pad_to_tiles,  # after fusion because only contraction groups are tiled, once
        partial(place_buffers, level=GPU_L2),  # after pad_to_tiles because re-reads follow the reuse block
    ),
    "tpu": (
        resolve_dtypes,
        assign_groups,
        partial(fuse_elementwise, rules=XLA_TPU),  # XLA fuses epilogues into the MXU fusion
        shard_tensor_parallel,
        pad_to_tiles,
        partial(place_buffers, level=TPU_VMEM),
    ),
    "spyre": (
        resolve_dtypes,
        assign_groups,
        partial(fuse_elementwise, rules=INDUCTOR),  # torch-spyre is an Inductor back end
        shard_tensor_parallel,  # cards in a cluster (up to 8) when one cannot hold the model
        stickify,  # after fusion because only tensors between kernels live in LPDDR5 or LX
        insert_restickify,  # after stickify because it compares a matmul operand's layout with the one it needs
        pad_to_tiles,  # 8-row passes, n and k to whole sticks
        divide_work,  # after pad_to_tiles because a matmul's units are its row passes x output sticks
        plan_scratchpad,  # after divide_work because residency is counted per core
        fire_kernels,  # last: the dataflow edges need where every tensor waits
    ),
    "lpu": (
        resolve_dtypes,
        assign_groups,  # no fusion: streams chain ops instead, in schedule_static
        partition_chips,  # before the schedule because a layer split over chips shortens its matmuls
        schedule_static,
    ),
    "wafer": (
        resolve_dtypes,
        assign_groups,
        partial(fuse_elementwise, rules=XLA_TPU),  # a region computes a matmul and streams its epilogue on
        place_layers,  # after fusion because each kernel gets one region of the wafer
    ),
}

COST_MODELS = {
    "gpu": gpu_group_cost, "tpu": tpu_group_cost, "spyre": spyre_group_cost, "lpu": lpu_group_cost,
    "wafer": wafer_group_cost,
}


def pass_name(step) -> str:
    return step.func.__name__ if isinstance(step, partial) else step.__name__


def compile_plan(module: Module, target: Target, stop_after: str | None = None, chips: int | None = None) -> Plan:
    """Run the target family's pipeline over the IR: the compiled result, as data.

    Args:
        module: the IR (from either side, or a StableHLO file).
        target: a loaded target (`hardware_models.target.get_target`).
        stop_after: the name of a pass to stop after (to inspect an intermediate plan).
        chips: how many chips (wafers on Cerebras) to use, instead of the fewest that hold the
            program's arguments.

    Raises:
        UnsupportedDtype: the program uses a floating type the target lacks.
        UnknownName: an unknown pass name.
        InvalidShape: fewer chips than the program needs.
    """
    pipeline = PIPELINES[target.family]
    names = [pass_name(step) for step in pipeline]
    if stop_after is not None and stop_after not in names:
        raise UnknownName("pass", stop_after, names)
    ops, notes = expand_workload(module)
    plan = Plan(target.name, ops, notes=notes, requested_chips=chips)
    for step, name in zip(pipeline, names):
        plan = step(module, plan, target)
        plan = plan.with_(passes=plan.passes + ((name, len(plan.groups)),))
        if name == stop_after:
            break
    return plan
