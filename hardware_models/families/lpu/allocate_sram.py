"""allocate_sram: place every value a statically scheduled program computes in SRAM, for the
cycles it is live (LPU).

The LPU has no caches and no allocator at run time: its compiler decides where in SRAM each
tensor lives and for which cycles, as it decides the cycle each op issues. Per function
instance's timeline (schedule_static), a value holds its bytes from the cycle its producer starts
writing it (`written`) to the cycle its last reader finishes (`freed`); to the timeline's end
where the program returns it or another timeline reads it. Values are placed first fit by
address, in the order they are written, and the space of a value that has died is reused. The
program's arguments (weights, inputs, caches) stay where partition_chips placed them: offsets
count from the end of a chip's share of them.

Rules, checked by tests/hardware_models/passes/test_allocate_sram.py:
    written <= the start of every reader                  never read before it is written
    slots that share an address never share a cycle     never overwritten while still live
Sizes are whole values (a matmul's output split over tensor-parallel chips is counted whole, an
upper bound). The note gives the peak beside the arguments and the usable SRAM, and says so
where the two exceed it: partition_chips sizes the chip count by the arguments alone.
"""

from __future__ import annotations

from hardware_models.families.lpu.plan import LpuState, first_fit, sram_slots  # noqa: F401 (first_fit re-exported)
from hardware_models.plan import Plan
from hardware_models.target import Target
from reference.ir import Module
from reference.units import format_bytes


def allocate_sram(module: Module, plan: Plan, target: Target) -> Plan:
    sram, peak = sram_slots(plan)
    if not sram:
        return plan.with_state(LpuState)  # nothing computed to place; the plan is still the LPU's
    p = plan.partition
    arguments = p.needed_bytes // max(1, p.chips) if p else 0
    usable = target.usable_main_memory_bytes
    note = (
        f"SRAM: at most {format_bytes(peak)} of computed values live at once, beside {format_bytes(arguments)} of "
        f"arguments, of {format_bytes(usable)} usable a chip"
        + (
            "; together more than a chip holds (the chip count is sized by the arguments alone)"
            if peak + arguments > usable
            else ""
        )
    )
    return plan.with_state(LpuState, sram=sram).with_(notes=plan.notes + (note,))
