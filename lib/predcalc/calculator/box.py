"""The box of the calculator's claims: how far the measured families reach, and what it refuses.

Read from the record (each family's box, :func:`predcalc.calculator.study.family_boxes`, on the
development draw and on the draw no choice touched) and from the code (the refusal limits), so a
sentence about reach states the box it was measured in, not "any length" or "any depth".
"""

from __future__ import annotations

from predcalc.calculator.engine import MAX_DIGIT_PRODUCT
from predcalc.calculator.tokens import MAX_CHARACTERS

AXES = ("digits", "operators", "depth", "answer_digits")


def _largest(value) -> int:
    return int(value[1] if isinstance(value, (list, tuple)) else value)


def claim_box(draws: dict[str, dict]) -> dict:
    """The measured box over the families of every draw (``{draw: {family: box}}``).

    Returns per axis the largest value any scored family reached and the families that reached it
    (``"reached"``), the box of the family that varies every axis at once (``"joint"``, where a draw
    has ``all_axes``), and the code's refusal limits (``"refused"``): an operation whose operands'
    digit counts multiply to more than ``digit_product``, an input longer than ``characters``."""
    reached = {}
    for axis in AXES:
        found = [
            (_largest(box[axis]), f"{draw}:{family}")
            for draw, boxes in draws.items()
            for family, box in boxes.items()
            if axis in box
        ]
        if not found:
            continue
        top = max(value for value, _ in found)
        reached[axis] = {"largest": top, "families": sorted({where for value, where in found if value == top})}
    joint = {
        draw: {axis: boxes["all_axes"][axis] for axis in AXES if axis in boxes["all_axes"]}
        for draw, boxes in draws.items()
        if "all_axes" in boxes
    }
    return {
        "reached": reached,
        "joint": joint,
        "refused": {"digit_product": MAX_DIGIT_PRODUCT, "characters": MAX_CHARACTERS},
    }


def record_box(record: dict) -> dict:
    """:func:`claim_box` of a calculator metrics.json: the development draw and the untouched one."""
    draws = {"development": record["calculator"]["boxes"]}
    if "held_out" in record:
        draws["held_out"] = record["held_out"]["boxes"]
    return claim_box(draws)
