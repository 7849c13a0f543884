"""A Hugging Face `config.json` as one of our model configs (reference/models.py ModelConfig).

Supported `model_type`s and what each field becomes:
    llama, mistral, qwen2, qwen3, mixtral (style "llama": RMSNorm, GQA with RoPE, SwiGLU; head_dim
        even, as RoPE pairs; qwen3's head_dim defaults to 128, as transformers' Qwen3Config's does)
        hidden_size -> d_model, num_hidden_layers -> n_layers, num_attention_heads -> n_heads,
        num_key_value_heads -> n_kv_heads (default: n_heads), intermediate_size -> d_ff,
        vocab_size -> vocab, rms_norm_eps -> norm_eps, max_position_embeddings -> max_positions,
        rope_theta -> rope_theta (or rope_parameters.rope_theta, transformers 5), head_dim,
        tie_word_embeddings -> tie_embeddings, rope_scaling (or rope_parameters) of rope_type
        "llama3" -> rope_scaling; qwen2: q, k and v biases (qkv_bias); qwen3: an RMSNorm over
        each head's q and k before RoPE (qk_norm, rms_norm_eps), no biases; mixtral:
        num_local_experts -> n_experts, num_experts_per_tok -> top_k
    gpt2 (style "gpt2": LayerNorm, MHA with biases, tanh-GELU, learned positions)
        n_embd, n_layer, n_head, n_inner (null: 4 * n_embd), vocab_size, layer_norm_epsilon,
        n_positions, tie_word_embeddings (default true)
A sliding window (Mistral's `sliding_window`; Qwen's with use_sliding_window) becomes
sliding_window when every layer has it. A field whose value changes the architecture in a way the
styles do not model is refused by name, with the value that would be accepted: sliding windows on
some layers only, an o_proj or MLP bias
(attention_bias, mlp_bias), an activation other than the style's, a RoPE scaling other than
llama3's. Fields that do not change the computation (token ids, torch_dtype, architectures, ...)
are not read.

A hostile or broken file is refused, naming the field and what is accepted, never a traceback and
never numbers from nonsense: sizes past LIMITS, heads that do not divide the width (unless
head_dim is given), KV heads that do not divide the heads, more experts per token than experts,
a NaN, infinite or non-positive eps or theta, rope_scaling or rope_parameters that are not
objects, llama3 scaling factors out of order, JSON nested past Python's recursion limit.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from reference.models import BadModelFile, ModelConfig

LLAMA_TYPES = ("llama", "mistral", "qwen2", "qwen3", "mixtral")
QWEN_TYPES = ("qwen2", "qwen3")  # their configs carry sliding_window, used only with use_sliding_window
QWEN_MAX_WINDOW_LAYERS = 28  # transformers' Qwen2Config and Qwen3Config default for max_window_layers
QWEN3_HEAD_DIM = {"qwen3": 128}  # transformers' Qwen3Config default head_dim (not hidden / heads)
SUPPORTED = (*LLAMA_TYPES, "gpt2")
ROPE_TYPES = ("default", "llama3")
LLAMA3_KEYS = ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")
# Plausibility limits, not hardware limits: each an order of magnitude or more past the largest
# published model's (Llama-3.1-405B: width 16,384, d_ff 53,248, 126 layers, 128 heads; vocabularies
# of 256K; contexts of 10M tokens), so that a typo or a hostile 1e30 is refused before it is costed.
LIMITS = {
    "width": 1 << 20,
    "layers": 1 << 14,
    "heads": 1 << 14,
    "vocab": 1 << 24,
    "positions": 1 << 30,
    "experts": 1 << 16,
}


def model_name(path: str) -> str:
    """The name a config file's model goes by: the path as given (unique, and what the user typed)."""
    return str(path)


def read_config(path: str) -> dict:
    """The JSON object of a config file.

    Raises:
        BadModelFile: not a readable file, not JSON, or not an object.
    """
    p = Path(path)
    try:
        is_file = p.is_file()
    except (OSError, ValueError):  # a name the OS cannot stat: too long, a NUL in it
        is_file = False
    if not is_file:
        raise BadModelFile(
            f"{str(path)[:200]}: not a file; give a Hugging Face config.json (or a published model's name)"
        )
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise BadModelFile(f"{path}: not a JSON config ({type(err).__name__}: {str(err).splitlines()[0]})") from err
    except RecursionError as err:  # arrays or objects nested thousands deep
        raise BadModelFile(
            f"{path}: not a JSON config (nested too deep to read); a config.json is one flat object"
        ) from err
    except ValueError as err:  # an integer of thousands of digits (Python's int_max_str_digits)
        raise BadModelFile(f"{path}: not a JSON config (a number too long to read: {str(err)[:80]})") from err
    if not isinstance(raw, dict):
        raise BadModelFile(f"{path}: a config.json holds one JSON object, got {type(raw).__name__}")
    return raw


