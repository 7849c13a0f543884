"""examples/: every file the README's examples read is shipped, and every command examples/README.md
gives runs as it says (the two .mlir files are what `hlo --out` writes today, byte for byte)."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

from landscape import cli

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def test_every_examples_path_the_docs_name_is_shipped():
    pages = [ROOT / "README.md", EXAMPLES / "README.md", *(ROOT / "docs").glob("*.md")]
    text = "".join(page.read_text() for page in pages)
    named = set(re.findall(r"examples/[\w./-]+\w", text))
    assert named, "the READMEs name no example"
    for path in named:
        assert (ROOT / path).exists(), path


@pytest.mark.parametrize("side", ["torch", "jax"])
def test_the_shipped_stablehlo_is_what_hlo_out_writes_and_named_so(tmp_path, side):
    assert cli.main(["hlo", "layernorm", "--side", side, "--stage", "stablehlo", "--out", str(tmp_path)]) == 0
    (written,) = tmp_path.iterdir()
    assert written.name == f"layernorm.{side}.stablehlo.mlir"
    assert written.read_text() == (EXAMPLES / written.name).read_text()


def test_compare_reads_the_shipped_files(capsys):
    files = [str(EXAMPLES / f"layernorm.{s}.stablehlo.mlir") for s in ("torch", "jax")]
    assert cli.main(["compare", "--from-file", *files, "--targets", "h100,tpu-v5e"]) == 0
    out = capsys.readouterr().out
    assert "layernorm.torch.stablehlo.mlir and layernorm.jax.stablehlo.mlir" in out


def test_the_llama_config_predicts_what_the_built_in_entry_does_and_bert_is_refused(capsys):
    import json

    assert (
        cli.main(["predict", "--model", str(EXAMPLES / "llama-3.2-1b" / "config.json"), "--target", "h100", "--json"])
        == 0
    )
    by_file = json.loads(capsys.readouterr().out)
    assert cli.main(["predict", "--model", "llama-3.2-1b", "--target", "h100", "--json"]) == 0
    by_name = json.loads(capsys.readouterr().out)
    assert by_file["ttft_s"] == by_name["ttft_s"] and by_file["e2e_latency_s"] == by_name["e2e_latency_s"]
    assert cli.main(["predict", "--model", str(EXAMPLES / "bert" / "config.json"), "--target", "h100"]) == 2
    err = capsys.readouterr().err.strip()
    assert "model_type 'bert' is not supported; valid: llama" in err and len(err.splitlines()) == 1


def test_the_fake_tensor_module_example_runs_and_builds_no_storage():
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "fake_module.py")], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "940 MB of fake torch.bfloat16 weights" in run.stdout and "h100:" in run.stdout and "tpu-v5e:" in run.stdout
    sys.path.insert(0, str(EXAMPLES))
    try:
        import torch
        from fake_module import build
        from torch._subclasses.fake_tensor import FakeTensor

        model, x = build(tokens=3)
        assert all(isinstance(p, FakeTensor) and p.dtype == torch.bfloat16 for p in model.parameters())
        assert isinstance(x, FakeTensor) and torch.get_default_dtype() == torch.float32  # restored
    finally:
        sys.path.remove(str(EXAMPLES))
