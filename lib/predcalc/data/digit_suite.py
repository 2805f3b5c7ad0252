"""The held-out digit suite: drawn after every choice of the digit models, scored once.

Its seed, :data:`SUITE_SEED`, was committed before any model was scored on it (the digit
notebook's Method says so with the commit). The training box is numbers of 1-10 digits and 2-3
terms (``predcalc.training.digits.TRAIN_DIGITS`` and ``TRAIN_TERMS``); the sets reach 1x, 2x, 3x,
5x and 10x its digits, 2x and 3x its terms, and the edges where a carry or a borrow runs the whole
width, where close numbers cancel, and where an answer's leading digits cancel to zero. The reach
sets (``digits_*``, ``terms_*``) have signed numbers and both operators (the prior report's form,
``a ± b ± c``); the rung sets are ``a + b`` and ``a ± b`` of non-negative numbers; the edge sets
have non-negative numbers (the carry chains ``+`` only), and a few carry-chain draws carry little.
"""

from __future__ import annotations

import numpy as np

from predcalc.data import digits

SUITE_SEED = 6161  # committed before any model was scored on the suite

TRAIN_BOX = {"digits": (1, 10), "terms": (2, 3)}


def suite(seed: int = SUITE_SEED) -> dict[str, list[digits.Expression]]:
    """The suite's sets by name, each drawn from its own stream of ``seed``."""

    def rng(index):
        return np.random.default_rng([seed, index])

    sets = {}
    for index, width in enumerate((10, 20, 30, 50, 100)):
        size = 200 if width <= 30 else 100
        sets[f"digits_{width}"] = digits.draw(rng(index), size, terms=(3, 3), digits=(width, width))
    sets["terms_6"] = digits.draw(rng(10), 200, terms=(6, 6), digits=(1, 10))
    sets["terms_9"] = digits.draw(rng(11), 200, terms=(9, 9), digits=(1, 10))
    sets["rung1_digits_30"] = digits.draw(rng(12), 200, terms=(2, 2), digits=(30, 30), signed=False, operators="+")
    sets["rung2_digits_30"] = digits.draw(rng(13), 200, terms=(2, 2), digits=(30, 30), signed=False)
    for index, width in enumerate((10, 30)):
        sets[f"carry_chain_{width}"] = digits.carry_chain(rng(20 + index), 100, width)
        sets[f"borrow_chain_{width}"] = digits.borrow_chain(rng(22 + index), 100, width)
        sets[f"cancellation_{width}"] = digits.cancellation(rng(24 + index), 100, width)
        sets[f"leading_cancel_{width}"] = digits.leading_cancel(rng(26 + index), 100, width)
    return sets


def box(expressions) -> dict:
    """A set's box as measured: digits of its numbers, its term counts, the answers' digits."""
    widths = [len(str(abs(n))) for e in expressions for _, n in e.terms]
    terms = [len(e.terms) for e in expressions]
    answers = [len(str(abs(e.value))) for e in expressions]
    return {
        "digits": [min(widths), max(widths)],
        "terms": [min(terms), max(terms)],
        "answer_digits": [min(answers), max(answers)],
        "size": len(expressions),
    }
