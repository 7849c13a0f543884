"""fuse_attention: softmax(Q K^T) V runs as one kernel whose scores never reach main memory, on
both sides' IR; FlashAttention-2's measured throughput (kernels.csv G36) is reproduced on the
H100 it was fitted on and on the H200 it was not; a decode step reads the weights and the KV
cache once."""

from __future__ import annotations

import math

import pytest

from hardware_models.calibration import attention_module
from hardware_models.estimate import estimate
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target

FUSING = ("h100", "tpu-v5e")  # the families whose stacks fuse attention (GPU, TPU)


def _qkvo_bytes(bh: int, seq: int, head_dim: int, element: int = 2) -> int:
    return 4 * bh * seq * head_dim * element


@pytest.mark.parametrize("target_name", FUSING)
@pytest.mark.parametrize("seq", [1, 63, 65, 129])
def test_a_fused_kernel_moves_only_q_k_v_and_o_through_main_memory(target_name, seq):
    """Rule of the kernel (FlashAttention): main-memory bytes = Q + K + V + O, whatever seq is."""
    target = get_target(target_name)
    plan = compile_plan(attention_module(1, 2, seq, 16, "bf16"), target)
    (group,) = [g for g in plan.groups if g.kind == "attention"]
    assert len(plan.groups) == 1  # the dots, the softmax and the converts are all in it
    assert plan.placements[group.id].at(target.main_memory_level) == _qkvo_bytes(2, seq, 16)


@pytest.mark.parametrize("target_name", FUSING)
def test_without_the_pass_the_scores_go_through_main_memory(target_name):
    """The fused kernel saves at least one 16-bit write and read of the score matrix (unfused,
    the first dot writes it and the softmax fusion reads it, at least)."""
    target = get_target(target_name)
    module = attention_module(1, 4, 129, 16, "bf16")
    main = target.main_memory_level
    fused = estimate(module, target).total.bytes_at(main)
    unfused = estimate(module, target, "", compile_plan(module, target, without=("fuse_attention",))).total.bytes_at(main)
    assert unfused - fused >= 2 * 2 * 4 * 129 * 129


def test_flash_attention_2_throughput_on_h100_and_h200():
    """G36: 327.9 TFLOP/s on an H100 (fitted), 329.3 on an H200 (held out: checked only)."""
    module = attention_module(2, 16, 8192, 128, "bf16")
    flops = 4 * 2 * 16 * 8192**2 * 128
    for name, measured in (("h100", 327.9e12), ("h200", 329.3e12)):
        predicted = flops / estimate(module, get_target(name)).total.time_s
        assert predicted == pytest.approx(measured, rel=0.02), name


@pytest.mark.torch
@pytest.mark.jax
@pytest.mark.parametrize("side", ["torch", "jax"])
@pytest.mark.parametrize("mode", ["prefill", "decode"])
@pytest.mark.parametrize("style", ["llama", "gpt2"])
def test_both_sides_blocks_fuse_one_attention_kernel(side, mode, style):
    """The pattern is recognized on torch-mlir's IR and on JAX's (through its inlined `_where`),
    with the GQA broadcast (llama: 4 heads over 2 KV heads) and without (gpt2)."""
    from reference.catalogue import CATALOGUE

    if side == "torch":
        from pytorch_side.lower import lower_entry
    else:
        from jax_side.lower import lower_entry
    module = lower_entry("block", CATALOGUE["block"].resolve({"mode": mode, "style": style}), "bfloat16").module
    for name in FUSING:
        plan = compile_plan(module, get_target(name))
        assert [g.kind for g in plan.groups].count("attention") == 1, name
        (shape,) = plan.attention.values()
        assert shape.kv_len == 16  # the softmax runs over the whole sequence (the cache in decode)


@pytest.mark.torch
@pytest.mark.jax
@pytest.mark.parametrize("side", ["torch", "jax"])
def test_a_decode_step_reads_the_weights_and_the_kv_cache_once(side):
    """The cache is updated in place and attention is fused: llama-3.1-8b, batch 1, 2048 tokens,
    one H100: main-memory bytes per step = the weights + the cache within 4% (JAX's within 0.1%),
    where of the (untied) embedding table the step's gather reads one row, not the table."""
    from landscape.serving import lower_for_serving
    from reference.catalogue import CATALOGUE

    _, decodes, cache = lower_for_serving("llama-3.1-8b", side, 1, 2047, 1)
    ((length, decode),) = decodes  # one step, against a 2048-token buffer
    assert length == 2048
    entry = CATALOGUE["llama-3.1-8b"]
    shapes = entry.resolve({})
    table = 2 * math.prod(entry.weights(shapes)["embed.weight"].shape)
    weights = 2 * entry.n_weights(shapes) - table
    moved = estimate(decode, get_target("h100")).total.bytes_at("hbm")
    assert weights + cache <= moved <= (weights + cache) * (1.04 if side == "torch" else 1.001)
