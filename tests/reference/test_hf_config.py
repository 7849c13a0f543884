"""A Hugging Face config.json becomes our model config: the published configs of five families
(fields as their config.json files on the Hub give them) reproduce the models.toml entries
written by hand from the same files, and every field the styles do not model is refused by name."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from reference.hf_config import config_from_hf
from reference.models import BadModelFile, get_model

LLAMA_32_1B = {  # meta-llama/Llama-3.2-1B config.json (its architecture fields)
    "model_type": "llama",
    "hidden_size": 2048,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "intermediate_size": 8192,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0,
    "tie_word_embeddings": True,
    "hidden_act": "silu",
    "attention_bias": False,
    "mlp_bias": False,
    "torch_dtype": "bfloat16",
    "bos_token_id": 128000,
    "rope_scaling": {
        "factor": 32.0,
        "high_freq_factor": 4.0,
        "low_freq_factor": 1.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
}
QWEN25_05B = {  # Qwen/Qwen2.5-0.5B: q, k, v biases; a sliding window it does not use
    "model_type": "qwen2",
    "hidden_size": 896,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "intermediate_size": 4864,
    "vocab_size": 151936,
    "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "tie_word_embeddings": True,
    "hidden_act": "silu",
    "sliding_window": 32768,
    "use_sliding_window": False,
    "max_window_layers": 24,
}
QWEN3_8B = {  # Qwen/Qwen3-8B: QK-norm, head_dim given, no biases, an unused sliding window
    "model_type": "qwen3",
    "hidden_size": 4096,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 12288,
    "vocab_size": 151936,
    "max_position_embeddings": 40960,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000,
    "rope_scaling": None,
    "tie_word_embeddings": False,
    "hidden_act": "silu",
    "attention_bias": False,
    "sliding_window": None,
    "use_sliding_window": False,
    "max_window_layers": 36,
}
GPT2 = {
    "model_type": "gpt2",
    "n_embd": 768,
    "n_layer": 12,
    "n_head": 12,
    "n_inner": None,
    "vocab_size": 50257,
    "layer_norm_epsilon": 1e-05,
    "n_positions": 1024,
    "activation_function": "gelu_new",
}
MIXTRAL = {  # mistralai/Mixtral-8x7B-v0.1
    "model_type": "mixtral",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 32000,
    "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-05,
    "rope_theta": 1000000.0,
    "tie_word_embeddings": False,
    "hidden_act": "silu",
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "sliding_window": None,
}
ARCHITECTURE = (
    "style",
    "d_model",
    "n_layers",
    "n_heads",
    "n_kv_heads",
    "d_ff",
    "vocab",
    "norm_eps",
    "max_positions",
    "rope_theta",
    "tie_embeddings",
    "qkv_bias",
    "qk_norm",
    "n_experts",
    "top_k",
    "head_dim",
    "rope_scaling",
)


def architecture(cfg):
    return {k: getattr(cfg, k) for k in ARCHITECTURE}


@pytest.mark.parametrize(
    "raw, published",
    [
        (LLAMA_32_1B, "llama-3.2-1b"),
        (QWEN25_05B, "qwen2.5-0.5b"),
        (QWEN3_8B, "qwen3-8b"),
        (GPT2, "gpt2-small"),
        (MIXTRAL, "mixtral-8x7b"),
    ],
)
def test_a_published_config_json_gives_the_hand_written_entry(raw, published):
    assert architecture(config_from_hf(raw, "mine")) == architecture(get_model(published))


def test_transformers_5s_rope_parameters_carry_theta_and_scaling():
    raw = {k: v for k, v in LLAMA_32_1B.items() if k not in ("rope_theta", "rope_scaling")}
    raw["rope_parameters"] = {**LLAMA_32_1B["rope_scaling"], "rope_theta": 500000.0}
    assert architecture(config_from_hf(raw, "mine")) == architecture(get_model("llama-3.2-1b"))
    default = {**raw, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}
    cfg = config_from_hf(default, "mine")
    assert cfg.rope_scaling is None and cfg.rope_theta == 10000.0


@pytest.mark.parametrize(
    "change, needle",
    [
        ({"model_type": "bert"}, "valid: llama, mistral, qwen2, qwen3, mixtral, gpt2"),
        ({"model_type": "mistral", "sliding_window": 0}, "'sliding_window' is 0; expected a positive integer"),
        ({"model_type": "mistral", "sliding_window": "4096"}, "'sliding_window' is '4096'"),
        (
            {"use_sliding_window": True, "max_window_layers": 12},
            "'max_window_layers' = 12 (transformers' default is 28)",
        ),
        ({"use_sliding_window": True, "max_window_layers": None}, "'max_window_layers' = None"),
        ({"head_dim": 63}, "head_dim = 63 is odd"),
        ({"hidden_size": 910, "num_attention_heads": 14}, "head_dim = 65 is odd"),
        (
            {"model_type": "mistral", "sliding_window": 8, "layer_types": ["sliding_attention", "full_attention"]},
            "mixes full_attention, sliding_attention",
        ),
        ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, "'rope_scaling.rope_type' = 'yarn'"),
        ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, "lacks low_freq_factor"),
        ({"attention_bias": True}, "'attention_bias' = True"),
        ({"mlp_bias": True}, "'mlp_bias'"),
        ({"hidden_act": "gelu"}, 'accepted: "silu"'),
        ({"hidden_size": None}, "missing field 'hidden_size'"),
        ({"hidden_size": -4}, "expected a positive int"),
        ({"num_attention_heads": "14"}, "'num_attention_heads' is '14'"),
        ({"tie_word_embeddings": "yes"}, "expected true or false"),
    ],
)
def test_what_the_styles_do_not_model_is_refused_by_field(change, needle):
    with pytest.raises(BadModelFile) as info:
        config_from_hf({**QWEN25_05B, **change}, "mine")
    assert needle in str(info.value)


def test_a_sliding_window_on_every_layer_is_modelled_and_none_is_full_attention():
    """Mistral-7B-v0.1's 4096 on every layer; Qwen's only with use_sliding_window (and from layer 0)."""
    mistral = {**QWEN25_05B, "model_type": "mistral", "sliding_window": 4096}
    assert config_from_hf(mistral, "m").sliding_window == 4096
    assert config_from_hf({**mistral, "sliding_window": None}, "m").sliding_window == 0
    assert config_from_hf(QWEN25_05B, "q").sliding_window == 0  # its window is unused
    every = {**QWEN25_05B, "use_sliding_window": True, "max_window_layers": 0}
    assert config_from_hf(every, "q").sliding_window == 32768
    none = {**QWEN25_05B, "use_sliding_window": True, "max_window_layers": 24}  # from layer 24 of 24: none slides
    assert config_from_hf(none, "q").sliding_window == 0


def test_qwen3s_head_dim_defaults_to_transformers_128_not_the_width_over_the_heads():
    raw = {k: v for k, v in QWEN3_8B.items() if k != "head_dim"}
    assert config_from_hf({**raw, "hidden_size": 5120, "num_attention_heads": 64}, "q").head_dim == 128


def test_a_number_too_long_to_read_is_refused_in_one_line(tmp_path):
    from reference.hf_config import load_config_file

    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama", "hidden_size": 1' + "0" * 5000 + "}")
    with pytest.raises(BadModelFile, match="a number too long to read"):
        load_config_file(str(path))


def test_a_bad_file_is_one_line(tmp_path):
    from reference.hf_config import load_config_file

    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "broken.json").write_text("{")
    for path, needle in (
        (tmp_path / "none.json", "not a file"),
        (tmp_path / "list.json", "one JSON object"),
        (tmp_path / "broken.json", "not a JSON config"),
        (tmp_path, "not a file"),
    ):
        with pytest.raises(BadModelFile, match=needle):
            load_config_file(str(path))


TINY = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 256,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0,
}


@pytest.fixture
def registry():
    """The model registries as they were, after a test that adds a config file's model to them."""
    from reference import catalogue
    from reference.models import load_models

    saved = (dict(catalogue.CATALOGUE), dict(catalogue.MODELS), dict(load_models()))
    yield
    for live, old in zip((catalogue.CATALOGUE, catalogue.MODELS, load_models()), saved):
        live.clear()
        live.update(old)


