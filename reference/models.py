"""Published model configurations, loaded strictly from `models.toml`."""

from __future__ import annotations

import functools
import tomllib
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path

from reference.errors import BeyondContext, LandscapeError, UnknownName

MODELS_FILE = Path(__file__).with_name("models.toml")


class BadModelFile(LandscapeError):
    """models.toml has a missing, unknown or ill-typed field."""


@dataclass(frozen=True)
class ModelConfig:
    """One decoder-only transformer's architecture (no weights)."""

    name: str
    source: str
    style: str  # "llama" or "gpt2"
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_ff: int
    vocab: int
    norm_eps: float
    max_positions: int
    rope_theta: float = 10000.0
    tie_embeddings: bool = False
    qkv_bias: bool = False
    qk_norm: bool = False  # Qwen3: an RMSNorm over each head's query and key (head_dim wide), before RoPE
    sliding_window: int = 0  # Mistral-7B-v0.1: each query sees its last `sliding_window` positions (0: all)
    n_experts: int = 0  # 0: dense MLP
    top_k: int = 0
    head_dim: int = 0  # 0: d_model // n_heads
    ffn_multiple_of: int = 0
    ffn_dim_multiplier: float = 1.0
    rope_scaling: dict | None = field(default=None, compare=False, hash=False)

    def __post_init__(self):
        if self.head_dim == 0:
            object.__setattr__(self, "head_dim", self.d_model // self.n_heads)

    @property
    def mlp_kind(self) -> str:
        if self.n_experts:
            return "moe"
        return "gelu" if self.style == "gpt2" else "swiglu"

    @property
    def norm(self) -> str:
        return "layernorm" if self.style == "gpt2" else "rmsnorm"

    @property
    def uses_rope(self) -> bool:
        return self.style == "llama"

    def kv_cache_bytes(self, batch: int, tokens: int, element_bytes: int) -> int:
        """Keys and values of every layer: 2 * layers * batch * tokens * kv_heads * head_dim * bytes.

        Worked number: llama-3.1-8b, one sequence of 2304 tokens in bf16:
        2 * 32 * 1 * 2304 * 8 * 128 * 2 = 301,989,888 bytes.
        """
        return 2 * self.n_layers * batch * tokens * self.n_kv_heads * self.head_dim * element_bytes


@functools.cache
def load_models(path: Path = MODELS_FILE) -> dict[str, ModelConfig]:
    """Read every model of the file into frozen configs.

    Raises:
        BadModelFile: a field is unknown, missing or of the wrong type; the message names
            the file, the model and the field.
    """
    raw = tomllib.loads(path.read_text())
    raw.pop("schema", None)
    known = {f.name: f for f in fields(ModelConfig)}
    required = [f.name for f in fields(ModelConfig) if f.default is MISSING and f.name != "name"]
    out = {}
    for name, table in raw.items():
        for key in table:
            if key not in known or key == "name":
                raise BadModelFile(f"{path}: model {name!r}: unknown field {key!r}; valid: {', '.join(sorted(known))}")
        for key in required:
            if key not in table:
                raise BadModelFile(f"{path}: model {name!r}: missing field {key!r}")
        out[name] = ModelConfig(name=name, **table)
    return out


def get_model(name: str) -> ModelConfig:
    models = load_models()
    if name not in models:
        raise UnknownName("model", name, models)
    return models[name]


def context_check(name: str, tokens: int, given: str, knob: str, allow: bool = False) -> str | None:
    """Check `tokens` (prompt + generated, or a cache length) against the model's context length,
    `max_positions` (max_position_embeddings in its published config; models.toml links it).

    Returns None when they fit; with `allow` (`--allow-beyond-context`), a note for the output saying
    the answer explores a length the model was not trained for.

    Raises:
        BeyondContext: beyond the context without `allow`, or beyond a table of learned positions
            (GPT-2), which nothing can extend. `given` and `knob` word the message.
    """
    cfg = get_model(name)
    if tokens <= cfg.max_positions:
        return None
    learned = not cfg.uses_rope
    if learned or not allow:
        raise BeyondContext(name, given, cfg.max_positions, knob, learned=learned)
    return (
        f"beyond context: {given} exceeds {name}'s context of {cfg.max_positions:,} tokens; "
        f"--allow-beyond-context explores a length the model was not trained for"
    )


def derived_ffn_width(d_model: int, multiple_of: int, ffn_dim_multiplier: float) -> int:
    """Meta's Llama FFN width: int(2 * 4d / 3), times the multiplier, rounded up to multiple_of.

    Worked number: Llama 3.1 8B, d=4096, multiplier 1.3, multiple_of 1024:
    int(2*16384/3)=10922, int(10922*1.3)=14198, ceil to 1024 -> 14336.
    """
    hidden = int(2 * 4 * d_model / 3)
    hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)
