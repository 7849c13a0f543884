"""Model configs hold published values; derived sizes and parameter counts match the sources."""

import pytest

from reference.catalogue import MODELS
from reference.models import BadModelFile, derived_ffn_width, load_models

REQUIRED = [
    "gpt2-small", "qwen2.5-0.5b", "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.2-1b",
    "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "mixtral-8x7b", "tiny",
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
}


@pytest.mark.parametrize("name", PUBLISHED_PARAMETERS)
def test_weight_count_matches_published_size(name):
    entry = MODELS[name]
    assert entry.n_weights(entry.resolve()) == PUBLISHED_PARAMETERS[name]


def test_405b_is_about_405_billion_parameters():
    entry = MODELS["llama-3.1-405b"]
    assert 405e9 < entry.n_weights(entry.resolve()) < 406e9


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
