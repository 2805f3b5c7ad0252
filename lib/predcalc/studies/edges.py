"""Frozen suites outside the reference protocol's box, and a model's scores on them.

The development suite (seed 0) helped choose the recommended models (:data:`CHOICES`); each held-out
suite (seeds 31, 4040, 5151) was drawn after the choices it tests, excluding every earlier suite and
the protocol's training and validation splits.

Example:
    >>> suite = heldout_suite()
    >>> len(suite["terms_80"].expressions)
    300
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Callable

import numpy as np

from predcalc.data.expressions import format_expression
from predcalc.data.protocol import Split, make_split, reference_protocol
from predcalc.data.tokenizers import TokenizerError, canonical
from predcalc.models.rebuild import with_input_length
from predcalc.models.syntax_gated_scan import readout_for_length
from predcalc.training.metrics import regression_metrics

SET_SIZE = 300  # expressions per set, in both suites
DEVELOPMENT_SEED = 0  # the probe 06_transformer scored (edge_sets(seed=data_seed))
HELDOUT_SEED = 31  # used by nothing else in this project

# name -> (numbers per expression, largest |number|): the development suite
EDGE_AXES = {"digits_2": (3, 99), "digits_4": (3, 9999), "terms_20": (20, 5), "terms_60": (60, 5)}
NO_SPACES = "no_spaces"  # 3 numbers from -5..4 written without spaces ("3--2+4"); see spacing_check

# Which probe chose which recommended variant: why the development suite's scores are not claims.
CHOICES = {
    "transformer4_local_bounded": (
        "the tanh bound (squash_features) was kept after a 60-epoch probe on 3 numbers from -99..99 "
        "(sweeps/transformer4_local_squash.yaml: 98.7 % exact where transformer4_local fell to 2.3 %) and on "
        "20 and 60 terms: the development sets digits_2, terms_20 and terms_60"
    ),
    "transformer4_gated, transformer4_local": (
        "the gated value readout, then the local token features with padding masked, were each kept for their "
        "exact accuracy on the reference protocol's out-of-range test set (out)"
    ),
    "scan_typed": (
        "the syntax-gated scan and its ablations (30_beyond_reference) were compared on the reference protocol's in, out and "
        "long test sets; no edge set was used"
    ),
    "scan_typed_solved, scan_typed_readout_solved": (
        "the closed-form finish was judged on 31_extended_suite's families (3 numbers of 1-6 digits, 2-8 terms, "
        "suite seed 0)"
    ),
}


@dataclasses.dataclass(frozen=True)
class EdgeSet:
    name: str
    box: str
    draw: Callable  # (rng, count) -> list of expressions


def _uniform(terms, low: int, high: int) -> Callable:
    """``terms`` (a count or an inclusive (min, max)) integers from low..high, random + and -."""

    def draw(rng, count):
        if np.isscalar(terms):  # one block of draws (the order the development suite was first drawn in)
            numbers = rng.integers(low, high + 1, size=(count, terms))
            operators = rng.choice(["+", "-"], size=(count, terms - 1))
            return [format_expression(n, o) for n, o in zip(numbers, operators)]
        fewest, most = terms  # a count per expression from fewest..most
        return [_join(rng, rng.integers(low, high + 1, size=int(rng.integers(fewest, most + 1)))) for _ in range(count)]

    return draw


def _join(rng, numbers, operators=None) -> str:
    operators = rng.choice(["+", "-"], size=len(numbers) - 1) if operators is None else operators
    return format_expression([int(n) for n in numbers], list(operators))


def _exact_digits(digits: int, terms: int = 3) -> Callable:
    def draw(rng, count):
        low, high = 10 ** (digits - 1), 10**digits - 1
        return [
            _join(rng, rng.integers(low, high + 1, size=terms) * rng.choice([-1, 1], size=terms)) for _ in range(count)
        ]

    return draw


def _alternating(rng, count):
    drawn = [
        rng.choice([-1, 1]) * rng.integers(1, 6, size=n) * (-1) ** np.arange(n) for n in rng.integers(3, 9, size=count)
    ]
    return [_join(rng, numbers, ["-" if i % 2 == 0 else "+" for i in range(len(numbers) - 1)]) for numbers in drawn]


def _zero_runs(rng, count):
    return [
        _join(rng, np.where(rng.random(n) < 0.75, 0, rng.integers(-5, 6, size=n)))
        for n in rng.integers(3, 9, size=count)
    ]


def _nested(rng, count):
    expressions = []
    for n, levels in zip(rng.integers(3, 9, size=count), rng.integers(1, 4, size=count)):
        numbers, operators = rng.integers(-5, 6, size=n), rng.choice(["+", "-"], size=n - 1)
        opens, closes = np.zeros(n, int), np.zeros(n, int)
        low, high = 0, n - 1
        for _ in range(levels):  # each group inside the previous one, holding at least 2 numbers
            low = int(rng.integers(low, high))
            high = int(rng.integers(low + 1, high + 1))
            opens[low] += 1
            closes[high] += 1
        parts = ["(" * opens[i] + str(int(numbers[i])) + ")" * closes[i] for i in range(n)]
        expressions.append(" ".join([parts[0], *(f"{op} {part}" for op, part in zip(operators, parts[1:]))]))
    return expressions


def _nines_up_to(max_digits: int) -> Callable:
    def draw(rng, count):
        return [
            _join(rng, (10 ** rng.integers(1, max_digits + 1, size=n) - 1) * rng.choice([-1, 1], size=n))
            for n in rng.integers(3, 9, size=count)
        ]

    return draw


def _close_pair(digits: int) -> Callable:
    def draw(rng, count):
        x = rng.integers(10 ** (digits - 1) + 10, 10**digits - 10, size=count)
        y = x + rng.integers(-9, 10, size=count)
        z = rng.integers(-5, 6, size=count)
        return [_join(rng, [a, b, c], ["-", "+"]) for a, b, c in zip(x, y, z)]

    return draw


DEVELOPMENT = [
    EdgeSet(name, f"{terms} numbers from -{bound:,}..{bound:,}", _uniform(terms, -bound, bound))
    for name, (terms, bound) in EDGE_AXES.items()
]

HELDOUT = [
    EdgeSet("digits_exactly_2", "3 numbers of exactly 2 digits (10..99, either sign)", _exact_digits(2)),
    EdgeSet("digits_exactly_3", "3 numbers of exactly 3 digits (100..999, either sign)", _exact_digits(3)),
    EdgeSet("digits_exactly_4", "3 numbers of exactly 4 digits (1,000..9,999, either sign)", _exact_digits(4)),
    EdgeSet("terms_9_14", "9 to 14 numbers from -5..5", _uniform((9, 14), -5, 5)),
    EdgeSet("terms_40", "40 numbers from -5..5", _uniform(40, -5, 5)),
    EdgeSet("terms_80", "80 numbers from -5..5", _uniform(80, -5, 5)),
    EdgeSet("terms_10_digits_2", "10 numbers from -99..99", _uniform(10, -99, 99)),
    EdgeSet("terms_30_digits_3", "30 numbers from -999..999", _uniform(30, -999, 999)),
    EdgeSet("nines", "3-8 numbers, each 9, 99, 999 or 9,999 of either sign (carry and borrow chains)", _nines_up_to(4)),
    EdgeSet(
        "alternating_signs",
        '3-8 numbers from 1..5 with alternating signs, joined by alternating - and + ("3 - -4 + 2 - -5")',
        _alternating,
    ),
    EdgeSet("zero_runs", "3-8 numbers, each 0 with probability 3/4, else from -5..5", _zero_runs),
    EdgeSet("cancellation_4_digits", "x - y + z: x, y of 4 digits at most 9 apart, z from -5..5", _close_pair(4)),
    EdgeSet("nesting_1_3", "3-8 numbers from -5..5 in parentheses nested 1 to 3 deep, + and -", _nested),
]


# The second held-out suite (issue 40), drawn once the trained exact scan's design was frozen: its
# seed is used by nothing else, and it excludes both earlier suites and the protocol's training data.
SECOND_HELDOUT_SEED = 4040
SECOND_HELDOUT = [
    EdgeSet("digits_3", "3 numbers of exactly 3 digits (100..999, either sign)", _exact_digits(3)),
    EdgeSet("digits_4", "3 numbers of exactly 4 digits (1,000..9,999, either sign)", _exact_digits(4)),
    EdgeSet("digits_6", "3 numbers of exactly 6 digits (100,000..999,999, either sign)", _exact_digits(6)),
    EdgeSet("terms_40", "40 numbers from -5..5", _uniform((40, 40), -5, 5)),
    EdgeSet("terms_80", "80 numbers from -5..5", _uniform((80, 80), -5, 5)),
    EdgeSet("terms_300", "300 numbers from -5..5", _uniform((300, 300), -5, 5)),
    EdgeSet("terms_10_digits_2", "10 numbers of exactly 2 digits (10..99, either sign)", _exact_digits(2, 10)),
    EdgeSet("terms_30_digits_3", "30 numbers of exactly 3 digits (100..999, either sign)", _exact_digits(3, 30)),
    EdgeSet(
        "nines", "3-8 numbers, each 9, 99, ... or 999,999 of either sign (carry and borrow chains)", _nines_up_to(6)
    ),
    EdgeSet("cancellation", "x - y + z: x, y of 6 digits at most 9 apart, z from -5..5", _close_pair(6)),
]


# The third held-out suite (issue 40): the same sets as the second, drawn from a new seed once the
# trained exact scan's final design (soft write gradient, fixed gate offset) was frozen. The second
# suite's scores had been seen by then, so it is development data for that design.
THIRD_HELDOUT_SEED = 5151
THIRD_HELDOUT = SECOND_HELDOUT


def _suite(sets: list[EdgeSet], seed: int, count: int, exclude=frozenset()) -> dict[str, Split]:
    """``count`` distinct expressions per set from one seeded generator, none in ``exclude``."""
    if count <= 0:
        raise ValueError(f"count must be positive. Received: count={count}")
    rng = np.random.default_rng(seed)
    seen = set(exclude)
    suite = {}
    for edge in sets:
        kept = []
        for _ in range(100):  # rounds of draws; a set whose box is too small to fill stops with an error
            for expression in edge.draw(rng, count - len(kept)):
                form = canonical(expression)
                if form not in seen:
                    seen.add(form)
                    kept.append(expression)
            if len(kept) == count:
                break
        else:
            raise ValueError(f"{edge.name} holds fewer than {count} distinct expressions outside the excluded ones")
        suite[edge.name] = make_split(edge.name, kept)
    return suite


def development_suite(seed: int = DEVELOPMENT_SEED, count: int = SET_SIZE) -> dict[str, Split]:
    """The development suite: ``count`` expressions per set of :data:`EDGE_AXES`, the same as
    06_transformer's stored ``edges.json`` (drawn without deduplication, as then)."""
    if count <= 0:
        raise ValueError(f"count must be positive. Received: count={count}")
    rng = np.random.default_rng(seed)
    return {edge.name: make_split(edge.name, edge.draw(rng, count)) for edge in DEVELOPMENT}


