"""landscape/render.py: the terminal says what was compared, keeps op dialects, counts what it cuts,
scales units, and labels predict's notes by phase; XLA's metadata is stripped from its HLO."""

from __future__ import annotations

import re

from landscape.render import SEGMENTS_SHOWN, prediction_notes, render_comparison, render_targets, xla_text
from tests.landscape.comparisons import small_comparison

XLA = """HloModule jit_f, is_scheduled=true

FileNames
1 "/home/someone/project/landscape/cli.py"

FunctionNames
1 "main"

FileLocations
1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=1 end_column=2}

StackFrames
1 {file_location_id=1 parent_frame_id=1}


ENTRY %main (x: f32[4]) -> f32[4] {
  ROOT %add = f32[4]{0} add(%x, %x), metadata={op_name="jit(f)/add" stack_frame_id=1}
}
"""


def test_xla_text_drops_the_source_metadata_unless_verbose():
    text = xla_text(XLA)
    assert not any(word in text for word in ("FileNames", "FunctionNames", "FileLocations", "StackFrames", "/home/"))
    assert "stack_frame_id" not in text and 'metadata={op_name="jit(f)/add"}' in text
    assert text.startswith("HloModule jit_f") and "ENTRY %main" in text
    assert xla_text(XLA, verbose=True) == XLA


def test_compare_output_states_the_workload_and_counts_the_segments_it_cuts(capsys):
    result, _ = small_comparison(segments=SEGMENTS_SHOWN + 3)
    render_comparison([result])
    out = capsys.readouterr().out
    assert "one llama-3.1-8b layer" in out and "bfloat16" in out and "prefill of 2048 tokens" in out
    assert "torch.export → torch-mlir → StableHLO" in out and "jax.jit → StableHLO" in out
    assert "NVIDIA GPU: NVIDIA H100" in out and "Groq LPU" in out
    assert f"segment {SEGMENTS_SHOWN - 1} after" in out and f"segment {SEGMENTS_SHOWN} after" not in out
    assert "… and 3 more segments" in out
    assert "arith.constant 7/0" in out and "stablehlo.constant 11/17" in out  # the dialect tells the two apart


def test_compare_output_writes_microseconds_and_never_a_negative_zero(capsys):
    result, _ = small_comparison()
    render_comparison(result)
    out = capsys.readouterr().out
    assert " us" not in out and re.search(r"\d (ns|µs|ms|s)\b", out)
    assert not re.search(r"-0(\.0+)?\s?(ns|µs|ms|s|%)", out)


def test_targets_name_the_memory_kind_and_scale_its_size(capsys):
    from hardware_models.target import load_targets

    render_targets(load_targets())
    rows = {line.split("│")[1].strip(): line for line in capsys.readouterr().out.splitlines() if line.count("│") > 3}
    assert "231 MB SRAM" in rows["groq-lpu"] and "0 GB" not in rows["groq-lpu"]
    assert "HBM" in rows["h100"] and "LPDDR5" in rows["spyre"] and "SRAM" in rows["wse-3"]
    assert "NVIDIA GPU" in rows["h100"] and "Google TPU" in rows["tpu-v5e"]


def test_predict_notes_say_which_phase_they_belong_to():
    data = {
        "prefill": {"notes": ["bf16 is emulated", "16.06 GB over 208 MB: 79 chips"]},
        "decode": {"notes": ["bf16 is emulated", "16.36 GB over 208 MB: 79 chips"]},
    }
    assert prediction_notes(data) == [
        ("prefill and decode", "bf16 is emulated"),
        ("prefill", "16.06 GB over 208 MB: 79 chips"),
        ("decode", "16.36 GB over 208 MB: 79 chips"),
    ]


def test_a_workload_note_is_printed_under_its_title_and_on_the_page(capsys):
    """A length beyond the model's context (allowed with --allow-beyond-context) is said, not hidden."""
    import dataclasses
    import html

    from landscape.report import render_html

    result, _ = small_comparison(("h100",))
    note = "beyond context: seq=5000 exceeds llama-2-7b's context of 4,096 tokens"
    result = dataclasses.replace(result, workload={**result.workload, "notes": [note]})
    render_comparison([result])
    assert f"note: {note}" in capsys.readouterr().out
    assert f"Note: {html.escape(note)}" in render_html([result], {})


def test_kind_deltas_leaves_out_differences_that_round_to_zero():
    """A per-kind difference prints only kinds whose cost differs; all-equal kinds say so; an empty
    record (a side refused) says that instead of printing nothing."""
    from landscape.render import kind_deltas

    assert kind_deltas({"contraction": -4.87e-8, "transfer": 0.0, "other": 1e-15}) == "contraction -48.7 ns"
    assert kind_deltas({"contraction": 0.0, "transfer": -0.0}) == "no difference"
    assert kind_deltas({}) == "refused on one side"
