"""Every catalogue entry as a JAX callable: a Flax NNX module, or a pure function if weightless.

`build(name, shapes, dtype)` returns it; `LAYOUTS` says how the JAX side's preferred layout
differs from the reference's (conv2d NHWC, attention [B, T, N, H]); the runner applies it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from flax import nnx

from jax_side.layers import (
    NORM_OPTIONS,
    Block,
    Decoder,
    GeluMLP,
    MoE,
    SwiGLU,
    apply_rope,
    dot_product_attention,
    rope_frequencies,
)
from jax_side.params import load_weights
from reference.catalogue import MODELS, get_entry
from reference.catalogue.attention import ROPE_THETA
from reference.catalogue.norms import LAYERNORM_EPS, RMSNORM_EPS
from reference.catalogue.transformer import config_for
from reference.errors import UnknownName
from reference.models import ModelConfig

JAX_DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16, "float16": jnp.float16}

# entry -> (input permutations from the reference layout, output permutation back to it)
LAYOUTS: dict[str, tuple[dict[str, tuple[int, ...]], tuple[int, ...]]] = {
    "conv2d": ({"x": (0, 2, 3, 1)}, (0, 3, 1, 2)),  # NCHW -> NHWC, and back
    "attention": ({"q": (0, 2, 1, 3), "k": (0, 2, 1, 3), "v": (0, 2, 1, 3)}, (0, 2, 1, 3)),  # BNTH <-> BTNH
}


def _rngs() -> nnx.Rngs:
    # Initial values are overwritten by the converter; the seed only makes construction pure.
    return nnx.Rngs(0)


def _conv(s, dt):
    p = s["padding"]
    return nnx.Conv(
        s["c_in"],
        s["c_out"],
        kernel_size=(s["kernel"], s["kernel"]),
        strides=s["stride"],
        padding=((p, p), (p, p)),
        dtype=dt,
        param_dtype=dt,
        rngs=_rngs(),
    )


def _norm(cls, eps):
    return lambda s, dt: cls(s["d"], epsilon=eps, dtype=dt, param_dtype=dt, rngs=_rngs(), **NORM_OPTIONS.get(cls, {}))


def _attention(s, dt):
    causal = s["mode"] == "prefill"  # decode: one query sees every cached key
    return functools.partial(dot_product_attention, causal=causal)


# Weightless entries: pure functions.
FUNCTIONS: dict[str, Callable] = {
    "matmul": lambda s, dt: jnp.matmul,
    "batched_matmul": lambda s, dt: jnp.matmul,
    "add": lambda s, dt: jnp.add,
    "mul": lambda s, dt: jnp.multiply,
    "relu": lambda s, dt: jax.nn.relu,
    "gelu": lambda s, dt: functools.partial(jax.nn.gelu, approximate=s["approximate"] == "tanh"),
    "silu": lambda s, dt: jax.nn.silu,
    "softmax": lambda s, dt: functools.partial(jax.nn.softmax, axis=-1),
    "log_softmax": lambda s, dt: functools.partial(jax.nn.log_softmax, axis=-1),
    "rope": lambda s, dt: functools.partial(apply_rope, inv_freq=rope_frequencies(s["head_dim"], ROPE_THETA)),
    "attention": _attention,
    "clone": lambda s, dt: jnp.copy,
}

# Entries with weights: Flax NNX modules.
MODULES: dict[str, Callable] = {
    "linear": lambda s, dt: nnx.Linear(s["k"], s["n"], dtype=dt, param_dtype=dt, rngs=_rngs()),
    "conv2d": _conv,
    "layernorm": _norm(nnx.LayerNorm, LAYERNORM_EPS),
    "rmsnorm": _norm(nnx.RMSNorm, RMSNORM_EPS),
    "mlp": lambda s, dt: (SwiGLU if s["kind"] == "swiglu" else GeluMLP)(s["d_model"], s["d_ff"], dt, _rngs()),
    "moe": lambda s, dt: MoE(s["d_model"], s["d_ff"], s["n_experts"], s["top_k"], dt, _rngs()),
    "embedding": lambda s, dt: nnx.Embed(s["vocab"], s["d"], dtype=dt, param_dtype=dt, rngs=_rngs()),
    "block": lambda s, dt: Block(config_for("block", s), dt, _rngs()),
    "decoder": lambda s, dt: Decoder(config_for("decoder", s), dt, _rngs()),
}


def build(name: str, shapes: dict, dtype: str):
    """The JAX callable of a catalogue entry at resolved shapes.

    Weightless entries are pure functions. Entries with weights are NNX modules built
    abstractly (`nnx.eval_shape`): every variable holds a ShapeDtypeStruct until
    `jax_side.load_weights` fills it, so no initializer runs and no weight is materialized.

    Raises:
        UnknownName: the name is not in the catalogue.
    """
    get_entry(name)
    dt = JAX_DTYPES[dtype]
    if name in FUNCTIONS:
        return FUNCTIONS[name](shapes, dt)
    if name in MODELS:
        return nnx.eval_shape(lambda: Decoder(config_for(name, shapes), dt, _rngs()))
    if name not in MODULES:
        raise UnknownName("JAX kernel", name, [*FUNCTIONS, *MODULES])
    return nnx.eval_shape(lambda: MODULES[name](shapes, dt))


def decoder(cfg: ModelConfig, weights: dict | None = None, dtype: str = "float32"):
    """The NNX decoder of any model config (a Hugging Face one included), built abstractly, with
    canonical `weights` loaded when given (reference/hf_weights.py imports them)."""
    module = nnx.eval_shape(lambda: Decoder(cfg, JAX_DTYPES[dtype], _rngs()))
    return load_weights(module, weights) if weights is not None else module
