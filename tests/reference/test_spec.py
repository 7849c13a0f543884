"""Shape parameters parse, check their constraints and fail with one-line typed errors."""

import pytest

from reference.catalogue import CATALOGUE, get_entry
from reference.errors import InvalidShape, MalformedInput, UnknownName
from reference.spec import parse_assignments


def test_every_entry_resolves_its_own_defaults():
    for entry in CATALOGUE.values():
        shapes = entry.resolve()
        assert set(shapes) == {p.name for p in entry.params}


def test_overrides_are_parsed_from_strings():
    assert get_entry("matmul").resolve({"m": "65"})["m"] == 65


@pytest.mark.parametrize("value", ["0", "-3"])
def test_sizes_below_one_are_rejected(value):
    with pytest.raises(InvalidShape, match="must be >= 1"):
        get_entry("matmul").resolve({"k": value})


def test_non_integer_size_is_rejected():
    with pytest.raises(InvalidShape, match="expected an integer"):
        get_entry("matmul").resolve({"k": "big"})


def test_unknown_parameter_names_the_valid_ones():
    with pytest.raises(UnknownName, match="valid: m, n, k"):
        get_entry("matmul").resolve({"q": 3})


def test_heads_must_divide_by_kv_heads():
    with pytest.raises(InvalidShape, match="divisible by n_kv_heads"):
        get_entry("attention").resolve({"n_heads": 6, "n_kv_heads": 4})


def test_head_dim_must_be_even_for_rope():
    with pytest.raises(InvalidShape, match="multiple of 2"):
        get_entry("rope").resolve({"head_dim": 63})


def test_choice_parameter_lists_its_choices():
    with pytest.raises(UnknownName, match="prefill, decode"):
        get_entry("block").resolve({"mode": "train"})


def test_unknown_entry_suggests_the_close_match():
    with pytest.raises(UnknownName, match="did you mean 'attention'"):
        get_entry("atention")


def test_conv_window_must_fit_the_padded_input():
    with pytest.raises(InvalidShape, match="height"):
        get_entry("conv2d").resolve({"height": 1, "padding": 0, "kernel": 3})


def test_top_k_cannot_exceed_experts():
    with pytest.raises(InvalidShape, match="top_k"):
        get_entry("moe").resolve({"n_experts": 2, "top_k": 3})


def test_gpt2_seq_is_bounded_by_learned_positions():
    with pytest.raises(InvalidShape, match="1024"):
        get_entry("gpt2-small").resolve({"seq": 1025})


@pytest.mark.parametrize("item", ["m", "=3", "m="])
def test_malformed_assignment_is_rejected(item):
    with pytest.raises(MalformedInput):
        parse_assignments([item])


# Hostile input: what `int()` would quietly accept, and shapes beyond int64.


@pytest.mark.parametrize("value", ["1_6", "16.0", "0x10", "1e3", "١٦", "", "16 16"])
def test_only_plain_decimal_digits_are_a_size(value):
    """`--shape m=1_6` used to run as m=16 (Python's int() takes underscores, Arabic digits...)."""
    with pytest.raises(InvalidShape, match="plain decimal digits"):
        get_entry("matmul").resolve({"m": value})


def test_plain_digits_with_a_sign_still_parse():
    assert get_entry("matmul").resolve({"m": "+65", "n": " 7 "})["m"] == 65
    with pytest.raises(InvalidShape, match="must be >= 1"):
        get_entry("matmul").resolve({"m": "-1"})


@pytest.mark.parametrize("value", [str(2**63), "9" * 30, "9" * 5000])
def test_an_extent_beyond_int64_is_refused_by_name(value):
    """Even past int()'s 4300-digit limit, the message names int64 rather than a ValueError."""
    with pytest.raises(InvalidShape, match=r"m=.*must be <= 9223372036854775807 \(int64\)"):
        get_entry("matmul").resolve({"m": value})


def test_a_tensor_whose_byte_count_overflows_int64_is_named():
    """XLA failed with 'Bad StatusOr access: overflow in static extent product' on m=2**63-1."""
    with pytest.raises(InvalidShape, match=r"tensor a=\(9223372036854775807, 64\).*int64"):
        get_entry("matmul").resolve({"m": str(2**63 - 1)})


def test_an_output_that_overflows_is_caught_though_every_input_fits():
    """m x k and k x n fit; the m x n output does not: `Entry.largest` declares the outputs."""
    with pytest.raises(InvalidShape, match="tensor output"):
        get_entry("matmul").resolve({"m": str(2**40), "k": "1", "n": str(2**40)})


def test_attention_scores_are_checked_though_q_k_v_fit():
    shapes = {"batch": "1", "n_heads": "1", "n_kv_heads": "1", "head_dim": "2", "seq": str(2**31)}
    with pytest.raises(InvalidShape, match="tensor scores"):
        get_entry("attention").resolve(shapes)


def test_every_entry_states_its_tensors_at_its_defaults():
    for entry in CATALOGUE.values():
        shapes = entry.tensor_shapes(entry.resolve())
        assert shapes and all(isinstance(d, int) and d >= 1 for s in shapes.values() for d in s), entry.name


def test_a_parameter_given_twice_is_refused_by_name():
    """A duplicate `--shape` used to take the last value silently."""
    with pytest.raises(MalformedInput, match=r"--shape gives m twice \(m=3 and m=4\)"):
        parse_assignments(["m=3", "m=4"])