def edge_sets(seed: int = DEVELOPMENT_SEED, count: int = SET_SIZE) -> dict[str, Split]:
    """:func:`development_suite` and :data:`NO_SPACES`, as 06_transformer scores them."""
    sets = development_suite(seed, count)
    rng = np.random.default_rng(seed)
    for edge in DEVELOPMENT:  # replay the draws, so no_spaces stays the set it was
        edge.draw(rng, count)
    sets[NO_SPACES] = make_split(NO_SPACES, [e.replace(" ", "") for e in _uniform(3, -5, 4)(rng, count)])
    return sets


def heldout_suite(seed: int = HELDOUT_SEED, count: int = SET_SIZE, data_seed: int = 0) -> dict[str, Split]:
    """The held-out edge suite: :data:`HELDOUT`, outside the development suite and the protocol's training data."""
    return dict(_heldout_suite(seed, count, data_seed))


def second_heldout_suite(
    seed: int = SECOND_HELDOUT_SEED, count: int = SET_SIZE, data_seed: int = 0
) -> dict[str, Split]:
    """The second held-out suite, drawn after ``scan_exact`` froze; it excludes the first too."""
    return dict(_second_heldout_suite(seed, count, data_seed))


def third_heldout_suite(seed: int = THIRD_HELDOUT_SEED, count: int = SET_SIZE, data_seed: int = 0) -> dict[str, Split]:
    """The third held-out suite, drawn after ``scan_exact``'s final design froze; it excludes both earlier."""
    return dict(_third_heldout_suite(seed, count, data_seed))


