"""Quantities as people read them: seconds in ns/µs/ms/s, bytes in B/kB/MB/GB/TB, rates with SI
prefixes; three significant figures, and never a negative zero. Every terminal rendering and the
HTML page format through these, so a number reads the same everywhere.

    format_seconds(3.7428e-3)            '3.74 ms'
    format_seconds(-1e-15, signed=True)  '0 s'       (rounds to zero: no sign)
    format_bytes(230e6)                  '230 MB'
    format_rate(3.35e12, "B/s")          '3.35 TB/s'
    plural(1, "chip")                    '1 chip'
"""

from __future__ import annotations

TIME_UNITS = ((1e-9, "ns"), (1e-6, "µs"), (1e-3, "ms"), (1.0, "s"))
SI_PREFIXES = ((1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G"), (1e12, "T"), (1e15, "P"), (1e18, "E"))


def _three_figures(x: float) -> str:
    """x >= 0 with three significant figures, no exponent: 3.74, 23.8, 238."""
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def _scaled(value: float, units: tuple[tuple[float, str], ...], signed: bool, zero: str) -> str:
    magnitude = abs(value)
    index = 0
    for i, (factor, _) in enumerate(units):
        if magnitude >= factor:
            index = i
    factor, suffix = units[index]
    text = _three_figures(magnitude / factor)
    if float(text) >= 1000 and index + 1 < len(units):  # 999.7 rounds up: write 1.00 of the next unit
        factor, suffix = units[index + 1]
        text = _three_figures(magnitude / factor)
    if float(text) == 0:  # zero, or so small it rounds to zero: no sign, so never '-0'
        return f"0 {zero}"
    sign = "-" if value < 0 else ("+" if signed else "")
    return f"{sign}{text} {suffix}"


def format_seconds(seconds: float, signed: bool = False) -> str:
    """A duration in ns, µs, ms or s: '3.74 ms'; `signed` writes '+' on a positive difference."""
    return _scaled(seconds, TIME_UNITS, signed, "s")


def format_rate(value: float, unit: str, signed: bool = False) -> str:
    """A quantity with an SI prefix on `unit`: format_rate(3.35e12, "B/s") -> '3.35 TB/s'."""
    return _scaled(value, tuple((f, p + unit) for f, p in SI_PREFIXES), signed, unit)


def format_bytes(value: float, signed: bool = False) -> str:
    """Bytes in B, kB, MB, GB, TB (powers of 1000): '230 MB'; under 1 kB, whole bytes: '5 B'."""
    if abs(value) < 1000 and value == int(value):
        return f"{'+' if signed and value > 0 else ''}{int(value)} B"
    return format_rate(value, "B", signed)


def format_percent(fraction: float) -> str:
    """A fraction as a whole percent, never '-0%': format_percent(-1e-6) -> '0%'."""
    text = f"{fraction:.0%}"
    return "0%" if text in ("-0%", "0%") else text


def plural(count: int, noun: str, many: str | None = None) -> str:
    """'1 chip', '3 chips', '2 pipeline stages': a count with its noun in agreement."""
    return f"{count:,} {noun if count == 1 else (many or noun + 's')}"
