"""partition_chips: spread a model over as many chips as its weights and caches need (LPU).

A Groq chip has only SRAM (220 MiB), so the compiler places every argument of the program —
weights, inputs, a KV cache; a regional block's weights once per layer — in SRAM across chips:

    chips           = max(ceil(needed bytes / usable SRAM), tensor_parallel)
    tensor_parallel = ceil(one layer's weights / usable SRAM)   (chips that share each layer)
    stages          = ceil(chips / tensor_parallel)              (layer groups in a pipeline)

--chips N may spread the program wider, up to the chips its arguments and results need (a
prefill's results hold the KV cache its decode step reads) or, if more, one output column of the
narrowest weight matrix per chip x the layers (a regional model; the kernels of a flat program):
beyond that a chip would hold no work (predict's prefill, on the chips its decode step's cache
needs, takes them: compile_plan's shared_chips). It then adds the
chip-to-chip traffic as transfer groups: a hop of the hidden state between
consecutive stages (stages - 1 per pass), and with tensor_parallel > 1 two all-reduces of the
hidden state per layer (after attention and after the MLP). Their times are in families/lpu/cost.py.
Worked number: llama-2-7b in fp16 needs 13.48 GB; at 0.9 x 220 MiB = 207.6 MB per chip that is
65 chips; one layer's 405 MB of weights takes 2 of them (33 stages).
"""

from __future__ import annotations

from hardware_models.plan import Group, Partition, Plan, ceil_div
from hardware_models.target import Target
from hardware_models.workload import program_footprint, weight_matmul_widths
from reference.errors import InvalidShape
from reference.ir import Module
from reference.units import format_bytes, plural


def partition_chips(module: Module, plan: Plan, target: Target) -> Plan:
    footprint = program_footprint(module)
    needed = footprint.needed_bytes
    usable = target.usable_main_memory_bytes
    whole = max(1, int(usable))  # bytes a chip holds, whole: the chip counts are exact integer ceilings
    tensor_parallel = max(1, ceil_div(footprint.layer_bytes, whole))
    chips = max(ceil_div(needed, whole), tensor_parallel)
    if plan.requested_chips is not None:
        if plan.requested_chips < chips:
            raise InvalidShape(
                target.name,
                "chips",
                plan.requested_chips,
                f"the arguments need {format_bytes(needed)} of SRAM: at least {chips} chips",
            )
        stages = footprint.layers if footprint.regional else max(1, len(plan.groups))
        widths = weight_matmul_widths(module, plan)  # attention's dots are not split by columns
        per_layer = max(tensor_parallel, min(widths, default=1))
        # a chip that holds part of what the program writes (a prefill's KV cache, which its decode
        # graph then reads as an argument, on as many chips as that needs) holds work too
        written = ceil_div(needed + sum(t.nbytes for t in module.main.results), whole)
        most = max(chips, per_layer * stages, written)
        if plan.requested_chips > most and not plan.chips_shared:
            raise InvalidShape(
                target.name,
                "chips",
                plan.requested_chips,
                f"at most {most}: the larger of {written} (what its arguments and results fill) and "
                f"{per_layer} per layer (one output column of the narrowest weight matrix each) x {stages} "
                "pipeline stages (one " + ("layer" if footprint.regional else "kernel") + " each)",
            )
        chips = plan.requested_chips
    partition = Partition(chips, tensor_parallel, needed, whole, footprint.hidden_bytes, footprint.layers)
    if chips == 1:
        return plan.with_(partition=partition)
    transfers = []
    next_id = len(plan.groups)
    if partition.stages > 1:
        transfers.append(Group(next_id, "transfer", (), "main", partition.stages - 1, "stage hop"))
    if tensor_parallel > 1:
        all_reduces = 2 * footprint.layers if footprint.regional else 1
        transfers.append(Group(next_id + len(transfers), "transfer", (), "main", all_reduces, "all-reduce"))
    note = (
        f"{format_bytes(needed)} of weights and inputs over {format_bytes(usable)} of usable SRAM per chip: "
        f"{plural(chips, 'chip')}, {tensor_parallel} per layer, {plural(partition.stages, 'pipeline stage')}"
    )
    return plan.with_(groups=plan.groups + tuple(transfers), partition=partition, notes=plan.notes + (note,))
