"""Numbers for people, one rule everywhere: the book, the findings, the notebooks and the command line.

A share is a percentage with one decimal, and one short of 100 % is never written ``100.0 %`` (one
above 0 never ``0.0 %``): it gets the decimals that tell them apart. Errors and ratios in plain
notation with three significant digits (``4.2 × 10⁻⁷`` below 0.0001); changes of a share in
percentage points; the prior report's benchmark score plain up to a million, past it
``unbounded``. Standard library only, so a Jetson's runtime install has it.
"""

from __future__ import annotations

import math

UNBOUNDED = 1e6  # a benchmark score past this divides by an error at float32 precision
NBSP = "\u00a0"  # between a number and its unit, so "100 %" never wraps


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def scientific(value: float, digits: int = 2) -> str:
    """``4.2 × 10⁻⁷``: scientific notation as a person writes it."""
    exponent = math.floor(math.log10(abs(value)))
    mantissa = value / 10**exponent
    if round(mantissa, digits - 1) >= 10:
        mantissa, exponent = mantissa / 10, exponent + 1
    return f"{mantissa:.{digits - 1}f}\u00a0×\u00a010{str(exponent).translate(_SUPERSCRIPT)}"


def number(value: float, digits: int = 3) -> str:
    """An error or a ratio in plain notation with ``digits`` significant digits.

    ``0.0651``, ``2.47``, ``410``, ``3,447,000``; below 0.0001 ``4.2 × 10⁻⁷``."""
    value = float(value)
    if not math.isfinite(value):
        return "∞" if value > 0 else ("−∞" if value < 0 else "n/a")
    if value == 0:
        return "0"
    if abs(value) < 1e-4:
        return scientific(value)
    if abs(value) >= 10**digits:
        return f"{round(value, digits - 1 - math.floor(math.log10(abs(value)))):,.0f}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def percent(fraction: float, decimals: int = 1, unit: str = NBSP + "%") -> str:
    """A share as a percentage: ``0.9951`` -> ``99.5 %``. A share short of 1 is never written
    ``100.0 %`` and one above 0 never ``0.0 %``: it gets the decimals that tell them apart.
    ``unit`` follows the number: a non-breaking space and ``%`` by default (`` %`` in markdown
    prose, ``""`` in a table whose header says ``%``)."""
    value = 100 * float(fraction)
    text = f"{value:.{decimals}f}"
    while decimals < 5 and 0 < value < 100 and float(text) in (0.0, 100.0):
        decimals += 1
        text = f"{value:.{decimals}f}"
    return f"{text}{unit}"


def percent_range(low: float, high: float, decimals: int = 1) -> str:
    """The lowest and highest seed's share as ``98.3-100.0 %``, or one :func:`percent` where the
    two read the same."""
    low_text, high_text = percent_number(low, decimals), percent(high, decimals)
    return high_text if f"{low_text}{NBSP}%" == high_text else f"{low_text}-{high_text}"


def share(fraction: float, decimals: int = 1) -> str:
    """:func:`percent` with a plain space before ``%``, for markdown prose and table cells."""
    return percent(fraction, decimals, " %")


def percent_number(fraction: float, decimals: int = 1) -> str:
    """:func:`percent` without its unit, for a table whose header or row says ``%``."""
    return percent(fraction, decimals, "")


def points(change: float) -> str:
    """A change of a share in percentage points: ``-0.0012`` -> ``-0.1 pt``; ``0.0 pt`` when it
    rounds to nothing."""
    text = f"{100 * float(change):+.1f}"
    return f"{'0.0' if float(text) == 0 else text}\u00a0pt"


def score(value: float) -> str:
    """The prior report's benchmark score: plain up to a million, past it ``unbounded``."""
    return "unbounded" if float(value) >= UNBOUNDED else number(value)


def p_value(value: float) -> str:
    return "< 0.001" if float(value) < 0.001 else number(value, 2)
