"""`landscape train` from the command line: its JSON follows from its own terms, the text names
the layout, and bad input is one line with exit 2 (before jax is imported where it can be)."""

from __future__ import annotations

import json

import pytest

from landscape import cli

TINY = ["train", "--model", "tiny", "--target", "h100", "--chips", "2", "--global-batch", "4", "--seq", "32"]


@pytest.mark.jax
def test_train_json_follows_from_its_terms(capsys):
    """A property of the output: tokens/s, MFU and the step agree with the terms they are made of."""
    assert cli.main([*TINY, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    lay, t = d["layout"], d["terms"]
    assert lay["tp"] * lay["pp"] * lay["dp"] == 2
    assert d["step_s"] == pytest.approx(t["pipeline_s"] + t["exposed_dp_s"] + t["optimizer_s"])
    assert d["tokens_per_s"] == pytest.approx(4 * 32 / d["step_s"])
    assert d["tokens_per_s_per_chip"] == pytest.approx(d["tokens_per_s"] / 2)
    assert d["mfu"] == pytest.approx(d["model_flops"] / (d["step_s"] * 2 * 989e12), rel=1e-3)
    assert d["memory"]["total"] <= d["memory"]["capacity"]
    assert d["memory"]["total"] == sum(d["memory"][k] for k in ("weights", "gradients", "optimizer", "activations"))


@pytest.mark.jax
def test_train_text_names_the_layout_and_fixed_choices_hold(capsys):
    assert cli.main([*TINY, "--tp", "2", "--recompute", "full", "--shard", "none"]) == 0
    out = capsys.readouterr().out
    assert "tp 2 x pp 1 x dp 1" in out and "recompute full, shard none" in out and "MFU" in out


BAD = {
    "unknown recompute": (["--recompute", "some"], "'none', 'selective', 'full'"),
    "fp8 training": (["--precision", "fp8"], "valid: bf16, fp16"),
    "chips not a multiple of tp": (["--tp", "2", "--chips", "3"], "must be a multiple of tp = 2"),
    "layout over the chips": (["--chips", "8", "--tp", "2", "--pp", "1", "--dp", "2"], "must equal tp x pp x dp = 4"),
    "more stages than layers": (["--chips", "4", "--pp", "4"], "at most the model's 2 layers"),
    "a batch no layout divides": (["--global-batch", "3", "--microbatch", "2"], "must divide the global batch"),
    "zero chips": (["--chips", "0"], "--chips"),
    "unknown target": (["--target", "h1000"], "h100"),
    "beyond the context": (["--seq", "100000"], "context"),
    "a tp that splits no head evenly": (["--tp", "3", "--chips", "3"], "tp=3 is invalid; must divide the model's"),
    "extents beyond int64": (
        ["--microbatch", "9223372036854775807", "--global-batch", "9223372036854775807"],
        "exceed int64",
    ),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_train_bad_input_is_one_line_exit_2(case, capsys):
    extra, needle = BAD[case]
    args = list(TINY)
    for i in range(0, len(extra), 2):  # a given option replaces TINY's
        if extra[i] in args:
            args[args.index(extra[i]) + 1] = extra[i + 1]
        else:
            args += extra[i : i + 2]
    assert cli.main(args) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("landscape: error:") and needle in lines[0], lines
    assert "Traceback" not in captured.err + captured.out


@pytest.mark.jax
def test_train_beyond_the_context_runs_with_the_flag_and_says_so(capsys):
    """--allow-beyond-context (as predict's): a RoPE model's --seq past its context is costed, with a note."""
    assert cli.main([*TINY, "--seq", "4100", "--microbatch", "1", "--allow-beyond-context", "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any(n.startswith("beyond context") for n in notes)


@pytest.mark.torch
@pytest.mark.jax
def test_diff_train_names_the_segments_of_the_two_backward_graphs(capsys):
    """`diff --train`: the two sides' training steps of one layer, cut at their contractions; both
    compute the same matmuls (forward and backward), so every segment is named by its dot."""
    args = ["diff", "tiny", "--train", "--shape", "batch=1", "--shape", "seq=33", "--dtype", "bfloat16", "--json"]
    assert cli.main(args) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["sides"] == ["torch", "jax"]
    hist = d["histogram"]
    assert hist["stablehlo.dot_general"][0] >= 3 * 7 and hist["stablehlo.dot_general"][1] >= 3 * 7
    assert d["divergences"] and all(x["after"] for x in d["divergences"])


@pytest.mark.parametrize(
    "args, needle",
    [
        (["diff", "matmul", "--train"], "unknown model for diff --train 'matmul'"),
        (["diff", "tiny", "--train", "--recompute", "half"], "'none', 'selective', 'full'"),
    ],
)
def test_diff_train_bad_input_is_one_line_exit_2(args, needle, capsys):
    assert cli.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err
