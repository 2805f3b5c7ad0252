"""The box of the calculator's claims: how far the measured families reach, and what it refuses.

Read from the record (each family's box, :func:`predcalc.calculator.study.family_boxes`, on the
development draw and on notebook 40's second draw) and from the code (the refusal limits), so a
claim about reach states the box it was measured in, not "any length" or "any depth".
"""

from __future__ import annotations

from predcalc.calculator.engine import MAX_DIGIT_PRODUCT
from predcalc.calculator.tokens import MAX_CHARACTERS

AXES = ("digits", "operators", "depth", "answer_digits")
# The family of fixed atypical digit patterns (leading zeros written out, 9...9 chains, 9/0 runs, quotients
# with many zero digits; one operator each): its operands are longer than any drawn family's, so a claim
# states its reach apart from the families drawn at random.
ADVERSARIAL = "adversarial"


def _largest(value) -> int:
    return int(value[1] if isinstance(value, (list, tuple)) else value)


def claim_box(draws: dict[str, dict]) -> dict:
    """The measured box over the families of every draw (``{draw: {family: box}}``).

    Returns per axis the largest value any scored family reached and the families that reached it
    (``"reached"``), the same over the families drawn at random (``"drawn"``) and over the
    :data:`ADVERSARIAL` family (``"adversarial"``, None where none was scored), the box of the family
    that varies every axis at once (``"joint"``, where a draw
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
    drawn, adversarial = {}, {}
    for axis in AXES:
        for target, keep in ((drawn, False), (adversarial, True)):
            values = [
                _largest(box[axis])
                for boxes in draws.values()
                for family, box in boxes.items()
                if axis in box and (family == ADVERSARIAL) == keep
            ]
            if values:
                target[axis] = max(values)
    joint = {
        draw: {axis: boxes["all_axes"][axis] for axis in AXES if axis in boxes["all_axes"]}
        for draw, boxes in draws.items()
        if "all_axes" in boxes
    }
    return {
        "reached": reached,
        "drawn": drawn,
        "adversarial": adversarial or None,
        "joint": joint,
        "refused": {"digit_product": MAX_DIGIT_PRODUCT, "characters": MAX_CHARACTERS},
    }


def record_box(record: dict) -> dict:
    """:func:`claim_box` of a calculator metrics.json: the development draw and the second draw."""
    draws = {"development": record["calculator"]["boxes"]}
    if "held_out" in record:
        draws["held_out"] = record["held_out"]["boxes"]
    return claim_box(draws)


def _span(value) -> str:
    return f"{value[0]}-{value[1]}" if isinstance(value, (list, tuple)) else str(value)


def box_frame(box: dict):
    """A :func:`claim_box` as a table, one row per axis: the largest value of the families drawn at
    random, the range of the family that varies every axis at once (``all_axes``, first draw) and the
    largest value of the adversarial family."""
    import pandas as pd  # tables only when the notebook shows them

    joint = next(iter(box["joint"].values()), {})
    adversarial = box["adversarial"] or {}
    return pd.DataFrame(
        {
            axis: {
                "drawn families (largest)": box["drawn"].get(axis),
                "all_axes (range)": _span(joint[axis]) if axis in joint else "",
                "adversarial (largest)": adversarial.get(axis),
            }
            for axis in AXES
        }
    ).T


def box_texts(box: dict) -> dict[str, str]:
    """The values the notebook glues from a :func:`claim_box`, by name (``box_...``): the drawn families'
    reach per axis, the ``all_axes`` family's ranges, the adversarial family's reach, and the refusal
    limits; "not scored" where the box has no such family."""
    joint = next(iter(box["joint"].values()), {})
    adversarial = box["adversarial"] or {}
    out = {f"box_{axis}": str(box["drawn"].get(axis, "not scored")) for axis in AXES}
    out |= {f"box_joint_{axis}": _span(joint[axis]) if axis in joint else "not scored" for axis in AXES}
    out |= {f"box_adversarial_{axis}": str(adversarial.get(axis, "not scored")) for axis in AXES}
    out["box_refused_product"] = f"{box['refused']['digit_product']:,}"
    out["box_refused_characters"] = f"{box['refused']['characters']:,}"
    return out
