"""shard_tensor_parallel: split a model over chips when one cannot hold it (GPU, TPU, Spyre).

Megatron-style tensor parallelism over N chips: every contraction's output columns are split,
so each chip computes ceil(n / N) of them and holds 1 / N of the weights (pad_to_tiles and the
placement passes read the factor through `shard_factor`); elementwise work and norms are
replicated (an upper bound: attention's per-head work would split too). Each layer then ends
its attention and its MLP with an all-reduce of the hidden state, added as transfer groups:

    chips      = --chips N, or the smallest power of two with N * usable memory >= the program's
                 arguments (weights, inputs, KV cache); --chips N above the narrowest
                 contraction's output columns is refused (a chip would get no column of it)
    all-reduce = collective_latency_s + 2 (N - 1) / N * hidden bytes / all-reduce bus bandwidth
                 (ring; the bus bandwidth is NCCL's measured figure on GPUs, G33-G35)
                 2 per layer for a regional model, 1 for a flat program
"""

from __future__ import annotations


from hardware_models.plan import Group, Partition, Plan, ceil_div, gemm_shape
from hardware_models.workload import program_footprint
from hardware_models.target import Target
from reference.errors import InvalidShape
from reference.ir import Module


def shard_tensor_parallel(module: Module, plan: Plan, target: Target) -> Plan:
    footprint = program_footprint(module)
    needed, hidden, layers = footprint.needed_bytes, footprint.hidden_bytes, footprint.layers
    usable = target.usable_main_memory_bytes
    whole = max(1, int(usable))  # whole bytes a chip holds: the chip counts are exact integer ceilings
    least = max(1, ceil_div(needed, whole))
    chips = plan.requested_chips or 1 << (least - 1).bit_length()  # the next power of two
    if chips < least:
        raise InvalidShape(target.name, "chips", chips, f"the arguments need {needed / 1e9:.1f} GB: at least {least} chips of {usable / 1e9:.1f} GB usable")
    if plan.requested_chips:
        widths = [gemm_shape(plan.ops[g.members[0]].op, "").n for g in plan.groups if g.kind == "contraction"]
        most = max(least, min(widths, default=1))
        if chips > most:
            raise InvalidShape(target.name, "chips", chips, f"at most {most}: tensor parallelism splits every contraction's output "
                               f"columns over the chips, and the narrowest has {most}" if widths else
                               "at most 1: the program has no contraction for tensor parallelism to split")
    partition = Partition(chips, chips, needed, whole, hidden, layers, "tensor parallel" if chips > 1 else "")
    if chips == 1:
        return plan.with_(partition=partition)
    reduces = Group(len(plan.groups), "transfer", (), "main", 2 * layers if footprint.regional else 1, "all-reduce")
    note = (f"{needed / 1e9:.1f} GB of arguments over {usable / 1e9:.1f} GB usable per chip: tensor parallel over "
            f"{chips} chips, {reduces.repeats} all-reduces of {hidden / 1e6:.3f} MB")
    return plan.with_(groups=plan.groups + (reduces,), partition=partition, notes=plan.notes + (note,))
