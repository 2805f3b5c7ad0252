"""Exact answers: integers and fractions as text, compared without any float.

An answer is ``"-12"``, ``"7/3"`` or ``"-7/3"``. A prediction is right when it is the same
rational number as the truth (``"6/4"`` equals ``"3/2"``); whether it is also written in lowest
terms is counted apart. A model that predicts a float (a regression model) is right when the
float, rounded to the nearest integer, is exactly the true integer: Python integers, so two
30-digit answers that differ in their last digit never compare equal.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_ANSWER = re.compile(r"\s*([+-]?\d+)\s*(?:/\s*(\d+))?\s*")


def parse_answer(text) -> Fraction | None:
    """The exact value of an answer's text, or None when it is not an integer or fraction."""
    if isinstance(text, Fraction):
        return text
    if isinstance(text, int):
        return Fraction(text)
    match = _ANSWER.fullmatch(str(text))
    if not match or match.group(2) is not None and int(match.group(2)) == 0:
        return None
    return Fraction(int(match.group(1)), int(match.group(2) or 1))


def in_lowest_terms(text) -> bool:
    match = _ANSWER.fullmatch(str(text))
    if not match:
        return False
    denominator = int(match.group(2) or 1)
    return (
        denominator > 0
        and math.gcd(int(match.group(1)), denominator) == 1
        and not (match.group(2) is not None and denominator == 1)
    )


def value_answer(value) -> str | None:
    """A float prediction as the integer it rounds to (text), or None for NaN or infinity."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(value):
        return None
    return str(round(value))


def score_answers(truths, answers) -> dict:
    """Exact accuracy of ``answers`` against ``truths`` (both texts), and how many are in lowest terms."""
    truths, answers = list(truths), list(answers)
    right = [parse_answer(a) is not None and parse_answer(a) == parse_answer(t) for t, a in zip(truths, answers)]
    lowest = [in_lowest_terms(a) for a in answers]
    n = len(truths)
    return {
        "n": n,
        "exact": sum(right) / n if n else float("nan"),
        "lowest_terms": sum(lowest) / n if n else float("nan"),
        "right": right,
    }
