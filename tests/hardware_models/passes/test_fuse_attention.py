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
    unfused = estimate(module, target, "", compile_plan(module, target, without=("fuse_attention",))).total.bytes_at(
        main
    )
    assert unfused - fused >= 2 * 2 * 4 * 129 * 129


def test_flash_attention_2_throughput_on_h100_and_h200():
    """G36 (causal, FLOPs counted as half the square, as FlashAttention's benchmark counts them):
    327.9 TFLOP/s on an H100 (fitted), 329.3 on an H200 (held out: checked only)."""
    module = attention_module(2, 16, 8192, 128, "bf16", causal=True)
    flops = 4 * 2 * 16 * 8192**2 * 128 / 2
    for name, measured in (("h100", 327.9e12), ("h200", 329.3e12)):
        predicted = flops / estimate(module, get_target(name)).total.time_s
        assert predicted == pytest.approx(measured, rel=0.02), name


@pytest.mark.parametrize("n", [1, 63, 65, 129, 8192])
def test_a_causal_kernel_computes_its_blocks_below_and_on_the_diagonal(n):
    """Rule of a flash kernel that skips masked blocks: the share it computes lies between the
    causal mask's own share (n (n + 1) / 2 of n^2) and 1; one block (n <= 64) is computed whole;
    8192 tokens in 128 x 64 blocks: (b + 1) x 128 keys for query block b, 65/128."""
    from hardware_models.plan import causal_share

    share = causal_share(n, n, (128, 64))
    assert (n + 1) / (2 * n) <= share <= 1
    assert share == (1 if n <= 64 else 65 / 128 if n == 8192 else share)
    assert causal_share(129, 129, (128, 64)) == (128 * 128 + 129) / 129**2
    assert causal_share(1, n, (128, 64)) == 1  # a decode query sees every key


@pytest.mark.parametrize(
    "target_name, share", [("h100", 65 / 128), ("tpu-v5e", 65 / 128), ("mi300x", 65 / 128), ("host-cpu", 1.0)]
)
def test_the_plan_records_the_share_of_a_causal_square_its_kernel_computes(target_name, share):
    """FA2 (128 x 64 blocks) and the Pallas kernel (128 x 128) skip the key blocks past the
    diagonal: about half the time of the unmasked kernel; the CPU's ATen kernel is costed whole."""
    target = get_target(target_name)
    causal = compile_plan(attention_module(1, 2, 8192, 128, "bf16", causal=True), target)
    if not causal.attention:
        pytest.skip(f"{target_name}'s pipeline fuses no attention here")
    (shape,) = causal.attention.values()
    assert (shape.causal_queries, shape.computed_share) == (8192, share)
    (full,) = compile_plan(attention_module(1, 2, 8192, 128, "bf16"), target).attention.values()
    assert (full.causal_queries, full.computed_share) == (0, 1.0)


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
        # a prefill's causal mask is found on both sides' IR; one decode query sees every key
        assert shape.causal_queries == (16 if mode == "prefill" else 0), name


@pytest.mark.torch
@pytest.mark.jax
@pytest.mark.parametrize("side", ["torch", "jax"])
def test_a_decode_step_reads_the_weights_and_the_kv_cache_once(side):
    """The cache is updated in place and attention is fused: llama-3.1-8b, batch 1, 2048 tokens,
    one H100: main-memory bytes per step = the weights + the cache within 4% (JAX's within 0.1%),
    where of the (untied) embedding table the step's gather reads one row, not the table."""
    from landscape.lowering import lower_for_serving
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