# each suite drawn once per process (the draws are deterministic); each caller gets its own dict of it
@functools.lru_cache(maxsize=16)
def _heldout_suite(seed: int, count: int, data_seed: int) -> dict[str, Split]:
    return _suite(HELDOUT, seed, count, exclude=_excluded(data_seed))


@functools.lru_cache(maxsize=16)
def _second_heldout_suite(seed: int, count: int, data_seed: int) -> dict[str, Split]:
    first = [canonical(e) for split in heldout_suite(data_seed=data_seed).values() for e in split.expressions]
    return _suite(SECOND_HELDOUT, seed, count, exclude=_excluded(data_seed) | frozenset(first))


@functools.lru_cache(maxsize=16)
def _third_heldout_suite(seed: int, count: int, data_seed: int) -> dict[str, Split]:
    earlier = [
        *heldout_suite(data_seed=data_seed).values(),
        *second_heldout_suite(count=count, data_seed=data_seed).values(),
    ]
    forms = frozenset(canonical(e) for split in earlier for e in split.expressions)
    return _suite(THIRD_HELDOUT, seed, count, exclude=_excluded(data_seed) | forms)


@functools.lru_cache(maxsize=4)
def _excluded(data_seed: int) -> frozenset:
    """Canonical forms of the development suite and the protocol's training and validation splits."""
    protocol = reference_protocol(data_seed)
    development = [e for split in development_suite().values() for e in split.expressions]
    return frozenset(
        canonical(e) for e in [*protocol.train.expressions, *protocol.validation.expressions, *development]
    )


