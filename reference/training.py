"""A training step's spec, shared by both sides: what each part of the step is, and the choices.

A decoder's step is lowered regionally, as inference is (reference/regional.py), one program
per part, each the framework's own forward and backward (JAX: `jax.vjp`; PyTorch: AOTAutograd's
joint graph), plus the optimizer's update:

    prologue    ids -> embeddings, and the embedding table's gradient from d(embeddings)
    block       (weights, x, dy) -> (y, dx, d(weights)): one layer's forward and backward,
                called `layers` times
    epilogue    (weights, x, labels) -> (loss, dx, d(weights)): final norm, LM head, the mean
                token cross-entropy, and their backward
    optimizer   AdamW over each part's weights: (weights, grads, m, v) -> (weights, m, v),
                one program per part, the block's called `layers` times

Recomputation (activation checkpointing), the choice --recompute names:

    none        the backward reads every activation autodiff saves
    selective   only the matmuls' outputs are saved; everything else in the layer (norms,
                activations, RoPE) is recomputed in the backward
    full        only the layer's input is saved; the whole layer's forward runs again in the
                backward

In every mode the attention core (softmax(QK^T)V) saves only its inputs and output and
recomputes the scores in the backward, as FlashAttention's backward does (Dao et al. 2022,
section 3.1), so no sequence-squared activation is ever held.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # not imported at run time: `landscape --help` reads RECOMPUTE without the IR
    from reference.lowering import Lowering

RECOMPUTE = ("none", "selective", "full")
PARTS = ("prologue", "block", "epilogue")

# AdamW's hyperparameters in the lowered update (their values do not change its cost): the
# defaults of optax.adamw and torch.optim.AdamW, learning rate 1e-4.
ADAMW = {"lr": 1e-4, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "weight_decay": 0.01}


@dataclass(frozen=True)
class TrainParts:
    """One side's lowered training step of a decoder at one microbatch shape.

    Attributes:
        side: "jax" or "torch".
        model: the model's name.
        batch, seq: the microbatch's sequences and tokens per sequence.
        recompute: one of RECOMPUTE.
        parts: part name (PARTS) -> its forward+backward Lowering.
        optimizer: part name -> the AdamW update of that part's weights.
        saved_bytes: part name -> bytes of activations the part's forward keeps for its backward
            (the block's is one layer's), from the framework's autodiff; None where the side
            cannot say.
        notes: what the lowering chose or left out.
    """

    side: str
    model: str
    batch: int
    seq: int
    recompute: str
    parts: dict[str, Lowering]
    optimizer: dict[str, Lowering]
    saved_bytes: dict[str, int | None] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
