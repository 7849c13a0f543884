"""A downloaded Hugging Face model from the CLI: NAME may be its folder or its config.json, and
`run --weights` runs its checkpoint on the reference and both sides; bad checkpoints get one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("transformers", reason="the [hf] extra (transformers) is not installed")

from landscape.cli import main  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.jax]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Two model folders as `save_pretrained` writes them (config.json, model.safetensors)."""
    from tests.sides.test_hf_models import hf_model

    root = tmp_path_factory.mktemp("hf")
    out = {}
    for kind in ("gpt2", "qwen2"):
        hf_model(kind, seed=11).save_pretrained(root / kind)
        out[kind] = str(root / kind)
    return out


def test_run_with_checkpoint_weights(folders, capfd):
    """The run computes with the checkpoint's weights: its float64 reference is decoder_forward on
    them (not on seeded ones), and both sides agree with it."""
    from reference.agreement import check_agreement
    from reference.catalogue import get_entry, resolve_model
    from reference.catalogue.transformer import decoder_forward
    from reference.hf_weights import checkpoint_weights
    from reference.inputs import make_case
    from reference.models import get_model

    assert main(["run", folders["qwen2"], "--weights", folders["qwen2"], "--shape", "seq=6", "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    assert out["ok"] and out["kernel"].endswith("qwen2/config.json")
    assert any("checkpoint" in n for n in out["notes"])

    name = resolve_model(folders["qwen2"])
    weights = checkpoint_weights(name, folders["qwen2"])
    result = check_agreement(name, {"seq": "6"}, runners={}, weights=weights)
    entry = get_entry(name)
    case = make_case(entry, entry.resolve({"seq": "6"}), "float32", 0)
    w64 = {k: v.astype(np.float64) for k, v in weights.items()}
    np.testing.assert_allclose(
        result.reference[0], decoder_forward(get_model(name), case.inputs["ids"], w64), rtol=1e-12
    )


def test_first_block_of_a_checkpoint(folders, capfd):
    assert (
        main(["run", f"{folders['gpt2']}/config.json", "--weights", folders["gpt2"], "--shape", "layers=1", "--json"])
        == 0
    )
    out = json.loads(capfd.readouterr().out)
    assert out["ok"] and out["shapes"]["layers"] == 1


def test_folder_as_name_for_stats(folders, capfd):
    """Any command taking NAME takes the folder: stats lowers the config's architecture."""
    assert main(["stats", folders["gpt2"], "--shape", "seq=4", "--json"]) == 0
    assert json.loads(capfd.readouterr().out)["flops"] > 0


def test_unknown_model_offers_published_models_only(folders, capfd):
    """A config.json registered earlier in the process is valid by its path, but the choices an
    unknown model's error lists are models.toml's (and the path form), never a registered path."""
    from reference.catalogue import PUBLISHED_MODELS, resolve_model

    resolve_model(folders["gpt2"])
    assert main(["predict", "--model", "llama-4", "--target", "h100"]) == 2
    err = capfd.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and folders["gpt2"] not in err, err
    assert f"valid: {', '.join(PUBLISHED_MODELS)}, a Hugging Face config.json's path" in err, err


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "matmul", "--weights", "{gpt2}"], "--weights takes a model's checkpoint; 'matmul' is a kernel"),
        (["run", "{qwen2}", "--weights", "{gpt2}"], "tensors the llama rules do not place: transformer."),
        (["run", "gpt2-small", "--weights", "{gpt2}"], "has shape (192,); a GPT-2 with d_model 768"),
        (["run", "{gpt2}", "--weights", "{gpt2}/missing"], "no safetensors file"),
        (["run", "{gpt2}", "--weights", "{gpt2}/config.json"], "not a safetensors file"),
    ],
)
def test_bad_checkpoints_get_one_line(folders, capfd, args, message):
    code = main([a.format(**folders) for a in args])
    err = capfd.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and message in err, err
