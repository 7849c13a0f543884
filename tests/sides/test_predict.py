"""predict_inference on lowered published models: chips follow capacity, every family answers,
and batch-1 decode is bound by moving weights (memory) or by latency (schedule), not by compute."""

from __future__ import annotations

import pytest

from hardware_models.predict import predict_inference
from hardware_models.target import get_target
from reference.catalogue import CATALOGUE
from reference.models import get_model

pytestmark = [pytest.mark.jax]


def _predict(model, target, chips=None, input_len=128, output_len=32):
    from jax_side.lower import lower_regional

    entry = CATALOGUE[model]
    prefill = lower_regional(model, entry.resolve({"seq": input_len}), "bfloat16").module
    decode = lower_regional(model, entry.resolve({"seq": input_len + output_len, "mode": "decode"}), "bfloat16").module
    cache = get_model(model).kv_cache_bytes(1, input_len + output_len, 2)
    return predict_inference(
        prefill,
        decode,
        get_target(target),
        model=model,
        batch=1,
        input_len=input_len,
        output_len=output_len,
        kv_cache_bytes=cache,
        chips=chips,
    )


def test_kv_cache_worked_number():
    """models.py: llama-3.1-8b, 2304 tokens in bf16: 301,989,888 bytes."""
    assert get_model("llama-3.1-8b").kv_cache_bytes(1, 2304, 2) == 301_989_888


@pytest.mark.parametrize("target", ["h100", "tpu-v5e", "spyre", "groq-lpu", "wse-3"])
def test_every_family_predicts_llama_3_2_1b_at_batch_one(target):
    result = _predict("llama-3.2-1b", target)
    assert 0 < result.decode_step_s < result.ttft_s
    assert result.bottleneck in ("memory", "schedule")


def test_a_70b_model_takes_two_h100s_and_pays_for_its_all_reduces():
    two = _predict("llama-3.1-70b", "h100")
    eight = _predict("llama-3.1-70b", "h100", chips=8)
    assert two.chips == 2 and eight.chips == 8
    assert eight.decode_step_s < two.decode_step_s  # each GPU streams an eighth of the weights
    assert "across 8 chips" in eight.kv_cache_location


def test_the_chips_405b_needs_on_lpus_are_never_refused_past_its_layers():
    """llama-3.1-405b's decode (cache included) needs 3916 LPU chips, more than 31 chips a layer x
    126 layers; the prefill runs on the same chips. The --chips maximum never falls below what the
    program needs (it did once, and predict refused its own partition)."""
    result = _predict("llama-3.1-405b", "groq-lpu", input_len=2048, output_len=256)
    assert result.chips == 3916


@pytest.mark.parametrize(
    "chips, shards, note",
    [(2, 2, "sharded by KV heads"), (8, 8, "sharded by KV heads"), (16, 8, "replicated: 8 KV heads over 16 chips")],
)
def test_the_kv_cache_is_split_by_kv_heads_and_replicated_beyond_them(chips, shards, note):
    """llama-3.2-1b has 8 KV heads: a decode step's attention on N GPUs reads 1/min(N, 8) of the
    cache per GPU (Megatron's and vLLM's sharding), and the plan says when heads are replicated."""
    from hardware_models.estimate import estimate
    from hardware_models.pipelines import compile_plan
    from hardware_models.values import group_inputs
    from landscape.lowering import lower_named

    module = lower_named("llama-3.2-1b", "jax", {"batch": 1, "seq": 1024, "mode": "decode"}, "bfloat16").module
    h100 = get_target("h100")
    plan = compile_plan(module, h100, chips=chips)
    ((gid, shape),) = plan.attention.items()
    assert shape.shards == shards and any(note in n for n in plan.notes)
    graph = plan.value_graph()
    group = plan.groups[gid]
    cache = sum(graph.nbytes(v) for v in group_inputs(plan, graph, group) if v in shape.kv)
    assert cache == 2 * 8 * 1024 * 64 * 2  # K and V of one layer: 8 heads x 1024 tokens x 64 x bf16
    qo = plan.placements[gid].at("hbm") - -(-cache // shards)
    assert 0 < qo < cache / shards  # the rest is this GPU's share of Q and O, far smaller
    assert estimate(module, h100, "", plan).total.time_s > 0


def test_a_replicated_kv_cache_needs_the_chips_that_hold_it():
    """llama-3.2-1b decode, batch 256, 4096 tokens: the cache (34.4 GB) is split by its 8 KV heads;
    past 8 chips each chip holds a whole head's eighth, so the chips chosen must hold that share
    beside their share of the weights, and a forced count that cannot is refused."""
    from hardware_models.passes.shard_tensor_parallel import per_chip_bytes
    from hardware_models.pipelines import compile_plan
    from landscape.lowering import lower_named
    from reference.errors import InvalidShape

    module = lower_named("llama-3.2-1b", "jax", {"batch": 256, "seq": 4096, "mode": "decode"}, "bfloat16").module
    h100 = get_target("h100")
    plan = compile_plan(module, h100)
    p = plan.partition
    assert p.chips == 1  # 2.47 GB of weights + 34.4 GB of cache fit one H100's 72 GB
    small = h100.with_overrides({"levels.hbm.usable_fraction": 0.3})  # 24 GB usable
    plan = compile_plan(module, small)
    assert plan.partition.chips == 2
    assert per_chip_bytes(plan.partition.needed_bytes, 2 * 16 * 256 * 8 * 4096 * 64 * 2, 8, 2) <= int(
        small.usable_main_memory_bytes
    )
    tiny = h100.with_overrides({"levels.hbm.usable_fraction": 0.05})  # 4 GB: one KV head's cache (4.3 GB) does not fit
    with pytest.raises(InvalidShape, match="one KV head's cache"):
        compile_plan(module, tiny)
