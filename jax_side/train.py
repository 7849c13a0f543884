"""The JAX path of a training step: each part's `jax.vjp` and an optax AdamW update, jitted and
lowered to StableHLO at abstract arguments (no weights are materialized), then read into the IR.

The parts and the recomputation modes are reference/training.py's. Recomputation is JAX's own
`jax.checkpoint` with a policy:

    none        no checkpoint: every residual autodiff keeps is saved
    selective   jax.checkpoint(block, policy=dots_with_no_batch_dims_saveable): the outputs of the
                matmuls against weights are saved, the rest of the layer is recomputed
    full        jax.checkpoint(block, policy=nothing_saveable): the layer's input alone is saved

and in every mode the attention core is checkpointed saving nothing (layers.RECOMPUTE_ATTENTION),
so the backward recomputes the scores, as FlashAttention's does.

`saved_bytes` is what autodiff keeps between the forward and the backward: the residuals
`saved_residuals` lists (JAX's own accounting, before XLA's optimizations) less the weights and
constants, which are held anyway. A part's input counts when its backward reads it (the layer's
input under selective and full recomputation).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jax_side.kernels import JAX_DTYPES
from jax_side.lower import lower_function
from reference.errors import UnknownName
from reference.models import ModelConfig
from reference.training import ADAMW, PARTS, RECOMPUTE, TrainParts

POLICIES = {
    "none": None,
    "selective": jax.checkpoint_policies.dots_with_no_batch_dims_saveable,
    "full": jax.checkpoint_policies.nothing_saveable,
}


def _state(make):
    """(graphdef, abstract state) of a module built abstractly."""
    return nnx.split(nnx.eval_shape(make))


def _saved_bytes(fn, *args) -> int:
    """Bytes of the residuals autodiff keeps for fn's backward, arguments excepted."""
    from jax._src.ad_checkpoint import saved_residuals

    total = 0
    for aval, why in saved_residuals(fn, *args):
        if why.startswith(("from the argument st", "from a constant")):  # weights are held anyway
            continue
        total += int(np.prod(aval.shape, dtype=np.int64)) * aval.dtype.itemsize
    return total


def lower_adamw(state, name: str):
    """An optax AdamW step over one part's weights, mixed precision: float32 master weights and
    moments, the bfloat16 (model dtype) gradient cast up, the model-dtype weights written back.

        (master, grads, opt_state) -> (master', weights', opt_state')
    """
    master = jax.tree.map(lambda s: jax.ShapeDtypeStruct(s.shape, jnp.float32), state)
    tx = optax.adamw(ADAMW["lr"], ADAMW["b1"], ADAMW["b2"], ADAMW["eps"], weight_decay=ADAMW["weight_decay"])
    opt_state = jax.eval_shape(tx.init, master)

    def step(master, grads, opt_state):
        grads = jax.tree.map(lambda g: g.astype(jnp.float32), grads)
        updates, opt_state = tx.update(grads, opt_state, master)
        master = optax.apply_updates(master, updates)
        weights = jax.tree.map(lambda m, g: m.astype(g.dtype), master, state)
        return master, weights, opt_state

    n = len(jax.tree.leaves(master))
    return lower_function(step, master, state, opt_state, name=f"{name}.adamw", n_params=n)


def lower_train_parts(cfg: ModelConfig, batch: int, seq: int, dtype: str, recompute: str = "none") -> TrainParts:
    """Lower a decoder's training step at one microbatch (batch sequences of seq tokens).

    Raises:
        UnknownName: recompute is not one of RECOMPUTE.
    """
    from jax_side.layers import RECOMPUTE_ATTENTION, Block, Epilogue, Prologue, routed_moe

    if recompute not in RECOMPUTE:
        raise UnknownName("recompute", recompute, RECOMPUTE)
    dt = JAX_DTYPES[dtype]
    rngs = lambda: nnx.Rngs(0)
    ids = jax.ShapeDtypeStruct((batch, seq), np.int32)
    x = jax.ShapeDtypeStruct((batch, seq, cfg.d_model), dt)
    graphs = {
        "prologue": _state(lambda: Prologue(cfg, dt, rngs())),
        "block": _state(lambda: Block(cfg, dt, rngs())),
        "epilogue": _state(lambda: Epilogue(cfg, dt, rngs())),
    }

    def forward(part):
        graphdef = graphs[part][0]
        if part == "block":
            fwd = lambda st, x: nnx.merge(graphdef, st)(x)[0]
            policy = POLICIES[recompute]
            return fwd if recompute == "none" else jax.checkpoint(fwd, policy=policy)
        if part == "prologue":
            return lambda st, ids: nnx.merge(graphdef, st)(ids)

        def loss(st, x, labels):  # the mean token cross-entropy, in float32
            logits = nnx.merge(graphdef, st)(x).astype(jnp.float32)
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

        return loss

    def train(part):
        fwd = forward(part)
        if part == "prologue":  # ids are not differentiated: the table's gradient only

            def step(st, ids, dy):
                y, vjp = jax.vjp(lambda s: fwd(s, ids), st)
                return y, vjp(dy)[0]

            return step, (ids, x)
        if part == "block":

            def step(st, x, dy):
                y, vjp = jax.vjp(fwd, st, x)
                d_st, dx = vjp(dy)
                return y, dx, d_st

            return step, (x, x)

        def step(st, x, labels):
            loss, (d_st, dx) = jax.value_and_grad(fwd, argnums=(0, 1))(st, x, labels)
            return loss, dx, d_st

        return step, (x, ids)

    parts, optimizer, saved = {}, {}, {}
    token = RECOMPUTE_ATTENTION.set(True)
    try:
        with routed_moe():  # the costed graph routes its tokens, as inference's does
            for part in PARTS:
                state = graphs[part][1]
                step, inputs = train(part)
                n = len(jax.tree.leaves(state))
                parts[part] = lower_function(step, state, *inputs, name=f"{cfg.name}.{part}.train", n_params=n)
                optimizer[part] = lower_adamw(state, f"{cfg.name}.{part}")
                saved[part] = _saved_bytes(forward(part), state, *inputs[: 1 if part != "epilogue" else 2])
    finally:
        RECOMPUTE_ATTENTION.reset(token)
    return TrainParts("jax", cfg.name, batch, seq, recompute, parts, optimizer, saved)
