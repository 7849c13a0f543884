"""stickify: give every tensor that crosses a kernel boundary its stick layout (Spyre).

A tensor's default layout on the device keeps the host's last dimension as the stick dimension
and pads it to whole 128-byte sticks (torch-spyre, tensors_and_layouts.md): fp16 (65,) becomes
[2, 64]; (5, 100, 150) becomes 5 * 100 * 3 = 1500 sticks. Elements are as wide as the type the
target runs them as (an emulated f32 is stored as f16). The layout is computed here once and read
by every later pass and by the cost model. The plan notes how much of those bytes is padding.
"""

from __future__ import annotations

from hardware_models.families.spyre.plan import SpyreState, StickLayout
from hardware_models.plan import Plan, group_inputs, group_outputs
from hardware_models.target import Target
from reference.ir import Module
from reference.ir.graph import element_bytes


def stick_layout(shape: tuple[int, ...], dtype: str, target: Target, stick_dim: int | None = None) -> StickLayout:
    """The default (last-dimension) stick layout of a tensor whose elements run as `dtype` (the
    plan's `runs_as`), or one sticked on `stick_dim`."""
    stick_bytes = int(target["chip.stick_bytes"])
    width = element_bytes(dtype) or 1  # a token: one byte, so a stick still has a width
    dim = (len(shape) - 1 if stick_dim is None else stick_dim) if shape else 0
    return StickLayout(tuple(shape), dim, stick_bytes // width, stick_bytes)


def stickify(module: Module, plan: Plan, target: Target) -> Plan:
    graph = plan.value_graph()
    layouts = {}
    for group in plan.groups:
        for value in group_inputs(plan, graph, group) + group_outputs(plan, graph, group):
            if value not in layouts:
                typ = graph.types[value]
                layouts[value] = stick_layout(typ.shape, plan.runs_as(typ.dtype), target)
    padded = sum(layout.padded_bytes for layout in layouts.values())
    data = sum(layout.data_bytes for layout in layouts.values())
    note = f"stick padding: {padded - data:,} of the {padded:,} bytes between kernels ({(padded - data) / max(padded, 1):.1%}) are padding"
    return plan.with_state(SpyreState, layouts=layouts).with_(notes=plan.notes + ((note,) if padded > data else ()))