@pytest.mark.jax
def test_predict_takes_a_config_json_and_predicts_what_the_published_name_does(tmp_path, capfd, registry):
    from landscape.cli import main

    path = tmp_path / "tiny" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(TINY))
    assert architecture(config_from_hf(TINY, "t")) == architecture(get_model("tiny"))
    args = ["--target", "h100", "--input-len", "64", "--output-len", "8", "--json"]
    assert main(["predict", "--model", str(path), *args]) == 0
    by_file = json.loads(capfd.readouterr().out)
    assert main(["predict", "--model", "tiny", *args]) == 0
    by_name = json.loads(capfd.readouterr().out)
    for key in ("ttft_s", "decode_step_s", "kv_cache_bytes"):
        assert by_file[key] == pytest.approx(by_name[key]), key
    (tmp_path / "bert.json").write_text(json.dumps({**TINY, "model_type": "bert"}))
    assert main(["predict", "--model", str(tmp_path / "bert.json"), *args]) == 2
    err = capfd.readouterr().err.strip()
    assert err.count("\n") == 0 and "model_type 'bert'" in err and "Traceback" not in err


def test_the_config_is_a_frozen_model_config():
    cfg = config_from_hf(GPT2, "gpt2 file")
    assert dataclasses.is_dataclass(cfg) and cfg.d_ff == 4 * 768 and cfg.tie_embeddings and cfg.name == "gpt2 file"


