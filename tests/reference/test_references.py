"""The float64 references obey the mathematical identities that define each kernel."""

import numpy as np
import pytest

from reference.catalogue import get_entry
from reference.catalogue.attention import apply_rope, attention, rope_cos_sin, rope_inv_freq
from reference.catalogue.elementwise import gelu, log_softmax, softmax
from reference.catalogue.mlp import mlp, route
from reference.catalogue.transformer import block_forward, config_for, decoder_forward
from reference.inputs import make_case


def _case(name, dtype="float32", seed=0, **shapes):
    entry = get_entry(name)
    case = make_case(entry, entry.resolve(shapes), dtype, seed)
    return case, case.float64_inputs(), case.float64_weights()


def test_same_seed_gives_identical_inputs_and_a_new_seed_different_ones():
    a, b, c = (_case("block", seed=s)[0] for s in (0, 0, 1))
    assert all(np.array_equal(a.weights[k], b.weights[k]) for k in a.weights)
    assert not np.array_equal(a.inputs["x"], c.inputs["x"])


def test_inputs_are_exactly_representable_in_the_dtype():
    case, x, _ = _case("matmul", "bfloat16")
    assert case.inputs["a"].dtype.name == "bfloat16"
    assert np.array_equal(x["a"].astype(case.inputs["a"].dtype).astype(np.float64), x["a"])


def test_softmax_rows_sum_to_one_and_survive_large_logits():
    x = np.array([[1000.0, 1000.0, -1000.0]])
    np.testing.assert_allclose(softmax(x).sum(-1), 1.0)
    np.testing.assert_allclose(np.exp(log_softmax(x)), softmax(x))


def test_gelu_tanh_form_is_close_to_erf_form():
    x = np.linspace(-4, 4, 101)
    assert np.max(np.abs(gelu(x, "tanh") - gelu(x))) < 1e-3  # Hendrycks & Gimpel: max error ~4.7e-4


def test_rope_is_a_rotation_and_preserves_norms():
    x = np.random.default_rng(0).standard_normal((1, 2, 65, 64))
    cos, sin = rope_cos_sin(np.arange(65), rope_inv_freq(64, 10000.0))
    np.testing.assert_allclose(np.linalg.norm(apply_rope(x, cos, sin), axis=-1), np.linalg.norm(x, axis=-1))


def test_rope_rotates_each_pair_by_its_angle_in_the_hf_orientation_computed_by_hand():
    """head_dim 4, theta 100: pairs (x0, x2) and (x1, x3) turn by p * 100^0 = p and p * 100^(-1/2)
    = p / 10 radians, counter-clockwise: x0' = x0 cos - x2 sin, x2' = x2 cos + x0 sin (HF Llama's
    rotate_half([x1, x2]) = [-x2, x1]). A sign flip or a swapped half fails this; norms and
    relative positions cannot see either."""
    import math

    x = np.array([1.0, 2.0, 3.0, 4.0]).reshape(1, 1, 1, 4)
    p = 2
    out = apply_rope(x, *rope_cos_sin([p], rope_inv_freq(4, 100.0))).ravel()
    a, b = p * 1.0, p * 0.1
    expected = [
        1 * math.cos(a) - 3 * math.sin(a),
        2 * math.cos(b) - 4 * math.sin(b),
        3 * math.cos(a) + 1 * math.sin(a),
        4 * math.cos(b) + 2 * math.sin(b),
    ]
    np.testing.assert_allclose(out, expected, rtol=1e-15)


def test_rope_scores_depend_only_on_relative_position():
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((1, 1, 1, 16)), rng.standard_normal((1, 1, 1, 16))
    inv = rope_inv_freq(16, 10000.0)
    rotated = lambda x, pos: apply_rope(x, *rope_cos_sin([pos], inv)).ravel()
    score = lambda m, n: float(rotated(q, m) @ rotated(k, n))
    assert score(7, 3) == pytest.approx(score(104, 100))


def test_llama3_scaling_keeps_high_frequencies_and_divides_low_ones():
    scaling = dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=8192)
    plain, scaled = rope_inv_freq(128, 500000.0), rope_inv_freq(128, 500000.0, scaling)
    assert scaled[0] == plain[0]
    assert scaled[-1] == pytest.approx(plain[-1] / 8)


def test_causal_attention_first_query_sees_only_the_first_key():
    _, x, _ = _case("attention", n_heads=2, n_kv_heads=1, seq=5)
    out = attention(x["q"], x["k"], x["v"], causal=True)
    np.testing.assert_allclose(out[:, :, 0], np.repeat(x["v"][:, :, 0], 2, axis=1))


def test_gqa_equals_mha_with_repeated_kv_heads():
    _, x, _ = _case("attention", n_heads=4, n_kv_heads=2)
    mha = attention(x["q"], np.repeat(x["k"], 2, axis=1), np.repeat(x["v"], 2, axis=1), causal=True)
    np.testing.assert_allclose(attention(x["q"], x["k"], x["v"], causal=True), mha)


def test_conv2d_with_a_1x1_kernel_is_a_matmul_over_channels():
    case, x, w = _case("conv2d", kernel=1, padding=0)
    y = case.reference()[0]
    expected = np.einsum("bchw,oc->bohw", x["x"], w["weight"][:, :, 0, 0]) + w["bias"][None, :, None, None]
    np.testing.assert_allclose(y, expected)


def test_routing_keeps_exactly_top_k_experts_summing_to_one():
    logits = np.random.default_rng(2).standard_normal((65, 8))
    weights = route(logits, 2)
    assert (np.count_nonzero(weights, axis=-1) == 2).all()
    np.testing.assert_allclose(weights.sum(-1), 1.0)


