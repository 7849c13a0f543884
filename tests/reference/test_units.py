"""reference/units.py: one formatter per quantity, scaled to its size, never a negative zero."""

from __future__ import annotations

import pytest

from reference.units import format_bytes, format_percent, format_rate, format_seconds


@pytest.mark.parametrize(
    "seconds, text",
    [
        (3.7428e-3, "3.74 ms"),
        (238e-6, "238 µs"),
        (5e-10, "0.50 ns"),
        (28.47, "28.5 s"),
        (2.5e-8, "25.0 ns"),
        (999.7e-6, "1.00 ms"),  # rounds up into the next unit instead of writing 1000 µs
        (0.0, "0 s"),
    ],
)
def test_seconds_scale_to_ns_us_ms_s(seconds, text):
    assert format_seconds(seconds) == text


@pytest.mark.parametrize("value", [-0.0, -1e-15, 1e-15, -4e-13])
def test_a_difference_that_rounds_to_zero_has_no_sign(value):
    # the old renderings printed "-0.0 us"
    assert format_seconds(value, signed=True) == "0 s"
    assert format_percent(value) == "0%"


def test_signed_differences_keep_their_sign():
    assert format_seconds(1.5e-3, signed=True) == "+1.50 ms"
    assert format_seconds(-9.53e-6, signed=True) == "-9.53 µs"


@pytest.mark.parametrize(
    "value, text",
    [
        (230_686_720, "231 MB"),  # the Groq LPU's SRAM, once printed as "0 GB"
        (80e9, "80.0 GB"),
        (1.2e12, "1.20 TB"),
        (5, "5 B"),
        (0, "0 B"),
        (999_600, "1.00 MB"),
        (1_536, "1.54 kB"),
    ],
)
def test_bytes_scale_to_b_kb_mb_gb_tb(value, text):
    assert format_bytes(value) == text


def test_rates_take_an_si_prefix():
    assert format_rate(3.35e12, "B/s") == "3.35 TB/s"
    assert format_rate(125e15, "FLOP/s") == "125 PFLOP/s"
