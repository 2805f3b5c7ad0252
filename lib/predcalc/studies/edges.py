"""Held-out sets outside the seed protocol's box, and a trained model's scores on them.

The seed protocol trains on 3 numbers from -5..4 joined by ``+`` and ``-``; its test sets reach
-8..8 and 8 numbers. These sets step further out one axis at a time: magnitude (3 numbers of up
to 2 or 4 digits), length (20 or 60 numbers from -5..5) and writing (in-range expressions with
no spaces). A model is rebuilt with the same weights for inputs longer than it was built for
(:func:`predcalc.deploy.export.with_input_length`); one whose weights depend on the length is
not scored there (its score is None).

Example (``trained`` comes from ``predcalc.training.fit.train``, so the last line is not run as a doctest):
    >>> sets = edge_sets(seed=0)
    >>> edge_scores(trained, sets)["terms_60"]["accuracy"]  # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np

from predcalc.data.expressions import format_expression
from predcalc.data.protocol import Split, make_split
from predcalc.data.tokenizers import TokenizerError
from predcalc.models.rebuild import with_input_length
from predcalc.training.metrics import regression_metrics

# name -> (numbers per expression, largest |number|)
EDGE_AXES = {"digits_2": (3, 99), "digits_4": (3, 9999), "terms_20": (20, 5), "terms_60": (60, 5)}
NO_SPACES = "no_spaces"  # 3 numbers from -5..4, written without spaces ("3--2+4")


def edge_sets(seed: int = 0, count: int = 300) -> dict[str, Split]:
    """``count`` expressions per set of :data:`EDGE_AXES` and :data:`NO_SPACES` (seeded)."""
    if count <= 0:
        raise ValueError(f"count must be positive. Received: count={count}")
    rng = np.random.default_rng(seed)
    sets = {name: make_split(name, _draw(rng, count, terms, -bound, bound))
            for name, (terms, bound) in EDGE_AXES.items()}
    sets[NO_SPACES] = make_split(NO_SPACES, [e.replace(" ", "") for e in _draw(rng, count, 3, -5, 4)])
    return sets


def _draw(rng, count: int, terms: int, low: int, high: int) -> list[str]:
    """``count`` expressions of ``terms`` integers from low..high joined by random + and -."""
    numbers = rng.integers(low, high + 1, size=(count, terms))
    operators = rng.choice(["+", "-"], size=(count, terms - 1))
    return [format_expression(n, o) for n, o in zip(numbers, operators)]


def _fitting(tokenizer, expressions, longest: int = 4096):
    """The tokeniser, or one like it of the shortest length that holds every expression, and the
    encoded expressions."""
    def attempt(length):
        candidate = tokenizer if length == tokenizer.length else type(tokenizer)(
            **{**tokenizer.get_config(), "length": length})
        try:
            return candidate, candidate.encode_batch(list(expressions))
        except TokenizerError:
            if length >= longest:
                raise
            return None

    found, short = attempt(tokenizer.length), tokenizer.length
    long = short
    while found is None:  # double until it fits, then halve the gap down to the shortest that fits
        short, long = long, min(2 * long, longest)
        found = attempt(long)
    while long - short > 1:
        middle = (short + long) // 2
        shorter = attempt(middle)
        if shorter is None:
            short = middle
        else:
            long, found = middle, shorter
    return found


def edge_scores(trained, sets: dict[str, Split]) -> dict[str, dict | None]:
    """:func:`predcalc.training.metrics.regression_metrics` of ``trained`` (a TrainedModel) on each
    set, with ``tokens`` (the input length it was scored at); None where the model cannot be
    rebuilt for the longer input."""
    scores = {}
    for name, split in sets.items():
        tokenizer, x = _fitting(trained.tokenizer, split.expressions)
        model = trained.model
        if tokenizer.length != trained.tokenizer.length:
            try:
                model = with_input_length(model, tokenizer.length)
            except (ValueError, TypeError):  # a weight or layer that depends on the length
                scores[name] = None
                continue
        predictions = trained.spec.predict_values(model, x)
        scores[name] = {**regression_metrics(split.values, predictions), "tokens": tokenizer.length}
    return scores