def test_moe_with_one_expert_is_that_experts_swiglu():
    case, x, w = _case("moe", n_experts=1, top_k=1)
    expert = {k.removeprefix("experts.0."): v for k, v in w.items()}
    np.testing.assert_allclose(case.reference()[0], mlp(x["x"], expert, "swiglu"))


def test_generator_keeps_router_choices_away_from_ties():
    from reference.catalogue.mlp import router_margin_ok

    case, x, w = _case("moe", "bfloat16", m=129)
    assert router_margin_ok(x["x"] @ w["router.weight"].T, 2).all()


@pytest.mark.parametrize("style", ["llama", "gpt2"])
def test_decode_step_matches_the_last_row_of_prefill(style):
    """A KV cache is an optimization: decoding token S-1 after S-1 cached tokens equals prefill."""
    case, x, w = _case("block", style=style, seq=9)
    cfg = config_for("block", case.shapes)
    y_full, k_full, v_full = block_forward(cfg, x["x"], w)
    _, k_past, v_past = block_forward(cfg, x["x"][:, :-1], w)
    # The decode step's cache buffers hold the whole sequence, the new token's slot last; whatever
    # that slot holds is overwritten (garbage here, to prove it).
    slot = np.full_like(k_past[:, :, :1], 1e3)
    k_buf, v_buf = np.concatenate([k_past, slot], axis=2), np.concatenate([v_past, -slot], axis=2)
    y_last, k_all, v_all = block_forward(cfg, x["x"][:, -1:], w, "", k_buf, v_buf)
    np.testing.assert_allclose(y_last, y_full[:, -1:], atol=1e-12)
    np.testing.assert_allclose(k_all, k_full, atol=1e-12)


def test_decoder_decode_matches_prefill_logits():
    case, x, w = _case("decoder", seq=6, style="gpt2")
    cfg = config_for("decoder", case.shapes)
    ids = x["ids"]
    full = decoder_forward(cfg, ids, w)
    # Build the cache of the first S-1 tokens layer by layer, then decode the last token.
    h = w["embed.weight"][ids[:, :-1]] + w["pos_embed.weight"][: ids.shape[1] - 1]
    ks, vs = [], []
    for i in range(cfg.n_layers):
        h, k, v = block_forward(cfg, h, w, f"layers.{i}.")
        ks.append(k)
        vs.append(v)
    pad = [(0, 0)] * 2 + [(0, 1)] + [(0, 0)]  # the new token's slot, last in each layer's buffer
    ks = [np.pad(k, pad, constant_values=7.0) for k in ks]
    vs = [np.pad(v, pad, constant_values=-7.0) for v in vs]
    last = decoder_forward(cfg, ids[:, -1:], w, np.stack(ks), np.stack(vs))
    np.testing.assert_allclose(last, full[:, -1:], atol=1e-10)


def test_clone_of_65_elements_is_exact():
    case, x, _ = _case("clone", n=65)
    assert np.array_equal(case.reference()[0], x["x"])


@pytest.mark.parametrize(
    "tokens, n, k, expected",
    [
        (1, 8, 2, (2, 1)),  # one token: exactly its k experts, 8 (1 - 6/8) = 2
        (2, 8, 2, (4, 1)),  # 8 (1 - (6/8)^2) = 8 x 7/16 = 3.5 -> 4 experts; 2 x 2 rows over 4: 1 each
        (65, 8, 2, (8, 17)),  # (6/8)^65 = 7.6e-9: all 8; 130 rows over 8: ceil 16.25 = 17
        (1, 64, 6, (6, 1)),  # DeepSeek-like routing: 64 (1 - 58/64) = 6
        (2, 64, 6, (12, 1)),  # 64 (1 - 3364/4096) = 11.4375 -> 12; 12 rows over 12
        (65, 64, 6, (64, 7)),  # (58/64)^65 = 0.00166: 63.89 -> 64; 390 rows over 64: ceil 6.09 = 7
    ],
)
def test_expected_distinct_experts_by_hand(tokens, n, k, expected):
    """Figures worked by hand from n (1 - (1 - k/n)^T) (reference/catalogue/mlp.py expert_capacity)
    at T = 1, 2 and 65: a formula with T - 1 tokens gives 1 expert for one token, and fails here."""
    from reference.catalogue.mlp import expert_capacity

    assert expert_capacity(tokens, n, k) == expected


def test_a_residual_stream_that_does_not_cancel_leaves_the_decoders_bound_near_its_outputs():
    """residual_terms: additions that do not cancel (the defaults, and a published model's first
    layer) give a scale within 1.5x of max|ref|, so the bound stays tight where nothing cancels;
    at d_model 2 (seed 1) row 22's stream cancels to a tenth of its additions and the scale
    grows past 5x."""
    for name, shapes in (("decoder", {}), ("block", {}), ("llama-3.1-8b", {"layers": 1, "seq": 8})):
        entry = get_entry(name)
        case = make_case(entry, entry.resolve(shapes), "float16", 0)
        largest = max(float(np.abs(r).max()) for r in case.reference())
        assert 0 < case.term_scale() < 1.5 * largest, name
    tiny = {"seq": 63, "vocab": 129, "layers": 2, "n_heads": 1, "n_kv_heads": 1, "head_dim": 2, "d_ff": 1}
    entry = get_entry("decoder")
    case = make_case(entry, entry.resolve(tiny), "float16", 1)
    assert case.term_scale() > 5 * float(np.abs(case.reference()[0]).max())