def _attention_with_chains(shared_k: bool = False):
    """attention_module's kernel with cheap chains around it: Q scaled by a constant (0.5, a splat),
    K arriving transposed ([bh, d, s], so a transpose leads to it), O converted to f32 after the
    second dot. With `shared_k` the transposed K is also returned, so the transpose is read
    outside the kernel and cannot join it."""
    from reference.ir.graph import Function, Module, Op, TensorType

    base = attention_module(1, 4, 65, 16, "bf16").main
    q, kt, o32, half = (
        TensorType((4, 65, 16), "bf16"),
        TensorType((4, 16, 65), "bf16"),
        TensorType((4, 65, 16), "f32"),
        TensorType((), "bf16"),
    )
    chains = (
        Op("stablehlo.constant", ("%half",), (half,), (), (), (("value", ("splat", 0.5)),)),
        Op("stablehlo.broadcast_in_dim", ("%halfb",), (q,), ("%half",), (half,), (("broadcast_dimensions", ()),)),
        Op("stablehlo.multiply", ("%q",), (q,), ("%qraw", "%halfb"), (q, q)),
        Op("stablehlo.transpose", ("%k",), (q,), ("%kt",), (kt,), (("permutation", (0, 2, 1)),)),
    )
    body = [op for op in base.ops if op.short_name != "return"]
    after = Op("stablehlo.convert", ("%o",), (o32,), ("%0",), (q,))
    results = ("%o", "%k") if shared_k else ("%o",)
    ret = Op("func.return", (), (), results, (o32, q) if shared_k else (o32,))
    main = Function(
        "main", (("%qraw", q), ("%kt", kt), ("%v", q)), (o32, q) if shared_k else (o32,), (*chains, *body, after, ret)
    )
    return Module((main,))


@pytest.mark.parametrize("target_name", FUSING)
def test_cheap_chains_around_attention_join_its_kernel_and_main_memory_holds_their_roots(target_name):
    """The scale and O's convert are each read only inside: one kernel, reading Q, K^T and V as
    main memory holds them and writing O in f32 (4 x 65 x 16 x 4 B). K's transpose, read only by
    a dot, is a layout view (no kernel at all)."""
    target = get_target(target_name)
    plan = compile_plan(_attention_with_chains(), target)
    kernels = [g for g in plan.groups if g.kind not in ("transfer",)]
    (attention,) = [g for g in kernels if g.kind == "attention"]
    names = {plan.ops[i].op.short_name for i in attention.members}
    assert {"multiply", "convert"} <= names and "transpose" not in names
    assert len(kernels) == 1
    element = 4 * 65 * 16
    assert plan.placements[attention.id].at(target.main_memory_level) == 3 * element * 2 + element * 4


@pytest.mark.parametrize("target_name", FUSING)
def test_a_chain_op_read_outside_the_kernel_stays_out_of_it(target_name):
    """K's transpose is also returned, so it is no longer a layout view: it runs as its own
    kernel, outside attention's, and attention reads its result."""
    target = get_target(target_name)
    plan = compile_plan(_attention_with_chains(shared_k=True), target)
    (attention,) = [g for g in plan.groups if g.kind == "attention"]
    transposes = [i for i, p in enumerate(plan.ops) if p.op.short_name == "transpose" and "%k" in p.results[0]]
    assert transposes and not set(transposes) & set(attention.members)
    assert any(set(transposes) & set(g.members) for g in plan.groups if g.id != attention.id)
    assert {"multiply", "convert"} <= {plan.ops[i].op.short_name for i in attention.members}


