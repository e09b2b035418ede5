"""The one number formatter: every printed number passes through :func:`fmt` with its SI unit.

Rates and sizes use decimal prefixes (``50 GB/s``); times pick s, ms or µs; ratios print plain;
fractions print as percentages. JSON never goes through here: it keeps raw SI numbers.
"""

from __future__ import annotations

import math

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_SCALED_UNITS = {"B", "B/s", "FLOP", "FLOP/s", "tokens/s", "turns/s", "agents/s", "FLOP/turn", "B/turn", "W", "J"}
_COUNTS = {"tokens/s", "turns/s", "agents/s"}  # counts per second: k and M only ("Tturns/s" reads as a typo)


def _sig(value: float, digits: int) -> str:
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else ("inf" if value > 0 else "-inf") if math.isinf(value) else "nan"
    if 1e4 <= abs(value) < 1e15:
        return f"{round(value):,}"  # counts and large amounts in full, not as an exponent (15,740, not 1.574e+04)
    text = f"{value:.{digits}g}"
    if "e" in text and 1 <= abs(value) < 1e15:  # 9999.5 rounds up to 1e+04: print it whole
        return f"{round(value):,}"
    return text if "e" not in text else f"{value:.{digits}e}"


def fmt(value: float | None, unit: str, digits: int = 4) -> str:
    """Format an SI ``value`` with its ``unit``.

    Units: ``B``, ``B/s``, ``FLOP/s`` and the other rates get decimal prefixes; ``s`` scales to
    ms/µs; ``USD`` prints whole dollars with thousands separators, ``USD/h`` cents; ``%`` takes a fraction (0.5 -> ``50.0 %``); ``x`` a ratio (``1.87x``); ``""`` a plain
    number; any other unit is appended unchanged (``nodes``, ``GPUs``, ``USD``).
    """
    if value is None or value != value:  # a missing number (NaN never reaches here past the stage guards)
        return "n/a"
    if unit == "%":
        return f"{value * 100:.1f} %"
    if unit == "x":
        return f"{value:,.0f}x" if abs(value) >= 1e3 and math.isfinite(value) else f"{_sig(value, 3)}x"
    if unit == "s":
        return _fmt_time(value, digits)
    if unit == "USD" and math.isfinite(value):
        return f"{value:,.0f} USD"
    if unit == "USD/h" and math.isfinite(value):
        return f"{value:,.2f} USD/h"  # rents are quoted to the cent
    if unit in _SCALED_UNITS and math.isfinite(value):
        for scale, prefix in _PREFIXES:
            if abs(value) >= scale and not (unit in _COUNTS and scale > 1e6):
                return f"{_counts(value / scale, digits) if unit in _COUNTS else _sig(value / scale, digits)} {prefix}{unit}"
    text = _sig(value, digits)
    return f"{text} {unit}" if unit else text


def _counts(value: float, digits: int) -> str:
    """A count in k or M: significant digits, or whole with separators past 10,000 (``1,000 Mturns/s``)."""
    return f"{value:,.0f}" if abs(value) >= 1e4 else _sig(value, digits)


def _fmt_time(value: float, digits: int) -> str:
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(value) >= scale or unit == "µs":
            return f"{_sig(value / scale, digits)} {unit}"
    return f"{_sig(value, digits)} s"  # pragma: no cover - loop always returns


def has(names) -> str:
    """``has`` after one name, ``have`` after several ("hopper has none", "h200, gb200 have none")."""
    return "has" if len(names) == 1 else "have"