@pytest.mark.parametrize("name", ["a" * 300, "a" * 300 + ".json", "nul\x00name.json"])
def test_a_name_the_os_cannot_stat_is_no_path_and_no_crash(name):
    """Found by the fuzz test: a 300-character model name made pathlib's stat raise ENAMETOOLONG."""
    from reference.catalogue import resolve_model

    if name.endswith(".json"):
        with pytest.raises(BadModelFile, match="not a file"):
            resolve_model(name)
    else:
        assert resolve_model(name) == name  # left to the lookup, which names the valid models


def _deep(n: int) -> str:
    return '{"model_type": "llama", "x": ' + "[" * n + "]" * n + "}"


# Each hostile change to Llama-3.2-1B's config (issue 34's corpus: 13 gave tracebacks, 8 were
# accepted silently) and the words its one-line refusal must hold.
HOSTILE = [
    ({"hidden_size": 1e30}, "'hidden_size' is 1e+30; expected a positive int"),
    ({"hidden_size": 10**30}, "expected at most 1,048,576"),
    ({"num_hidden_layers": 10**9}, "'num_hidden_layers' is 1,000,000,000; expected at most"),
    ({"vocab_size": 2**40}, "'vocab_size'"),
    (
        {"num_attention_heads": 30, "num_key_value_heads": 6, "head_dim": None},
        "num_attention_heads = 30 does not divide hidden_size = 2048",
    ),
    ({"num_key_value_heads": 5}, "num_key_value_heads = 5 does not divide num_attention_heads = 32"),
    ({"num_key_value_heads": 64}, "num_key_value_heads = 64 does not divide"),
    ({"rope_theta": "500000"}, "'rope_theta' is '500000'; expected a positive finite number"),
    ({"rope_theta": float("inf")}, "'rope_theta' is inf"),
    ({"rope_theta": -1.0}, "'rope_theta' is -1.0"),
    ({"rope_theta": float("nan")}, "'rope_theta' is nan"),
    ({"rms_norm_eps": float("nan")}, "'rms_norm_eps' is nan"),
    ({"rope_scaling": "llama3"}, "'rope_scaling' is 'llama3'; expected an object"),
    ({"rope_scaling": None, "rope_parameters": [1, 2]}, "'rope_parameters' is [1, 2]; expected an object"),
    ({"head_dim": -64}, "'head_dim' is -64; expected a positive int"),
    ({"head_dim": "64"}, "'head_dim' is '64'"),
    ({"rope_scaling": {**LLAMA_32_1B["rope_scaling"], "factor": "32"}}, "'rope_scaling.factor' is '32'"),
    ({"rope_scaling": {**LLAMA_32_1B["rope_scaling"], "low_freq_factor": 8.0}}, "high_freq_factor > low_freq_factor"),
    (
        {"rope_scaling": {**LLAMA_32_1B["rope_scaling"], "original_max_position_embeddings": 10**9}},
        "'rope_scaling.original_max_position_embeddings' is 1000000000",
    ),
    ({"rope_scaling": {**LLAMA_32_1B["rope_scaling"], "factor": 0.5}}, "factor >= 1"),
]


@pytest.mark.parametrize("change, needle", HOSTILE, ids=[next(iter(c)) + f"-{i}" for i, (c, _) in enumerate(HOSTILE)])
def test_a_hostile_llama_config_is_refused_naming_the_field(change, needle):
    with pytest.raises(BadModelFile) as err:
        config_from_hf({**LLAMA_32_1B, **change}, "mine")
    assert needle in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "raw, needle",
    [
        ({**MIXTRAL, "num_experts_per_tok": 9}, "num_experts_per_tok = 9 is more than num_local_experts = 8"),
        ({**GPT2, "n_head": 7}, "n_head = 7 does not divide n_embd = 768"),
        ({**GPT2, "layer_norm_epsilon": float("inf")}, "'layer_norm_epsilon' is inf"),
    ],
)
def test_hostile_moe_and_gpt2_configs_are_refused(raw, needle):
    with pytest.raises(BadModelFile, match=re.escape(needle)):
        config_from_hf(raw, "mine")


def test_an_explicit_head_dim_lets_heads_not_divide_the_width():
    cfg = config_from_hf({**LLAMA_32_1B, "num_attention_heads": 24, "num_key_value_heads": 8, "head_dim": 128}, "mine")
    assert (cfg.n_heads, cfg.head_dim) == (24, 128)


def test_json_nested_thousands_deep_is_one_line(tmp_path):
    from reference.hf_config import read_config

    path = tmp_path / "config.json"
    path.write_text(_deep(100_000))
    with pytest.raises(BadModelFile, match="nested too deep"):
        read_config(str(path))


def test_a_hostile_config_from_the_cli_exits_2_in_one_line(tmp_path, capfd):
    from landscape import cli

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA_32_1B, "num_key_value_heads": 5}))
    assert cli.main(["predict", "--model", str(path), "--target", "h100"]) == 2
    err = capfd.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "num_key_value_heads = 5 does not divide" in err and "Traceback" not in err
