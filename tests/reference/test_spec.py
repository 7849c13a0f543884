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
