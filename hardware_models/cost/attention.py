"""What every family's fused attention kernel (fuse_attention) shares; each family costs its own.

The kernel's main-memory bytes are its placement's (Q, K, V, O: place_buffers calls
fuse_attention.attention_placement); the scores never leave the chip. One chip of a
tensor-parallel partition computes its share of the query heads (1 / chips of the FLOPs).
The GPU's kernel (FlashAttention-2) is costed in families/gpu/cost.py, the TPU's (Pallas) in families/tpu/cost.py.
"""

from __future__ import annotations

from hardware_models.plan import Group, Plan
from reference.ir import category
from reference.ir.counters import contraction_flops


def dot_flops(plan: Plan, group: Group) -> int:
    """FLOPs of the kernel's two dots (what attention throughput figures count)."""
    return sum(contraction_flops(plan.ops[i].op) for i in group.members if category(plan.ops[i].op) == "contraction")


def attention_chips(plan: Plan) -> int:
    """The chips a tensor-parallel partition splits the query heads over (1 otherwise)."""
    p = plan.partition
    return p.tensor_parallel if p and p.mode == "tensor parallel" else 1
