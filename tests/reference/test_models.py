"""Model configs hold published values; derived sizes and parameter counts match the sources."""

import pytest

from reference.catalogue import MODELS
from reference.errors import BeyondContext
from reference.models import BadModelFile, context_check, derived_ffn_width, load_models

REQUIRED = [
    "gpt2-small",
    "qwen2.5-0.5b",
    "llama-2-7b",
    "llama-2-13b",
    "llama-2-70b",
    "llama-3.2-1b",
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "mixtral-8x7b",
    "tiny",
]


def test_every_required_model_is_configured():
    assert set(REQUIRED) <= set(load_models())


@pytest.mark.parametrize("name", [n for n, c in load_models().items() if c.ffn_multiple_of])
def test_llama_ffn_width_follows_metas_rounding(name):
    """Meta's llama/model.py: hidden = multiple_of * ceil(multiplier * int(8d/3) / multiple_of)."""
    cfg = load_models()[name]
    assert derived_ffn_width(cfg.d_model, cfg.ffn_multiple_of, cfg.ffn_dim_multiplier) == cfg.d_ff


def test_ffn_rounding_worked_number():
    assert derived_ffn_width(4096, 1024, 1.3) == 14336  # Llama 3.1 8B, from the docstring


# Exact parameter counts as published (Hugging Face model cards / safetensors metadata).
PUBLISHED_PARAMETERS = {
    "gpt2-small": 124_439_808,
    "qwen2.5-0.5b": 494_032_768,
    "llama-2-7b": 6_738_415_616,
    "llama-3.2-1b": 1_235_814_400,
    "llama-3.1-8b": 8_030_261_248,
    "mixtral-8x7b": 46_702_792_704,
    "qwen3-8b": 8_190_735_360,  # its q_norm and k_norm gains (128 each a layer) included
    "mistral-7b-v0.1": 7_241_732_096,
}


@pytest.mark.parametrize("name", PUBLISHED_PARAMETERS)
def test_weight_count_matches_published_size(name):
    entry = MODELS[name]
    assert entry.n_weights(entry.resolve()) == PUBLISHED_PARAMETERS[name]


def test_405b_is_about_405_billion_parameters():
    entry = MODELS["llama-3.1-405b"]
    assert 405e9 < entry.n_weights(entry.resolve()) < 406e9


def test_qwen3_32b_is_its_published_32_8_billion_parameters():
    entry = MODELS["qwen3-32b"]
    assert 32.75e9 < entry.n_weights(entry.resolve()) < 32.85e9


def test_unknown_field_names_file_model_and_field(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text('schema = 1\n["m"]\nsource = "x"\nstyle = "llama"\nhidden = 3\n')
    with pytest.raises(BadModelFile, match=r"model 'm': unknown field 'hidden'"):
        load_models(path)


def test_missing_field_is_reported(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text('schema = 1\n["m"]\nsource = "x"\nstyle = "llama"\n')
    with pytest.raises(BadModelFile, match="missing field"):
        load_models(path)


# Context lengths: max_positions is max_position_embeddings of each linked config.
PUBLISHED_CONTEXT = {
    "gpt2-small": 1024,
    "qwen2.5-0.5b": 32768,
    "llama-2-7b": 4096,
    "llama-2-13b": 4096,
    "llama-2-70b": 4096,
    "llama-3.2-1b": 131072,
    "llama-3.1-8b": 131072,
    "llama-3.1-70b": 131072,
    "llama-3.1-405b": 131072,
    "mixtral-8x7b": 32768,
    "qwen3-8b": 40960,
    "qwen3-32b": 40960,
    "mistral-7b-v0.1": 32768,
}


@pytest.mark.parametrize("name", PUBLISHED_CONTEXT)
def test_every_model_carries_its_published_context(name):
    assert load_models()[name].max_positions == PUBLISHED_CONTEXT[name]


def test_tokens_within_the_context_pass_without_a_note():
    assert context_check("llama-2-7b", 4096, "seq=4096", "--shape seq") is None


def test_tokens_beyond_the_context_are_refused_naming_the_knob_and_the_flag():
    """`predict --model llama-2-7b --input-len 5000` used to answer without a word."""
    with pytest.raises(
        BeyondContext,
        match=r"llama-2-7b: .*5,256 tokens exceeds its context of 4,096.*--input-len \+ "
        r"--output-len <= 4096, or pass --allow-beyond-context",
    ):
        context_check(
            "llama-2-7b", 5256, "--input-len 5000 + --output-len 256 = 5,256 tokens", "--input-len + --output-len"
        )


def test_allowed_beyond_the_context_gives_a_note():
    note = context_check("llama-3.1-8b", 1_000_256, "1,000,256 tokens", "--input-len + --output-len", allow=True)
    assert note.startswith("beyond context") and "131,072" in note and "--allow-beyond-context" in note


def test_learned_positions_cannot_be_exceeded_even_when_allowed():
    with pytest.raises(BeyondContext, match="1,024 learned positions, so no flag extends it") as err:
        context_check("gpt2-small", 2304, "2,304 tokens", "--input-len + --output-len", allow=True)
    assert "--allow-beyond-context" not in str(err.value)
