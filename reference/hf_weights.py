"""A Hugging Face checkpoint's weights under our canonical names (reference/catalogue/transformer.py),
ready for `pytorch_side.load_weights`, `jax_side.load_weights` and the float64 reference.

Name rules (HF name -> canonical; {i} a layer, {e} an expert). Llama, Mistral, Qwen2, Qwen3 and Mixtral
drop the `model.` prefix, GPT-2 the `transformer.` prefix (hub files of GPT-2 have none):

    llama, mistral, qwen2, qwen3, mixtral
        embed_tokens.weight                         -> embed.weight
        layers.{i}.input_layernorm.weight           -> layers.{i}.attn_norm.weight
        layers.{i}.self_attn.{q,k,v,o}_proj.*       -> layers.{i}.attn.{q,k,v,o}_proj.*
        layers.{i}.self_attn.{q,k}_norm.weight      -> layers.{i}.attn.{q,k}_norm.weight (qwen3)
        layers.{i}.post_attention_layernorm.weight  -> layers.{i}.mlp_norm.weight
        layers.{i}.mlp.{gate,up,down}_proj.weight   -> layers.{i}.mlp.{gate,up,down}_proj.weight
        norm.weight, lm_head.weight                 -> norm.weight, lm_head.weight (absent when tied)
    mixtral's experts, in either of two layouts
        transformers 5 (fused):
            layers.{i}.mlp.gate.weight [E, D]       -> layers.{i}.mlp.router.weight
            mlp.experts.gate_up_proj [E, 2F, D]     -> mlp.experts.{e}.gate_proj.weight = [e, :F],
                                                       mlp.experts.{e}.up_proj.weight   = [e, F:]
            mlp.experts.down_proj [E, D, F]         -> mlp.experts.{e}.down_proj.weight = [e]
        hub files (one tensor per expert):
            block_sparse_moe.gate.weight            -> mlp.router.weight
            block_sparse_moe.experts.{e}.w1/w3/w2   -> mlp.experts.{e}.gate_proj/up_proj/down_proj
    gpt2 (its Conv1D stores weights [in, out]: each is transposed to Linear's [out, in])
        wte, wpe, ln_f                              -> embed, pos_embed, norm
        h.{i}.ln_1, h.{i}.ln_2                      -> layers.{i}.attn_norm, layers.{i}.mlp_norm
        h.{i}.attn.c_attn [D, 3D], bias [3D]        -> transposed, split in three along the rows:
                                                       attn.q_proj, attn.k_proj, attn.v_proj
        h.{i}.attn.c_proj, mlp.c_fc, mlp.c_proj     -> attn.o_proj, mlp.fc, mlp.proj (transposed)

Tensors that are not weights are dropped: RoPE's `inv_freq` buffers and GPT-2's causal masks
(`attn.bias`, `attn.masked_bias`), and `lm_head.weight` of a tied model (a copy of the table).
Anything else unmatched is refused by name, as is a weight the config needs and the files lack,
or one of the wrong shape.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from reference.catalogue.transformer import decoder_weights
from reference.dtypes import numpy_dtype
from reference.errors import LandscapeError
from reference.hf_config import load_config_file
from reference.models import ModelConfig, get_model

# Non-weights in HF state dicts and hub files: rotary frequencies, GPT-2's causal-mask buffers.
DROPPED = re.compile(r"(^|\.)(rotary_emb\.inv_freq|attn\.bias|attn\.masked_bias)$")
LLAMA_RENAMES = (
    (r"^embed_tokens\.", "embed."),
    (r"\.input_layernorm\.", ".attn_norm."),
    (r"\.post_attention_layernorm\.", ".mlp_norm."),
    (r"\.self_attn\.", ".attn."),
    (r"\.block_sparse_moe\.gate\.", ".mlp.router."),
    (r"\.mlp\.gate\.weight$", ".mlp.router.weight"),
    (r"\.block_sparse_moe\.experts\.(\d+)\.w1\.", r".mlp.experts.\1.gate_proj."),
    (r"\.block_sparse_moe\.experts\.(\d+)\.w3\.", r".mlp.experts.\1.up_proj."),
    (r"\.block_sparse_moe\.experts\.(\d+)\.w2\.", r".mlp.experts.\1.down_proj."),
)
GPT2_RENAMES = (
    (r"^wte\.", "embed."),
    (r"^wpe\.", "pos_embed."),
    (r"^ln_f\.", "norm."),
    (r"^h\.(\d+)\.ln_1\.", r"layers.\1.attn_norm."),
    (r"^h\.(\d+)\.ln_2\.", r"layers.\1.mlp_norm."),
    (r"^h\.(\d+)\.attn\.c_proj\.", r"layers.\1.attn.o_proj."),
    (r"^h\.(\d+)\.mlp\.c_fc\.", r"layers.\1.mlp.fc."),
    (r"^h\.(\d+)\.mlp\.c_proj\.", r"layers.\1.mlp.proj."),
)
SHOWN = 4  # names listed in an error before "and N more"


class BadCheckpoint(LandscapeError):
    """Checkpoint files that do not hold the config's weights: a missing, unexpected or
    ill-shaped tensor, or no safetensors file where one was expected."""


def _listed(names) -> str:
    names = sorted(names)
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more


def _kept(name: str, layers: int) -> bool:
    """Whether a canonical weight belongs to the first `layers` blocks or around them."""
    return not name.startswith("layers.") or int(name.split(".")[1]) < layers


def _rename(name: str, rules) -> str:
    for pattern, repl in rules:
        name = re.sub(pattern, repl, name)
    return name


def _gpt2_tensors(name: str, array: np.ndarray, cfg: ModelConfig) -> Iterator[tuple[str, np.ndarray]]:
    m = re.fullmatch(r"h\.(\d+)\.attn\.c_attn\.(weight|bias)", name)
    if m:  # fused q, k, v: Conv1D [D, 3D] -> [3D, D], then three row blocks
        layer, leaf = m.groups()
        fused = array.T if leaf == "weight" else array
        if fused.shape[0] != 3 * cfg.n_heads * cfg.head_dim:
            raise BadCheckpoint(
                f"{cfg.name}: {name} has shape {array.shape}; a GPT-2 with d_model {cfg.d_model} has "
                f"{(cfg.d_model, 3 * cfg.d_model) if leaf == 'weight' else (3 * cfg.d_model,)}"
            )
        for proj, part in zip("qkv", np.split(fused, 3, axis=0)):
            yield f"layers.{layer}.attn.{proj}_proj.{leaf}", np.ascontiguousarray(part)
        return
    out = _rename(name, GPT2_RENAMES)
    conv1d = re.search(r"\.(o_proj|fc|proj)\.weight$", out)
    yield out, np.ascontiguousarray(array.T) if conv1d else array


def _llama_tensors(name: str, array: np.ndarray, cfg: ModelConfig) -> Iterator[tuple[str, np.ndarray]]:
    m = re.fullmatch(r"layers\.(\d+)\.mlp\.experts\.(gate_up_proj|down_proj)", name)
    if m:  # transformers 5's fused experts: [E, 2F, D] (gate rows, then up rows) and [E, D, F]
        layer, fused = m.groups()
        want = (
            (cfg.n_experts, 2 * cfg.d_ff, cfg.d_model)
            if fused == "gate_up_proj"
            else (cfg.n_experts, cfg.d_model, cfg.d_ff)
        )
        if array.shape != want:
            raise BadCheckpoint(f"{cfg.name}: {name} has shape {array.shape}; the config's experts need {want}")
        for e in range(cfg.n_experts):
            prefix = f"layers.{layer}.mlp.experts.{e}."
            if fused == "down_proj":
                yield prefix + "down_proj.weight", np.ascontiguousarray(array[e])
            else:
                yield prefix + "gate_proj.weight", np.ascontiguousarray(array[e, : cfg.d_ff])
                yield prefix + "up_proj.weight", np.ascontiguousarray(array[e, cfg.d_ff :])
        return
    yield _rename(name, LLAMA_RENAMES), array


def canonical_weights(
    cfg: ModelConfig, tensors: Mapping[str, np.ndarray], layers: int | None = None
) -> dict[str, np.ndarray]:
    """The HF tensors of a model with config `cfg` under canonical names and layouts (module doc).

    Args:
        tensors: an HF state dict or hub files' tensors, as numpy arrays (any float dtype; kept).
        layers: keep only the first `layers` blocks (a shorter stack, e.g. `--shape layers=2`);
            None keeps all of them.

    Raises:
        BadCheckpoint: a tensor the rules do not place, a weight the config needs and the
            tensors lack, or one whose shape differs from the config's; the message names them.
    """
    layers = cfg.n_layers if layers is None else layers
    expected = decoder_weights(cfg)
    strip = "transformer." if cfg.style == "gpt2" else "model."
    convert = _gpt2_tensors if cfg.style == "gpt2" else _llama_tensors
    out: dict[str, np.ndarray] = {}
    unexpected = []
    for hf_name, array in tensors.items():
        name = hf_name.removeprefix(strip)
        if DROPPED.search(name) or (cfg.tie_embeddings and name == "lm_head.weight"):
            continue
        for canon, value in convert(name, np.asarray(array), cfg):
            if canon not in expected:
                unexpected.append(hf_name)
            elif _kept(canon, layers):
                out[canon] = value
    if unexpected:
        raise BadCheckpoint(
            f"{cfg.name}: tensors the {cfg.style} rules do not place: {_listed(unexpected)} "
            "(reference/hf_weights.py lists the names it reads)"
        )
    wanted = {k: s for k, s in expected.items() if _kept(k, layers)}
    missing = set(wanted) - set(out)
    if missing:
        raise BadCheckpoint(
            f"{cfg.name}: the checkpoint lacks {_listed(missing)} ({len(missing)} of {len(wanted)} weights)"
        )
    wrong = [
        f"{k} {out[k].shape} (the config needs {tuple(s.shape)})"
        for k, s in wanted.items()
        if out[k].shape != tuple(s.shape)
    ]
    if wrong:
        raise BadCheckpoint(f"{cfg.name}: shapes differ from the config: {_listed(wrong)}")
    return out


def safetensors_files(path: str | Path) -> list[Path]:
    """The safetensors files of a checkpoint: the file itself, the shards an index
    (model.safetensors.index.json) names, or every *.safetensors file of a folder.

    Raises:
        BadCheckpoint: no such file, or a folder with none.
    """
    p = Path(path)
    if p.is_file():
        return [p]
    index = p / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, AttributeError) as err:
            raise BadCheckpoint(
                f"{index}: not a safetensors index (a JSON object with a weight_map; {type(err).__name__})"
            ) from err
        missing = [s for s in shards if not (p / s).is_file()]
        if missing:
            raise BadCheckpoint(f"{index}: names shards the folder lacks: {_listed(missing)}")
        return [p / s for s in shards]
    files = sorted(p.glob("*.safetensors")) if p.is_dir() else []
    if not files:
        raise BadCheckpoint(f"{path}: no safetensors file; give a .safetensors file or a folder holding them")
    return files


def read_safetensors(path: str | Path) -> dict[str, np.ndarray]:
    """Every tensor of a checkpoint's safetensors files as numpy (bfloat16 as ml_dtypes')."""
    try:
        from safetensors import SafetensorError, safe_open
    except ImportError as err:  # pragma: no cover - the [hf] extra
        raise BadCheckpoint("reading safetensors needs the package: pip install -e '.[hf]'") from err
    out = {}
    for file in safetensors_files(path):
        try:
            with safe_open(str(file), framework="numpy") as f:
                for key in f.keys():
                    out[key] = f.get_tensor(key)
        except (OSError, ValueError, RuntimeError, SafetensorError) as err:
            raise BadCheckpoint(
                f"{file}: not a safetensors file ({type(err).__name__}: {str(err).splitlines()[0]})"
            ) from err
    return out


def cast_weights(weights: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    """The weights in a run's dtype ("float32", "bfloat16", ...); rounding once, from what the file holds."""
    target = numpy_dtype(dtype)
    return {k: v if v.dtype == target else v.astype(np.float32).astype(target) for k, v in weights.items()}


def load_checkpoint(folder: str | Path, layers: int | None = None) -> tuple[ModelConfig, dict[str, np.ndarray]]:
    """A Hugging Face model folder (config.json beside its safetensors files) as our config and
    canonical weights, in the dtype the files hold.

    Raises:
        BadModelFile: the config (reference/hf_config.py).
        BadCheckpoint: the files (`canonical_weights`, `safetensors_files`).
    """
    cfg = load_config_file(str(Path(folder) / "config.json"))
    return cfg, canonical_weights(cfg, read_safetensors(folder), layers)


def checkpoint_weights(model: str, path: str | Path, layers: int | None = None) -> dict[str, np.ndarray]:
    """A checkpoint's weights (a safetensors file or folder) for a registered model: a published
    one or a config.json's (reference.catalogue.resolve_model), its first `layers` blocks.

    Raises:
        UnknownName: `model` is not a model config.
        BadCheckpoint: the files do not hold the model's weights.
    """
    return canonical_weights(get_model(model), read_safetensors(path), layers)