@pytest.mark.parametrize("keeps,target_name", [(True, "h100"), (False, "tpu-v5e")])
@pytest.mark.parametrize("chips,shards", [(1, 1), (2, 2), (8, 4)])
def test_attention_bytes_by_hand_over_chips(keeps, target_name, chips, shards):
    """main = (K + V) / shards + (Q + O) / chips; on chip the same, plus, where the scores do not
    stay in registers (a TPU's VMEM), the f32 score tile written and read once:
    2 x 4 B x 4 x 65 x 65 / chips (attention_placement)."""
    from dataclasses import replace

    from hardware_models.passes.fuse_attention import attention_placement
    from hardware_models.plan import Partition

    target = get_target(target_name)
    plan = compile_plan(attention_module(1, 4, 65, 16, "bf16"), target)
    ((gid, shape),) = plan.attention.items()
    plan = plan.with_(
        attention={gid: replace(shape, shards=shards)},
        partition=Partition(chips, chips, 0, 0, 0, 1, "tensor parallel" if chips > 1 else ""),
    )
    group = plan.groups[gid]
    one = 4 * 65 * 16 * 2
    p = attention_placement(plan, plan.value_graph(), group, "hbm", "cache", keeps)
    main = -(-2 * one // shards) if shards == 1 else 2 * -(-one // shards)
    main += -(-2 * one // chips)
    scores = 0 if keeps else -(-2 * 4 * 4 * 65 * 65 // chips)
    assert p.bytes == (("hbm", main), ("cache", main + scores))


def _regional_attention(layers: int = 3):
    """A block, called `layers` times, of exp(q), attention over [8, 65, 16] (2 sequences x 4
    heads, attention_module), then O + q: the exp and the add are kernels of their own."""
    from reference.ir.graph import Function, Module, Op, TensorType

    base = attention_module(2, 4, 65, 16, "bf16").main
    q = TensorType((8, 65, 16), "bf16")
    body = [op for op in base.ops if op.short_name != "return"]
    block = Function(
        "block",
        (("%qraw", q), ("%k", q), ("%v", q)),
        (q,),
        (
            Op("stablehlo.exponential", ("%q",), (q,), ("%qraw",), (q,)),
            *body,
            Op("stablehlo.add", ("%o",), (q,), ("%0", "%qraw"), (q, q)),
            Op("func.return", (), (), ("%o",), (q,)),
        ),
    )
    call = Op("func.call", ("%r",), (q,), ("%a", "%b", "%c"), (q, q, q), callee="block", trip_count=layers)
    main = Function("main", (("%a", q), ("%b", q), ("%c", q)), (q,), (call, Op("func.return", (), (), ("%r",), (q,))))
    return Module((main, block))


@pytest.mark.parametrize("target_name,stack", [("h100", "FlashAttention-2"), ("tpu-v5e", "Pallas flash attention")])
def test_the_attention_kernel_between_other_kernels_of_a_repeated_block(target_name, stack):
    """Three groups in program order, numbered 0, 1, 2, each in the block's instance and run 3
    times: exp, the attention kernel (both dots, the converts, the scale and the whole softmax),
    the add. Its shape: 8 x 65 query rows, 8 KV heads (1 a sequence: attention_module folds the
    heads into the batch), 65 keys of 16, bf16, K and V the block's arguments; the note names the
    stack."""
    from hardware_models.plan import AttentionShape

    plan = compile_plan(_regional_attention(3), get_target(target_name))
    got = [(g.id, g.kind, g.instance, g.repeats) for g in plan.groups]
    assert got == [
        (0, "fusion", "main/0:block", 3),
        (1, "attention", "main/0:block", 3),
        (2, "fusion", "main/0:block", 3),
    ]
    names = sorted(plan.ops[i].op.short_name for i in plan.groups[1].members)
    assert names == [
        "convert",
        "convert",
        "divide",
        "dot_general",
        "dot_general",
        "exponential",
        "multiply",
        "reduce",
        "reduce",
        "subtract",
    ]
    tile = (128, 64) if target_name == "h100" else (128, 128)  # the kernel's block (no causal mask here)
    kv = ("main/0:block%k", "main/0:block%v")
    assert plan.attention == {1: AttentionShape(520, 8, 1, 65, 16, "bf16", kv, stack, skip_tile=tile)}
    assert (
        f"1 attention kernel fused ({stack}): scores stay on chip; each reads Q, K, V and writes O in main memory"
        in plan.notes
    )


@pytest.mark.torch
@pytest.mark.jax
@pytest.mark.parametrize("side", ["torch", "jax"])
def test_a_sliding_window_decode_reads_only_its_window_of_the_cache(side):
    """Mistral-7B-v0.1's 4,096-token window, one decode step against a 4,100-token cache: the
    kernel takes the slice of K and V in, counts 8 KV heads (not the buffer's positions over the
    window's) and reads the window's keys and values, 2 x 8 x 4,096 x 128 x 2 bytes, from HBM."""
    from landscape.lowering import lower_named

    module = lower_named("mistral-7b-v0.1", side, {"batch": 1, "seq": 4100, "mode": "decode", "layers": 1}, "bfloat16")
    target = get_target("h100")
    plan = compile_plan(module.module, target)
    (gid, shape) = next(iter(plan.attention.items()))
    assert (shape.kv_heads, shape.kv_len, shape.kv_positions) == (8, 4096, 4100)
    kv_bytes = 2 * 8 * 4096 * 128 * 2
    assert kv_bytes <= plan.placements[gid].at(target.main_memory_level) < kv_bytes * 1.01
    assert any("the last 4,096 of 4,100 cached positions" in n for n in plan.notes)