def config_from_hf(raw: dict, name: str, source: str = "") -> ModelConfig:
    """A ModelConfig from a Hugging Face config's fields (module doc).

    Raises:
        BadModelFile: an unsupported model_type, a missing or ill-typed field, or a field whose
            value the styles do not model; the message names the field and what is accepted.
    """
    kind = raw.get("model_type")
    if kind not in SUPPORTED:
        raise BadModelFile(f"{name}: model_type {kind!r} is not supported; valid: {', '.join(SUPPORTED)}")

    def get(key: str, typ=int, default=None, limit: str | None = None):
        value = raw.get(key, default)
        if value is None:
            raise BadModelFile(f"{name}: missing field {key!r} (a {kind} config has it)")
        ok = isinstance(value, typ) and not isinstance(value, bool) if typ is not bool else isinstance(value, bool)
        if typ is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok or (typ in (int, float) and not (value > 0 and math.isfinite(value))):
            raise BadModelFile(
                f"{name}: field {key!r} is {value!r}; expected a positive {typ.__name__}"
                if typ is not bool
                else f"{name}: field {key!r} is {value!r}; expected true or false"
            )
        if limit is not None and value > LIMITS[limit]:
            raise BadModelFile(
                f"{name}: field {key!r} is {value:,}; expected at most {LIMITS[limit]:,} (a plausibility limit)"
            )
        return value

    def number(key: str, value, default: float) -> float:
        """A positive finite float field (JSON numbers only: a string, NaN or infinity is refused)."""
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value > 0 and math.isfinite(value)):
            raise BadModelFile(f"{name}: field {key!r} is {value!r}; expected a positive finite number")
        return float(value)

    def obj(key: str) -> dict:
        value = raw.get(key)
        if value is not None and not isinstance(value, dict):
            raise BadModelFile(f"{name}: field {key!r} is {value!r:.80}; expected an object (or null)")
        return value or {}

    def refuse(key: str, value, accepted: str):
        raise BadModelFile(f"{name}: field {key!r} = {value!r} is not modelled; accepted: {accepted}")

    def divides(part: str, whole: str, a: int, b: int, fix: str):
        if b % a:
            raise BadModelFile(f"{name}: {part} = {a} does not divide {whole} = {b}; {fix}")

    source = source or f"a Hugging Face config ({name})"
    if kind == "gpt2":
        if raw.get("activation_function", "gelu_new") != "gelu_new":
            refuse("activation_function", raw["activation_function"], '"gelu_new" (the tanh GELU)')
        d, heads = get("n_embd", limit="width"), get("n_head", limit="heads")
        divides("n_head", "n_embd", heads, d, "GPT-2's heads are n_embd / n_head wide")
        inner = raw.get("n_inner")
        return ModelConfig(
            name=name,
            source=source,
            style="gpt2",
            d_model=d,
            n_layers=get("n_layer", limit="layers"),
            n_heads=heads,
            n_kv_heads=heads,
            d_ff=get("n_inner", limit="width") if inner is not None else 4 * d,
            vocab=get("vocab_size", limit="vocab"),
            norm_eps=get("layer_norm_epsilon", float, 1e-5),
            max_positions=get("n_positions", limit="positions"),
            tie_embeddings=get("tie_word_embeddings", bool, True),
        )
    if raw.get("hidden_act", "silu") != "silu":
        refuse("hidden_act", raw["hidden_act"], '"silu" (SwiGLU)')
    for key in ("attention_bias", "mlp_bias"):
        if raw.get(key):
            refuse(key, raw[key], "false (only Qwen2's q, k and v biases are modelled)")
    window = sliding_window(raw, kind, name)
    rope = obj("rope_parameters")
    positions = get("max_position_embeddings", limit="positions")
    scaling = obj("rope_scaling") or (rope if rope.get("rope_type", "default") != "default" else None)
    if scaling is not None:
        rope_type = scaling.get("rope_type", scaling.get("type"))
        if rope_type not in ROPE_TYPES:
            refuse("rope_scaling.rope_type", rope_type, ", ".join(repr(t) for t in ROPE_TYPES))
        scaling = (
            None
            if rope_type == "default"
            else {"rope_type": "llama3", **{k: scaling[k] for k in LLAMA3_KEYS if k in scaling}}
        )
        missing = [k for k in LLAMA3_KEYS if scaling is not None and k not in scaling]
        if missing:
            raise BadModelFile(f"{name}: rope_scaling of type llama3 lacks {', '.join(missing)}")
        if scaling is not None:
            factors = {k: number(f"rope_scaling.{k}", scaling[k], 0.0) for k in LLAMA3_KEYS}
            original = scaling["original_max_position_embeddings"]
            if not isinstance(original, int) or isinstance(original, bool) or original > positions:
                raise BadModelFile(
                    f"{name}: field 'rope_scaling.original_max_position_embeddings' is {original!r}; "
                    f"expected an integer at most max_position_embeddings ({positions:,})"
                )
            if factors["factor"] < 1 or factors["high_freq_factor"] <= factors["low_freq_factor"]:
                raise BadModelFile(
                    f"{name}: rope_scaling of type llama3 needs factor >= 1 and high_freq_factor > "
                    f"low_freq_factor; got {factors['factor']:g}, {factors['high_freq_factor']:g} and "
                    f"{factors['low_freq_factor']:g}"
                )
    theta = number("rope_theta", rope.get("rope_theta", raw.get("rope_theta")), 10000.0)
    d, heads = get("hidden_size", limit="width"), get("num_attention_heads", limit="heads")
    kv_heads = get("num_key_value_heads", int, heads, limit="heads")
    head_dim = get("head_dim", limit="width") if raw.get("head_dim") is not None else QWEN3_HEAD_DIM.get(kind, 0)
    if not head_dim:
        divides("num_attention_heads", "hidden_size", heads, d, "give head_dim, or heads that divide the width")
    if (head_dim or d // heads) % 2:
        raise BadModelFile(
            f"{name}: head_dim = {head_dim or d // heads} is odd; RoPE rotates pairs of a head's dimensions: "
            "expected an even head_dim"
        )
    divides(
        "num_key_value_heads",
        "num_attention_heads",
        kv_heads,
        heads,
        "each KV head serves a whole group of query heads",
    )
    experts = {}
    if kind == "mixtral":
        experts = {
            "n_experts": get("num_local_experts", limit="experts"),
            "top_k": get("num_experts_per_tok", limit="experts"),
        }
        if experts["top_k"] > experts["n_experts"]:
            raise BadModelFile(
                f"{name}: num_experts_per_tok = {experts['top_k']} is more than num_local_experts = "
                f"{experts['n_experts']}; expected 1 to {experts['n_experts']}"
            )
    return ModelConfig(
        name=name,
        source=source,
        style="llama",
        d_model=d,
        n_layers=get("num_hidden_layers", limit="layers"),
        n_heads=heads,
        n_kv_heads=kv_heads,
        d_ff=get("intermediate_size", limit="width"),
        vocab=get("vocab_size", limit="vocab"),
        norm_eps=get("rms_norm_eps", float, 1e-6),
        max_positions=positions,
        rope_theta=theta,
        tie_embeddings=get("tie_word_embeddings", bool, False),
        qkv_bias=kind == "qwen2",
        qk_norm=kind == "qwen3",
        sliding_window=window,
        head_dim=head_dim,
        rope_scaling=scaling,
        **experts,
    )


def sliding_window(raw: dict, kind: str, name: str) -> int:
    """The window every layer's attention slides (0: full attention), or BadModelFile where the
    layers differ (a per-layer pattern is not modelled). Mistral's `sliding_window` applies to
    every layer; Qwen's only with use_sliding_window, to the layers from max_window_layers on;
    transformers 5's `layer_types` names each layer's kind."""
    window = raw.get("sliding_window")
    if window is None or (kind in QWEN_TYPES and not raw.get("use_sliding_window")):
        return 0
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise BadModelFile(f"{name}: field 'sliding_window' is {window!r}; expected a positive integer or null")
    if kind in QWEN_TYPES:  # layers from max_window_layers on slide, as transformers builds them
        first = raw.get("max_window_layers", QWEN_MAX_WINDOW_LAYERS)
        layers = raw.get("num_hidden_layers")
        if isinstance(first, int) and not isinstance(first, bool) and isinstance(layers, int) and first >= layers:
            return 0  # no layer slides
        if first != 0:
            raise BadModelFile(
                f"{name}: field 'max_window_layers' = {first!r} (transformers' default is "
                f"{QWEN_MAX_WINDOW_LAYERS}) with use_sliding_window windows some layers only, which is not "
                "modelled; accepted: 0 (every layer windowed), at least num_hidden_layers (none), or "
                "use_sliding_window false"
            )
    kinds = raw.get("layer_types")
    if kinds is not None:
        if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
            raise BadModelFile(f"{name}: field 'layer_types' is {kinds!r:.80}; expected a list of layer kinds")
        if set(kinds) - {"sliding_attention"}:
            raise BadModelFile(
                f"{name}: field 'layer_types' mixes {', '.join(sorted(set(kinds)))}: layers with different "
                "attention are not modelled; accepted: every layer sliding_attention, or sliding_window null"
            )
    return window


def load_config_file(path: str) -> ModelConfig:
    """The model of a Hugging Face config.json file, named by its path (`model_name`)."""
    return config_from_hf(read_config(path), model_name(path), f"Hugging Face config file {path}")
