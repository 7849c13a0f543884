"""landscape/comparison_workload.py: what `compare` compares, resolved and checked before any framework loads."""

from __future__ import annotations

import subprocess
import sys

import pytest

from landscape.comparison_workload import COMPILERS, DEFAULT_TOKENS, plan_workloads
from reference.errors import InvalidShape, UnknownName, UnsupportedDtype
from reference.models import get_model


def test_the_default_is_one_llama_3_1_8b_layer_in_prefill_and_decode():
    prefill, decode = plan_workloads(None, {}, "bfloat16")
    cfg = get_model("llama-3.1-8b")
    for w in (prefill, decode):
        assert w.entry == "block" and w.dtype == "bfloat16" and "llama-3.1-8b" in w.label
        s = w.shapes
        assert (s["n_heads"], s["n_kv_heads"], s["head_dim"], s["d_ff"]) == (
            cfg.n_heads,
            cfg.n_kv_heads,
            cfg.head_dim,
            cfg.d_ff,
        )
        assert s["batch"] == 1 and s["seq"] == DEFAULT_TOKENS == 2048
    assert (prefill.phase, prefill.shapes["mode"]) == ("prefill", "prefill")
    assert (decode.phase, decode.shapes["mode"]) == ("decode", "decode")
    assert "2048-token KV cache" in decode.phase_text() and "2048 tokens" in prefill.phase_text()


def test_the_record_states_dtype_shapes_phase_and_both_compilers():
    (w,) = plan_workloads(None, {"seq": "512"}, "float16", "prefill")
    data = w.to_dict()
    assert data["dtype"] == "float16" and data["shapes"]["seq"] == 512 and data["phase"] == "prefill"
    assert data["compilers"] == {side: COMPILERS[side] for side in ("torch", "jax")}  # the two compared by default
    assert w.to_dict(("torch", "jax", "torch-xla"))["compilers"] == COMPILERS
    assert COMPILERS["torch"] == "torch.export → torch-mlir → StableHLO" and COMPILERS["jax"] == "jax.jit → StableHLO"


def test_a_mode_given_as_a_shape_picks_one_phase_and_a_kernel_has_none():
    assert [w.phase for w in plan_workloads("block", {"mode": "decode"}, "bfloat16")] == ["decode"]
    (mlp,) = plan_workloads("mlp", {}, "bfloat16", "both")
    assert mlp.phase is None and "mode" not in mlp.shapes and mlp.label == "mlp"


@pytest.mark.parametrize(
    "name, shapes, dtype, error",
    [
        ("atention", {}, "bfloat16", UnknownName),
        (None, {"n_kv_heads": "7"}, "bfloat16", InvalidShape),
        (None, {"mode": "train"}, "bfloat16", UnknownName),
        ("mlp", {}, "float64", UnsupportedDtype),
    ],
)
def test_bad_input_is_refused_before_lowering(name, shapes, dtype, error):
    with pytest.raises(error):
        plan_workloads(name, shapes, dtype)


def test_planning_imports_neither_torch_nor_jax():
    code = (
        "import sys; from landscape.comparison_workload import plan_workloads; plan_workloads(None, {}, 'bfloat16');"
        "print(sorted(m for m in ('torch', 'jax') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr
