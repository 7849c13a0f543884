"""A training step: what autodiff saves (hand counts), the fused attention backward, and the
layout arithmetic of hardware_models/train.py (each formula checked against a hand computation)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from reference.models import get_model

pytestmark = [pytest.mark.jax]

# An odd Llama-style layer: GQA (6 query heads over 2 KV heads), head_dim 8, d_ff 40.
CFG = dataclasses.replace(
    get_model("tiny"), name="odd", d_model=48, n_heads=6, n_kv_heads=2, head_dim=8, d_ff=40, n_layers=3, vocab=97
)


def _hand_count(cfg, recompute: str, tokens: int) -> int:
    """Bytes one layer keeps for its backward, in bfloat16 (2 B), counted by hand from the block
    (jax_side/layers.py) and Flax's RMSNorm:

        full        the layer's input x: 2 D a token (Korthikanti et al. 2022's "2sbh")
        selective   x, and the matmuls' outputs the backward reads: q (Hq), k, v (Hk each),
                    o_proj's (D: the second norm reads x + it), gate and up (F each)
        none        per RMSNorm (two): x^2, x - 0, and x * rsqrt in float32 (3 x 4 D), the
                    normalized bf16 output (2 D), rsqrt and its square (2 x 4 B); RoPE's cos
                    and sin for q and k (4 x 2 head_dim); q, k, v into the attention core and its
                    output (2 (Hq + 2 Hk) + 2 Hq); SwiGLU's gate and up outputs, silu's three
                    residuals and their product (6 x 2 F). Not a token's: each norm's scale
                    cast to float32 (4 D).
    """
    d, f, hq, hk, hd = cfg.d_model, cfg.d_ff, cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim, cfg.head_dim
    if recompute == "full":
        return tokens * 2 * d
    if recompute == "selective":
        return tokens * 2 * (d + hq + 2 * hk + d + 2 * f)
    per_token = 2 * (3 * 4 * d + 2 * d + 2 * 4) + 4 * 2 * hd + 2 * (hq + 2 * hk) + 2 * hq + 6 * 2 * f
    return tokens * per_token + 2 * 4 * d


@pytest.mark.parametrize("tokens", [1, 63, 65])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_saved_activations_of_a_layer_equal_the_hand_count(recompute, tokens):
    """A rule of JAX's autodiff under each checkpoint policy: what one layer keeps for its backward
    (`saved_residuals`, weights left out) equals the hand count, at odd token counts."""
    from jax_side.train import lower_train_parts

    parts = lower_train_parts(CFG, 1, tokens, "bfloat16", recompute)
    assert parts.saved_bytes["block"] == _hand_count(CFG, recompute, tokens)


def test_recomputation_orders_the_saved_bytes():
    """A property: saving less means recomputing more; full < selective < none."""
    from jax_side.train import lower_train_parts

    saved = [lower_train_parts(CFG, 2, 33, "bfloat16", rc).saved_bytes["block"] for rc in ("full", "selective", "none")]
    assert saved == sorted(saved) and len(set(saved)) == 3


@pytest.fixture(scope="module")
def parts():
    from jax_side.train import lower_train_parts

    return lower_train_parts(CFG, 2, 65, "bfloat16", "none")


def test_each_part_returns_a_gradient_for_every_weight(parts):
    """The lowered step is a real backward: every part's program returns one tensor shaped like
    each of its weights (the gradients), and the layer's has the forward's 7 matmuls x 3."""
    from reference.ir import category

    for name, low in parts.parts.items():
        args = low.module.main.args
        weights = sorted(str(args[i][1]) for i in low.param_args)
        outputs = [str(t) for t in low.module.main.results]
        for w in weights:
            assert w in outputs, (name, w)
    dots = [op for op in parts.parts["block"].module.main.ops if category(op) == "contraction"]
    assert len(dots) >= 3 * 7


def test_attention_backward_is_one_kernel_reading_q_k_v_do(parts):
    """A rule of FlashAttention's backward: the recomputed scores never reach main memory; the
    kernel reads Q, K, V and dO and writes dQ, dK and dV: 2 B x B x T x (3 Hq + 4 Hk)."""
    from hardware_models.pipelines import compile_plan
    from hardware_models.target import load_targets
    from hardware_models.values import group_inputs, group_outputs

    target = load_targets()["h100"]
    plan = compile_plan(parts.parts["block"].module, target)
    graph = plan.value_graph()
    backward = [g for g in plan.groups if g.id in plan.attention and plan.attention[g.id].stack.endswith("backward")]
    forward = [g for g in plan.groups if g.id in plan.attention and not plan.attention[g.id].stack.endswith("backward")]
    assert len(backward) == 1 and len(forward) == 1
    (g,) = backward
    moved = [
        v for v in group_inputs(plan, graph, g) + group_outputs(plan, graph, g) if graph.types[graph.root(v)].shape
    ]
    hq, hk = CFG.n_heads * CFG.head_dim, CFG.n_kv_heads * CFG.head_dim
    masks = [v for v in moved if graph.types[graph.root(v)].dtype == "i1"]  # the causal mask, a constant
    assert sum(graph.nbytes(v) for v in moved if v not in masks) == 2 * 2 * 65 * (3 * hq + 4 * hk)
    shape = plan.attention[g.id]
    assert (shape.kv_heads, shape.kv_len, shape.head_dim, shape.causal_queries) == (2 * 2, 65, 8, 65)
    dots = [i for i in g.members if plan.ops[i].op.short_name == "dot_general"]
    assert len(dots) == 5  # S again, dP, dV, dQ, dK


# ---------------------------------------------------------------- the layout arithmetic


@pytest.fixture(scope="module")
def eight_b_parts():
    """Costed parts of a small stand-in for the layout tests (layers of CFG, seq 64)."""
    from jax_side.train import lower_train_parts

    return lambda mb, rc: lower_train_parts(CFG, mb, 64, "bfloat16", rc)


def _predict(lower, target="h100", **kw):
    from hardware_models.target import load_targets
    from hardware_models.train import predict_training

    t = load_targets()[target]
    args = dict(chips=8, global_batch=16, seq=64, dtype_bytes=2, peak_flop_per_s=t.peak_16bit_flop_per_s)
    args.update(kw)
    return predict_training(lower, t, CFG, **args)


def test_pipeline_formula_by_hand(eight_b_parts):
    """The 1F1B formula: step = (m + pp - 1) x (t_stage + t_p2p) + exposed sync + optimizer, with
    t_stage = ceil(layers / pp) x t_layer + the heavier end part."""
    r = _predict(eight_b_parts, tp=1, pp=2, dp=4, microbatch=1, recompute="none", shard="none")
    t = r.terms
    m = 16 // (4 * 1)
    assert r.microbatches == m
    assert t["pipeline_s"] == pytest.approx((m + 1) * (t["t_stage"] + t["t_p2p"]))
    assert t["bubble_s"] == pytest.approx(1 * (t["t_stage"] + t["t_p2p"]))
    ends = max(r.parts["prologue"], r.parts["epilogue"])
    assert t["t_stage"] == pytest.approx(math.ceil(3 / 2) * t["t_layer"] + ends, rel=1e-9)
    assert t["step_s"] == pytest.approx(t["pipeline_s"] + t["exposed_dp_s"] + t["optimizer_s"])


def test_memory_a_chip_by_hand(eight_b_parts):
    """ZeRO's accounting: 2 + 2 bytes a weight for bf16 weights and gradients on every replica,
    12 for the float32 master and moments, divided by dp when the optimizer is sharded."""
    none = _predict(eight_b_parts, tp=1, pp=1, dp=8, microbatch=2, recompute="full", shard="none")
    opt = _predict(eight_b_parts, tp=1, pp=1, dp=8, microbatch=2, recompute="full", shard="optimizer")
    full = _predict(eight_b_parts, tp=1, pp=1, dp=8, microbatch=2, recompute="full", shard="full")
    n = none.weights
    assert none.memory["weights"] == 2 * n and none.memory["optimizer"] == 12 * n
    assert opt.memory["optimizer"] == math.ceil(12 * n / 8) and opt.memory["weights"] == 2 * n
    d, f, hd = CFG.d_model, CFG.d_ff, CFG.head_dim
    layer = 2 * d + d * CFG.n_heads * hd * 2 + d * CFG.n_kv_heads * hd * 2 + 3 * d * f
    gathered = 2 * 2 * layer  # FSDP: the running layer's and the prefetched one's weights, in bf16
    assert full.memory["weights"] == math.ceil(2 * n / 8) + gathered
    assert full.memory["gradients"] == math.ceil(2 * n / 8)
    assert none.memory["activations"] == opt.memory["activations"]


def test_weights_counted_once(eight_b_parts):
    """The model's weights: embedding + layers x one layer's + the final norm and head."""
    r = _predict(eight_b_parts, tp=1, pp=1, dp=8, microbatch=2)
    d, f, v, hd = CFG.d_model, CFG.d_ff, CFG.vocab, CFG.head_dim
    layer = 2 * d + d * CFG.n_heads * hd * 2 + d * CFG.n_kv_heads * hd * 2 + 3 * d * f
    head = 0 if CFG.tie_embeddings else v * d
    assert r.weights == v * d + CFG.n_layers * layer + d + head


def test_search_keeps_what_the_user_fixed(eight_b_parts):
    """The search only chooses what is not given, and what it returns fits a chip."""
    r = _predict(eight_b_parts, tp=2, recompute="selective")
    assert r.layout.tp == 2 and r.layout.recompute == "selective"
    assert r.layout.tp * r.layout.pp * r.layout.dp == 8
    assert r.memory["total"] <= r.memory["capacity"]


@pytest.mark.parametrize(
    "kw, needle",
    [
        (dict(tp=3), "tp=3 is invalid; must divide the model's 2 KV heads"),
        (dict(tp=4), "tp=4 is invalid; must divide the model's 6 attention heads"),
        (dict(pp=3, chips=8), "multiple of pp = 3"),
        (dict(tp=2, pp=2, dp=4), "multiple of tp x pp x dp = 16"),
        (dict(tp=2, pp=1, dp=2), "must equal tp x pp x dp = 4"),
        (dict(pp=8), "at most the model's 3 layers"),
        (dict(global_batch=3, microbatch=2), "dp x microbatch must divide the global batch"),
    ],
)
def test_impossible_layouts_are_refused_by_name(eight_b_parts, kw, needle):
    """Bad input: a layout that cannot hold is refused with the rule it breaks."""
    from reference.errors import InvalidShape

    with pytest.raises(InvalidShape, match=needle):
        _predict(eight_b_parts, **kw)


def test_a_model_too_large_names_what_a_chip_needs():
    """Bad input: no layout fits; the error names the smallest layout's bytes and the fix."""
    from reference.errors import InvalidShape

    big = dataclasses.replace(CFG, d_model=4096, n_heads=32, n_kv_heads=8, head_dim=128, d_ff=14336, n_layers=64)
    from jax_side.train import lower_train_parts

    with pytest.raises(InvalidShape, match="no layout fits h100's .* give more --chips"):
        from hardware_models.target import load_targets
        from hardware_models.train import predict_training

        t = load_targets()["h100"]
        predict_training(
            lambda mb, rc: lower_train_parts(big, mb, 64, "bfloat16", rc),
            t,
            big,
            chips=1,
            global_batch=1,
            seq=64,
            dtype_bytes=2,
            peak_flop_per_s=t.peak_16bit_flop_per_s,
        )


def test_tensor_parallel_all_reduces_by_hand(eight_b_parts):
    """Megatron's count: 4 all-reduces of the hidden state a layer (6 under full recomputation),
    each the ring's 2 (tp - 1) / tp x bytes over the bus + the collective latency."""
    from hardware_models.target import load_targets

    t = load_targets()["h100"]
    bus = t.get("fitted.allreduce_bus_bytes_per_s") or t["interconnect.allreduce_bus_bytes_per_s"]
    hidden = 2 * 64 * CFG.d_model * 2  # microbatch 2 x seq 64 x d_model x 2 B
    one = t["schedule.collective_latency_s"] + 2 * (2 - 1) / 2 * hidden / bus
    for rc, n in (("none", 4), ("full", 6)):
        r = _predict(eight_b_parts, tp=2, pp=1, dp=4, microbatch=2, recompute=rc, shard="none")
        assert r.terms["tp_comm_per_layer_s"] == pytest.approx(n * one)


def test_interleaved_pipeline_by_hand(eight_b_parts):
    """Narayanan et al. 2021's interleaved 1F1B: vp virtual stages a chip divide the bubble by vp
    and multiply the point-to-point sends by vp; the layer costs are the same graphs'."""
    from hardware_models.target import load_targets
    from hardware_models.train import predict_training

    four = dataclasses.replace(CFG, n_layers=4)
    t = load_targets()["h100"]
    args = dict(chips=8, global_batch=16, seq=64, dtype_bytes=2, peak_flop_per_s=t.peak_16bit_flop_per_s)
    fixed = dict(tp=2, pp=2, dp=2, microbatch=1, recompute="none", shard="none")
    plain = predict_training(eight_b_parts, t, four, **args, **fixed, vp=1)
    two = predict_training(eight_b_parts, t, four, **args, **fixed, vp=2)
    m = 16 // 2
    assert two.terms["t_p2p"] == pytest.approx(2 * plain.terms["t_p2p"])
    assert two.terms["t_stage"] == pytest.approx(plain.terms["t_stage"])
    assert two.terms["pipeline_s"] == pytest.approx((m + 1 / 2) * (two.terms["t_stage"] + two.terms["t_p2p"]))
    assert two.terms["bubble_s"] == pytest.approx((2 - 1) / 2 * (two.terms["t_stage"] + two.terms["t_p2p"]))
    # the first stage holds (1 + (pp - 1) / (pp vp)) times the plain schedule's layers of activations
    layer = plain.memory["activations"]
    assert two.memory["activations"] > layer


def test_virtual_stages_must_divide_the_layers(eight_b_parts):
    """Bad input: vp needs pp >= 2 and pp x vp dividing the layers (3 here)."""
    from reference.errors import InvalidShape

    with pytest.raises(InvalidShape, match="pp x vp dividing the model's 3 layers"):
        _predict(eight_b_parts, tp=2, pp=2, vp=2)


def test_virtual_stages_need_microbatches_a_multiple_of_pp(eight_b_parts):
    """Bad input: the interleaved schedule runs the microbatches in groups of pp (Megatron-LM's
    rule); 2 microbatches a replica over pp 4 cannot interleave, and the search never picks it."""
    from hardware_models.target import load_targets
    from hardware_models.train import predict_training
    from reference.errors import InvalidShape

    eight = dataclasses.replace(CFG, n_layers=8)
    t = load_targets()["h100"]
    args = dict(chips=8, global_batch=4, seq=64, dtype_bytes=2, peak_flop_per_s=t.peak_16bit_flop_per_s)
    with pytest.raises(InvalidShape, match=r"microbatches a replica \(2\) to be a multiple of pp = 4"):
        predict_training(eight_b_parts, t, eight, **args, tp=1, pp=4, dp=2, microbatch=1, vp=2)
    searched = predict_training(eight_b_parts, t, eight, **args, tp=1, pp=4, dp=2, microbatch=1)
    assert searched.layout.vp == 1


def test_the_search_tries_every_divisor_of_the_chips(eight_b_parts):
    """A property of the search: 3 chips and a global batch of 3 hold (tp 1 with pp 3 or dp 3),
    though 3 is no power of two."""
    r = _predict(eight_b_parts, chips=3, global_batch=3, recompute="none", shard="none")
    assert r.layout.tp * r.layout.pp * r.layout.dp == 3 and r.layout.tp == 1


def test_gradient_sync_overlaps_only_the_last_microbatch(eight_b_parts):
    """Gradient accumulation defers the all-reduce to the last microbatch, so only that
    microbatch's pass hides it: exposed = max(0, all-reduce - t_stage); with FSDP each of the m
    microbatches gathers and reduces (1.5 all-reduces), each hidden behind its own pass."""
    t = _predict(eight_b_parts, tp=1, pp=1, dp=8, microbatch=1, recompute="none", shard="none").terms
    assert t["exposed_dp_s"] == pytest.approx(max(0.0, t["dp_comm_s"] - t["t_stage"]))
    full = _predict(eight_b_parts, tp=1, pp=1, dp=8, microbatch=1, recompute="none", shard="full")
    m, ft = full.microbatches, full.terms
    assert ft["dp_comm_s"] == pytest.approx(1.5 * m * t["dp_comm_s"])
    assert ft["exposed_dp_s"] == pytest.approx(m * max(0.0, 1.5 * t["dp_comm_s"] - ft["t_stage"]))


@pytest.mark.parametrize("target", ["groq-lpu", "wse-3", "host-cpu", "spyre", "tpu-v5e", "mi300x"])
def test_every_family_costs_a_one_chip_step(eight_b_parts, target):
    """A rule of the tool: a step is costed on every family; on one chip no collective runs, so
    no family's link keys are read (the LPU, the wafer and the host CPU have no all-reduce bus)."""
    r = _predict(eight_b_parts, target=target, chips=1, global_batch=2, microbatch=1, recompute="none", shard="none")
    assert r.step_s > 0 and r.terms["dp_comm_s"] == 0 and r.terms["tp_comm_per_layer_s"] == 0


def test_a_host_cpu_step_on_two_chips_is_refused(eight_b_parts):
    """Bad input: host CPUs have no network between them (Family.allreduce is None)."""
    from reference.errors import InvalidShape

    with pytest.raises(InvalidShape, match="host-cpu's chips have no network between them; train it on --chips 1"):
        _predict(eight_b_parts, target="host-cpu", chips=2, global_batch=2, microbatch=1, tp=1, pp=1)


def test_the_lpu_ring_by_hand():
    """The LPU's all-reduce (lpu/cost.py): 2 (N - 1) hop latencies + 2 (N - 1) / N x bytes over
    the chip's 16 links of 14 GB/s (groq-lpu.toml)."""
    from hardware_models.target import load_targets

    t = load_targets()["groq-lpu"]
    cost = t.family_record.allreduce(t, 8192, 4, 4)
    assert cost.time_s == pytest.approx(2 * 3 * 5e-7 + 2 * 3 / 4 * 8192 / (16 * 14e9))


def test_mfu_counts_the_experts_a_token_runs_through():
    """PaLM's model FLOPs count the weights a token multiplies: of Mixtral-8x7B's 46.7B (Mistral
    AI's figure) a token runs 12.9B, embedding included; the LM head counts, the table does not."""
    from hardware_models.train import active_weights

    cfg = get_model("mixtral-8x7b")
    d, f, hd = cfg.d_model, cfg.d_ff, cfg.head_dim
    layer = 2 * d + d * cfg.n_heads * hd * 2 + d * cfg.n_kv_heads * hd * 2 + cfg.n_experts * (3 * d * f + d)
    total = 2 * cfg.vocab * d + cfg.n_layers * layer + d
    assert total == pytest.approx(46.7e9, rel=0.01)
    assert active_weights(cfg, total) + cfg.vocab * d == pytest.approx(12.9e9, rel=0.01)
