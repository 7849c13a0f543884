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


def computed_share(plan: Plan, group: Group) -> float:
    """The share of the score square the kernel computes, as fuse_attention decided it
    (AttentionShape.computed_share: a causal kernel skips the key tiles its mask hides; 1 for a
    kernel that computes them all). Its dots, softmax and exponentials all scale with it."""
    shape = plan.attention.get(group.id)
    return shape.computed_share if shape else 1.0


def square_dot_flops(plan: Plan, group: Group) -> int:
    """FLOPs of the kernel's two dots over the whole score square (what the IR counts)."""
    return sum(contraction_flops(plan.ops[i].op) for i in group.members if category(plan.ops[i].op) == "contraction")


def dot_flops(plan: Plan, group: Group) -> float:
    """FLOPs of the kernel's two dots over the score tiles it computes: the square's x computed_share."""
    return square_dot_flops(plan, group) * computed_share(plan, group)


def attention_chips(plan: Plan) -> int:
    """The chips a tensor-parallel partition splits the query heads over (1 otherwise)."""
    p = plan.partition
    return p.tensor_parallel if p and p.mode == "tensor parallel" else 1
