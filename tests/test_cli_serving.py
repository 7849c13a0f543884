"""The CLI's serving commands, `predict`, `map` and `compare`: their JSON keys, the figures that
follow from the decode step, and the files `compare --out` writes (the rest: tests/test_cli.py)."""

from __future__ import annotations

import json

import pytest

from landscape import cli


def test_predict_json_has_the_documented_keys_and_follows_from_the_decode_step(capsys):
    args = [
        "predict",
        "--model",
        "tiny",
        "--target",
        "tpu-v5e",
        "--input-len",
        "16",
        "--output-len",
        "8",
        "--batch",
        "2",
        "--json",
    ]
    assert cli.main(args) == 0
    data = json.loads(capsys.readouterr().out)
    keys = {
        "ttft_s",
        "decode_step_s",
        "tokens_per_s_per_user",
        "throughput_tokens_per_s",
        "chips",
        "kv_cache_bytes",
        "kv_cache_location",
        "bottleneck",
    }
    assert keys <= set(data)
    assert data["tokens_per_s_per_user"] == pytest.approx(1 / data["decode_step_s"])
    assert data["decode_steps"] == 7 and data["decode_total_s"] == pytest.approx(7 * data["decode_step_s"])
    assert data["e2e_latency_s"] == pytest.approx(data["ttft_s"] + data["decode_total_s"])
    assert data["throughput_tokens_per_s"] == pytest.approx(
        2 * 8 / data["e2e_latency_s"]
    )  # static batch: out tokens / e2e
    assert [p["cache_len"] for p in data["decode_step_at"]] == [17, 20, 23]  # the first, middle and last step's cache
    steps = [p["step_s"] for p in data["decode_step_at"]]
    assert steps == sorted(steps) and data["decode"]["total_time_s"] == steps[-1]  # a longer cache never costs less
    assert data["ttft_s"] == data["prefill"]["total_time_s"] > 0
    assert data["kv_cache_location"] == "hbm" and data["chips"] == 1


def test_predict_batch_max_fills_memory_with_cache_up_to_the_engine_maximum(capsys):
    """llama-3.1-8b fp8 on one H100, 128 + 2048 tokens: (72 GB usable - 8.03 GB of weights) over
    2 x 32 x 2176 x 8 x 128 B = 142.6 MB of cache per sequence: 448 sequences."""
    args = [
        "predict",
        "--model",
        "llama-3.1-8b",
        "--target",
        "h100",
        "--precision",
        "fp8",
        "--batch",
        "max",
        "--input-len",
        "128",
        "--output-len",
        "2048",
        "--json",
    ]
    assert cli.main(args) == 0
    data = json.loads(capsys.readouterr().out)
    usable = 80e9 * 0.9  # h100.toml: levels.hbm.bytes, usable_fraction
    assert data["batch"] == int((usable - 8_030_261_248) // (2 * 32 * 2176 * 8 * 128)) == 448
    assert "448 sequences' caches" in data["batch_note"]


def test_predict_batch_max_is_refused_where_chips_grow_with_the_batch(capsys):
    assert cli.main(["predict", "--model", "tiny", "--target", "groq-lpu", "--batch", "max"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "give --batch N" in err


def test_predict_in_fp8_streams_half_the_weights(capsys):
    base = [
        "predict",
        "--model",
        "llama-3.2-1b",
        "--target",
        "h100",
        "--input-len",
        "64",
        "--output-len",
        "16",
        "--json",
    ]
    assert cli.main(base) == 0
    bf16 = json.loads(capsys.readouterr().out)
    assert cli.main([*base, "--precision", "fp8"]) == 0
    fp8 = json.loads(capsys.readouterr().out)
    assert fp8["kv_cache_bytes"] * 2 == bf16["kv_cache_bytes"]
    assert fp8["decode_step_s"] < 0.8 * bf16["decode_step_s"]


def test_predict_in_fp4_on_a_b200_keeps_an_fp8_cache_and_beats_fp8s_decode(capsys):
    """NVFP4 (W4A4): the KV cache stays fp8, so its bytes equal fp8's; the weights stream in half
    fp8's bytes, so a memory-bound decode step is faster, and the batch max counts half-byte weights."""
    base = [
        "predict",
        "--model",
        "llama-3.2-1b",
        "--target",
        "b200",
        "--input-len",
        "64",
        "--output-len",
        "16",
        "--json",
    ]
    runs = {}
    for precision in ("fp8", "fp4"):
        assert cli.main([*base, "--precision", precision]) == 0
        runs[precision] = json.loads(capsys.readouterr().out)
    assert runs["fp4"]["kv_cache_bytes"] == runs["fp8"]["kv_cache_bytes"]
    assert runs["fp4"]["decode_step_s"] < 0.9 * runs["fp8"]["decode_step_s"]


def test_map_shows_a_users_target_file_in_its_familys_column(tmp_path, capsys):
    """A copy of h100.toml with twice the HBM bandwidth (issue 35's user file): the GPU column
    shows it, and its ridge point halves (989.4e12 / 3.35e12 = 295.3 -> 147.6 FLOP/byte)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "hardware_models" / "targets" / "h100.toml").read_text()
    mine = tmp_path / "mine.toml"
    mine.write_text(
        text.replace('name = "h100"', 'name = "mine"').replace(
            "bytes_per_s = { value = 3.35e12", "bytes_per_s = { value = 6.7e12"
        )
    )
    assert cli.main(["map", "--json", "--model", "llama-3.2-1b", "--target", str(mine)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert next(f for f in data["families"] if f["family"] == "gpu")["target"] == "mine"
    ridge = next(r for r in data["rows"] if r["row"] == "ridge point")
    assert ridge["gpu"] == "147.6 FLOP/byte"
    assert cli.main(["map", "--target", "h100", "--target", "b200"]) == 2
    assert "h100 is already the gpu column" in capsys.readouterr().err


def test_map_json_lists_every_family_and_the_measured_kv_cache(capsys):
    assert cli.main(["map", "--json", "--model", "llama-3.2-1b"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [f["family"] for f in data["families"]] == ["gpu", "tpu", "wafer", "lpu", "spyre", "cdna"]
    kv = next(r for r in data["rows"] if r["row"].startswith("KV-cache placement"))
    assert "hbm" in kv["gpu"] and "sram" in kv["lpu"] and "lpddr5" in kv["spyre"] and "hbm" in kv["cdna"]


def test_compare_json_and_out_folder(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["compare", "mlp", "--targets", "h100,groq-lpu", "--json", "--out", str(out)]) == 0
    (data,) = json.loads(capsys.readouterr().out)["comparisons"]  # mlp has no phases: one comparison
    assert data["workload"]["entry"] == "mlp" and data["workload"]["phase"] is None
    assert [(r["target"], r["side"]) for r in data["results"]] == [
        ("h100", "torch"),
        ("h100", "jax"),
        ("groq-lpu", "torch"),
        ("groq-lpu", "jax"),
    ]
    assert {"time_s", "bottleneck", "bytes", "kernels", "padding_waste", "fallbacks"} <= set(data["results"][0])
    assert set(data["difference_cost_s"]) == {"h100", "groq-lpu"}
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert {
        "report.json",
        "hlo/torch.fx.txt",
        "hlo/jax.xla.txt",
        "plans/h100.jax.txt",
        "rooflines/h100.torch.svg",
        "traces/groq-lpu.torch.json",
    } <= files
    assert "traces/h100.jax.json" not in files
