"""Every catalogue entry as a PyTorch `nn.Module`, built by `build(name, shapes, dtype)`.

A module's forward takes the entry's inputs positionally, in the order the entry lists them,
and its `state_dict()` keys are the entry's canonical weight names.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from pytorch_side.layers import Block, Decoder, GeluMLP, MoE, Rotary, SwiGLU
from pytorch_side.params import load_weights
from reference.catalogue import MODELS, get_entry
from reference.catalogue.attention import ROPE_THETA
from reference.catalogue.norms import LAYERNORM_EPS, RMSNORM_EPS
from reference.catalogue.transformer import config_for
from reference.errors import UnknownName
from reference.models import ModelConfig

TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class Functional(nn.Module):
    """A weightless kernel: one torch function, so every entry is an nn.Module."""

    def __init__(self, fn: Callable, name: str):
        super().__init__()
        self.fn, self.name = fn, name

    def forward(self, *args):
        return self.fn(*args)

    def extra_repr(self) -> str:
        return self.name


def _attention(s, dtype):
    causal = s["mode"] == "prefill"  # decode: one query sees every cached key
    return Functional(functools.partial(F.scaled_dot_product_attention, is_causal=causal, enable_gqa=True), "sdpa")


BUILDERS: dict[str, Callable[[dict, torch.dtype], nn.Module]] = {
    "matmul": lambda s, dt: Functional(torch.matmul, "matmul"),
    "batched_matmul": lambda s, dt: Functional(torch.matmul, "matmul"),
    "linear": lambda s, dt: nn.Linear(s["k"], s["n"], dtype=dt),
    "conv2d": lambda s, dt: nn.Conv2d(
        s["c_in"], s["c_out"], s["kernel"], stride=s["stride"], padding=s["padding"], dtype=dt
    ),
    "add": lambda s, dt: Functional(torch.add, "add"),
    "mul": lambda s, dt: Functional(torch.mul, "mul"),
    "relu": lambda s, dt: Functional(F.relu, "relu"),
    "gelu": lambda s, dt: Functional(functools.partial(F.gelu, approximate=s["approximate"]), "gelu"),
    "silu": lambda s, dt: Functional(F.silu, "silu"),
    "softmax": lambda s, dt: Functional(functools.partial(F.softmax, dim=-1), "softmax"),
    "log_softmax": lambda s, dt: Functional(functools.partial(F.log_softmax, dim=-1), "log_softmax"),
    "layernorm": lambda s, dt: nn.LayerNorm(s["d"], eps=LAYERNORM_EPS, dtype=dt),
    "rmsnorm": lambda s, dt: nn.RMSNorm(s["d"], eps=RMSNORM_EPS, dtype=dt),
    "rope": lambda s, dt: Rotary(s["head_dim"], ROPE_THETA),
    "attention": _attention,
    "mlp": lambda s, dt: (SwiGLU if s["kind"] == "swiglu" else GeluMLP)(s["d_model"], s["d_ff"], dt),
    "moe": lambda s, dt: MoE(s["d_model"], s["d_ff"], s["n_experts"], s["top_k"], dt),
    "embedding": lambda s, dt: nn.Embedding(s["vocab"], s["d"], dtype=dt),
    "clone": lambda s, dt: Functional(torch.clone, "clone"),
    "block": lambda s, dt: Block(config_for("block", s), dt),
    "decoder": lambda s, dt: Decoder(config_for("decoder", s), dt),
}


def build(name: str, shapes: dict, dtype: str) -> nn.Module:
    """The PyTorch module of a catalogue entry at resolved shapes, with the dtype set at
    construction, in eval mode (an inference program).

    Raises:
        UnknownName: the name is not in the catalogue.
    """
    get_entry(name)
    dt = TORCH_DTYPES[dtype]
    if name in MODELS:
        return Decoder(config_for(name, shapes), dt).eval()
    if name not in BUILDERS:
        raise UnknownName("PyTorch kernel", name, BUILDERS)
    return BUILDERS[name](shapes, dt).eval()


def decoder(cfg: ModelConfig, weights: dict | None = None, dtype: str = "float32") -> nn.Module:
    """The decoder of any model config (a Hugging Face one from reference/hf_config.py included),
    in eval mode, with canonical `weights` loaded when given (reference/hf_weights.py imports them)."""
    module = Decoder(cfg, TORCH_DTYPES[dtype]).eval()
    return load_weights(module, weights) if weights is not None else module


def example_inputs(name: str, shapes: dict, dtype: str) -> list[torch.Tensor]:
    """The entry's inputs as empty tensors (indices int32), for a lowering: fake under
    FakeTensorMode (torch-mlir's path), real but unwritten elsewhere (torch-xla's driver)."""
    return [
        torch.empty(spec.shape, dtype=torch.int32 if spec.kind == "index" else TORCH_DTYPES[dtype])
        for spec in get_entry(name).inputs(shapes).values()
    ]


def regional_parts(plan, dtype: str) -> list[tuple[str, Callable[[], nn.Module], list[torch.Tensor]]]:
    """A decoder's regional plan (reference.regional.regional_plan) as the three parts every
    PyTorch path lowers, (label, module factory, example inputs): prologue(ids) -> x, one
    block(x, *caches) and epilogue(x) -> logits (reference.ir.compose.compose_regional's contract)."""
    from pytorch_side.layers import Epilogue, Prologue

    cfg, dt = plan.cfg, TORCH_DTYPES[dtype]
    ids = torch.empty((plan.batch, plan.tokens), dtype=torch.int32)
    x = torch.empty((plan.batch, plan.tokens, cfg.d_model), dtype=dt)
    # two tensors, not one twice: torch.export makes an input given twice one placeholder, and the
    # block would then write its keys and values into one buffer (neither update in place)
    caches = [torch.empty(plan.cache_shape(), dtype=dt) for _ in range(2)] if plan.cache_shape() else []
    return [
        ("prologue", lambda: Prologue(cfg, dt, plan.past), [ids]),
        ("block", lambda: Block(cfg, dt), [x, *caches]),
        ("epilogue", lambda: Epilogue(cfg, dt), [x]),
    ]