def fingerprint(suite: dict[str, Split]) -> str:
    text = json.dumps({name: list(split.expressions) for name, split in suite.items()})
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# each suite's stored description: its seed, its sets, and the choices it made or what its draw excluded
_ABOUT = {
    "development": (DEVELOPMENT_SEED, DEVELOPMENT, "choices", CHOICES),
    "second_heldout": (
        SECOND_HELDOUT_SEED,
        SECOND_HELDOUT,
        "excluded",
        "the development suite, the first held-out suite and the reference protocol's training and validation "
        "splits (data seed 0)",
    ),
    "third_heldout": (
        THIRD_HELDOUT_SEED,
        THIRD_HELDOUT,
        "excluded",
        "the development suite, the first and second held-out suites and the reference protocol's training and "
        "validation splits (data seed 0)",
    ),
    "heldout": (
        HELDOUT_SEED,
        HELDOUT,
        "excluded",
        "the development suite and the reference protocol's training and validation splits (data seed 0)",
    ),
}


def suite_record(kind: str, suite: dict[str, Split] | None = None) -> dict:
    """What a stored score file says about its suite (with its :func:`fingerprint` given the drawn ``suite``)."""
    if kind not in _ABOUT:
        raise ValueError(
            f"kind must be 'development', 'heldout', 'second_heldout' or 'third_heldout'. Received: {kind!r}"
        )
    seed, edges, key, about = _ABOUT[kind]
    record = {"kind": kind, "seed": seed, "count": SET_SIZE, key: about, "sets": {e.name: e.box for e in edges}}
    return record if suite is None else {**record, "fingerprint": fingerprint(suite)}


def spacing_check(tokenizer, expressions) -> dict:
    """Whether dropping the spaces changes what ``tokenizer`` hands the network (its lexer folds them)."""
    checked = differ = 0
    for expression in expressions:
        try:
            spaced = tokenizer.encode(expression)
        except TokenizerError:
            continue
        checked += 1
        try:
            differ += not np.array_equal(spaced, tokenizer.encode(expression.replace(" ", "")))
        except TokenizerError:
            differ += 1
    why = (
        f"the {tokenizer.name} tokeniser gives the same array with and without spaces on all {checked:,} "
        "expressions: its lexer drops spacing and folds unary signs before the network"
        if differ == 0
        else f"{differ:,} of {checked:,} expressions encode differently without spaces"
    )
    return {"applies": differ > 0, "checked": checked, "differ": differ, "why": why}


def at_input_length(model, length: int):
    """The model rebuilt for ``length`` tokens with the same weights, computing the same function on
    every input it read before; ValueError or TypeError where a weight depends on the length."""
    trained = int(model.inputs[0].shape[1])
    return model if length == trained else readout_for_length(with_input_length(model, length), trained)


def tokens_needed(tokenizer, expressions, longest: int = 4096) -> int | None:
    """The fewest tokens (at least ``tokenizer.length``) that hold every expression; None if none does."""
    if refusal(tokenizer, expressions) is not None:
        return None

    def fits(length):
        try:
            type(tokenizer)(**{**tokenizer.get_config(), "length": length}).encode_batch(list(expressions))
            return True
        except TokenizerError:
            return False

    short = long = tokenizer.length
    if fits(short):
        return short
    while not fits(long):  # double until it fits, then halve the gap down to the shortest that fits
        if long >= longest:
            raise ValueError(f"an expression needs more than {longest} tokens")
        short, long = long, min(2 * long, longest)
    while long - short > 1:
        middle = (short + long) // 2
        short, long = (short, middle) if fits(middle) else (middle, long)
    return long


def holds(tokenizer, expressions) -> bool:
    try:
        tokenizer.encode_batch(list(expressions))
    except TokenizerError:
        return False
    return True


def refusal(tokenizer, expressions) -> str | None:
    """Why ``tokenizer`` cannot encode the set at any length (its first refusal), or None."""
    long = type(tokenizer)(**{**tokenizer.get_config(), "length": 4096})  # longer than any set here
    for expression in expressions:
        try:
            long.encode(expression)
        except TokenizerError as error:
            return str(error)
    return None


def edge_scores(trained, sets: dict[str, Split]) -> dict[str, dict | None]:
    """``trained``'s metrics on each set at the length it needs; None where it cannot read the set."""
    scores = {}
    for name, split in sets.items():
        length = tokens_needed(trained.tokenizer, split.expressions)
        if length is None:
            scores[name] = None
            continue
        tokenizer = type(trained.tokenizer)(**{**trained.tokenizer.get_config(), "length": length})
        try:
            model = at_input_length(trained.model, length)
        except (ValueError, TypeError):  # a weight or layer that depends on the length
            scores[name] = None
            continue
        predictions = trained.spec.predict_values(model, tokenizer.encode_batch(list(split.expressions)))
        scores[name] = {**regression_metrics(split.values, predictions), "tokens": length}
    return scores
