"""The serving timeline (hardware_models/predict.py): where decode steps are costed, how they are
summed over the output, and --batch max's arithmetic; each checked by hand."""

from __future__ import annotations

import pytest

from hardware_models.predict import ENGINE_MAX_BATCH, decode_lengths, fewest_chips, integrate_steps, max_batch
from hardware_models.target import get_target
from reference.errors import InvalidShape


def test_the_module_docs_worked_number():
    """t(L) = 1 ms + L us over L = 129..256 (input 128, output 129): 128 ms + 24.64 ms."""
    points = [(length, 1e-3 + length * 1e-6) for length in decode_lengths(128, 129)]
    assert integrate_steps(points, 129, 256) == pytest.approx(0.15264)


@pytest.mark.parametrize(
    "input_len, output_len, expected",
    [
        (128, 1, (129,)),  # no step after the first token: the one that would follow
        (128, 2, (129,)),  # one step, at 129
        (128, 3, (129, 130)),
        (2048, 256, (2049, 2176, 2303)),
    ],
)
def test_steps_are_costed_at_the_first_middle_and_last_cache_length(input_len, output_len, expected):
    assert decode_lengths(input_len, output_len) == expected


def test_interpolation_is_exact_for_a_linear_step_and_flat_beyond_the_points():
    points = [(10, 2.0), (20, 4.0)]
    assert integrate_steps(points, 10, 20) == pytest.approx(sum(2.0 + 0.2 * (n - 10) for n in range(10, 21)))
    assert integrate_steps(points, 5, 9) == pytest.approx(5 * 2.0)
    assert integrate_steps(points, 21, 22) == pytest.approx(2 * 4.0)


def test_max_batch_is_what_fits_beside_the_weights_capped_at_the_engine_maximum():
    h100 = get_target("h100")
    usable = int(h100.usable_main_memory_bytes)
    assert max_batch(h100, 1, usable - 10 * 1000, 1000, 8)[0] == 10
    assert (
        max_batch(h100, 2, 2 * usable - 20 * 1000, 2000, 8)[0] == 10
    )  # a chip: half the weights (10 kB left), half of each 2 kB cache
    batch, note = max_batch(h100, 1, 8 * 10**9, 10**6, 8)
    assert batch == ENGINE_MAX_BATCH and "capped at the engine maximum 2048" in note


def test_max_batch_counts_a_replicated_cache_on_every_chip_that_holds_it():
    """8 KV heads over 16 chips: each chip holds one head, 1/8 of every sequence's cache (not
    1/16), so the batch is what 1/8 shares fit beside 1/16 of the weights."""
    h100 = get_target("h100")
    usable = int(h100.usable_main_memory_bytes)
    weights, sequence = 16 * 10**9, 8 * 10**6
    batch, note = max_batch(h100, 16, weights, sequence, 8)
    assert batch == min(ENGINE_MAX_BATCH, (usable - weights // 16) // (sequence // 8)) and "1/8 of it a chip" in note
    assert max_batch(h100, 16, weights, sequence, 8)[0] == max_batch(h100, 8, weights // 2, sequence, 8)[0]


def test_fewest_chips_hold_the_weights_and_one_sequence():
    h100 = get_target("h100")
    usable = int(h100.usable_main_memory_bytes)
    assert fewest_chips(h100, usable // 2, 1000, 8) == 1
    assert fewest_chips(h100, 3 * usable, 1000, 8) == 4


def test_max_batch_refuses_when_no_sequence_fits_and_on_sram_targets():
    h100 = get_target("h100")
    with pytest.raises(InvalidShape, match="less than one sequence's cache"):
        max_batch(h100, 1, int(h100.usable_main_memory_bytes), 1, 8)
    with pytest.raises(InvalidShape, match="wafers are added as it grows.*give --batch N, an integer >= 1"):
        max_batch(get_target("wse-3"), 1, 1, 1, 8)


def test_predict_of_a_program_costed_by_hand_equals_the_hand_computation():
    """A stand-in model whose every kernel is one f32 add on an H100, costed by hand from the
    target file: t = 3 x 4 B x n / (HBM bandwidth x hbm_efficiency) + launch overhead. Prefill
    adds 2^20 elements; a decode step at cache length L adds 1024 L (a step that reads its cache),
    so the step time is linear in L and the integrated decode is exact:
    decode = sum over L = 129..256 of t(1024 L), per-user rate = 128 / decode."""
    from hardware_models.predict import predict_inference
    from hardware_models.target import get_target
    from tests.hardware_models.programs import elementwise

    h100 = get_target("h100")
    bw = h100["levels.hbm.bytes_per_s"] * h100["fitted.hbm_efficiency"]

    def t(n):
        return 3 * 4 * n / bw + h100["schedule.launch_overhead_s"]

    decodes = [(length, elementwise(1024 * length, "f32")) for length in decode_lengths(128, 129)]
    p = predict_inference(
        elementwise(1 << 20, "f32"),
        decodes,
        h100,
        model="stand-in",
        batch=1,
        input_len=128,
        output_len=129,
        kv_cache_bytes=0,
    )
    decode = sum(t(1024 * length) for length in range(129, 257))
    assert p.ttft_s == pytest.approx(t(1 << 20), rel=1e-12)
    assert p.decode_total_s == pytest.approx(decode, rel=1e-12)
    assert p.tokens_per_s_per_user == pytest.approx(128 / decode, rel=1e-12)
    assert p.throughput_tokens_per_s == pytest.approx(129 / (t(1 << 20) + decode), rel=1e-12)
