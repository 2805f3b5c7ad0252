"""The prior report's data protocol (the prior report's protocol, Mukin 2025), deterministic for a seed.

- training draw: 4,000 draws of ``a op b op c`` with integers from ``range(-5, 5)`` and
  operators ``+``/``-``, de-duplicated, split 75 % train / 25 % validation;
- test "in range": every expression of that form (4,000 in all) not in the training draw;
- test "out of range": integers from {-8..-5} and {5..8}: 8 x 8 x 8 x 4 = 2,048;
- test "long": 2 to 8 integers from -5..5 inclusive, random operators, 100 per length;
- the two subsets the benchmark score uses: out-of-range expressions whose three absolute
  values sum to 22 ("out22") and 4-number long expressions ("long4").
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from predcalc.data.expressions import count_numbers, evaluate, format_expression

IN_RANGE = tuple(range(-5, 5))
OUT_OF_RANGE = tuple(range(-8, -4)) + tuple(range(5, 9))
LONG_RANGE = tuple(range(-5, 6))
LONG_LENGTHS = tuple(range(2, 9))
REFERENCE_OPERATORS = ("+", "-")


@dataclasses.dataclass(frozen=True)
class Split:
    """Expressions with their exact values and the number of terms in each."""

    name: str
    expressions: tuple[str, ...]
    values: np.ndarray  # (n,) float64
    terms: np.ndarray  # (n,) int

    def __len__(self) -> int:
        return len(self.expressions)

    def subset(self, mask, name: str) -> Split:
        mask = np.asarray(mask, dtype=bool)
        return Split(
            name=name,
            expressions=tuple(e for e, keep in zip(self.expressions, mask) if keep),
            values=self.values[mask],
            terms=self.terms[mask],
        )


def protocol_record() -> dict:
    """The protocol's ranges and operators as a record (``predcalc report`` writes it to
    ``reports/protocol.json``, where the findings' claims read them)."""
    return {
        "in_range": list(IN_RANGE),
        "out_of_range": list(OUT_OF_RANGE),
        "long_range": list(LONG_RANGE),
        "long_lengths": list(LONG_LENGTHS),
        "operators": list(REFERENCE_OPERATORS),
    }


def make_split(name: str, expressions) -> Split:
    expressions = tuple(expressions)
    values = np.array([float(evaluate(e)) for e in expressions], dtype=np.float64)
    terms = np.array([count_numbers(e) for e in expressions], dtype=np.int64)
    return Split(name=name, expressions=expressions, values=values, terms=terms)


def all_three_term_expressions(integers=IN_RANGE, operators=REFERENCE_OPERATORS) -> list[str]:
    """Every ``a op b op c`` over ``integers`` and ``operators``, in a fixed order."""
    return [
        format_expression((a, b, c), (op1, op2))
        for a, op1, b, op2, c in itertools.product(integers, operators, integers, operators, integers)
    ]


@dataclasses.dataclass(frozen=True)
class Protocol:
    """The five splits of the reference protocol and the two score subsets."""

    seed: int
    train: Split
    validation: Split
    test_in: Split
    test_out: Split
    test_long: Split

    @property
    def test_out22(self) -> Split:
        """Out-of-range expressions whose three absolute values sum to 22 (score subset)."""
        sums = [sum(abs(int(t)) for t in e.split(" ")[::2]) for e in self.test_out.expressions]
        return self.test_out.subset(np.array(sums) == 22, "out22")

    @property
    def test_long4(self) -> Split:
        """Long-test expressions with exactly four numbers (score subset)."""
        return self.test_long.subset(self.test_long.terms == 4, "long4")

    def test_sets(self) -> dict[str, Split]:
        """The test sets every model is evaluated on, by name."""
        return {
            "in": self.test_in,
            "out": self.test_out,
            "long": self.test_long,
            "out22": self.test_out22,
            "long4": self.test_long4,
        }

    def counts(self) -> dict[str, int]:
        return {
            name: len(split)
            for name, split in {"train": self.train, "validation": self.validation, **self.test_sets()}.items()
        }


def reference_protocol(
    seed: int = 0, draws: int = 4000, validation_fraction: float = 0.25, long_per_length: int = 100
) -> Protocol:
    """Build the reference protocol; the same ``seed`` always gives the same splits."""
    if draws <= 0:
        raise ValueError(f"draws must be positive. Received: draws={draws}")
    if not 0.0 < validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must be in (0, 1). Received: validation_fraction={validation_fraction}")
    rng = np.random.default_rng(seed)
    numbers = rng.choice(IN_RANGE, size=(draws, 3))
    operators = rng.choice(REFERENCE_OPERATORS, size=(draws, 2))
    drawn = list(dict.fromkeys(format_expression(n, o) for n, o in zip(numbers, operators)))
    order = rng.permutation(len(drawn))
    n_train = int(round(len(drawn) * (1.0 - validation_fraction)))
    train = [drawn[i] for i in order[:n_train]]
    validation = [drawn[i] for i in order[n_train:]]

    seen = set(drawn)
    test_in = [e for e in all_three_term_expressions() if e not in seen]
    test_out = all_three_term_expressions(OUT_OF_RANGE)

    test_long = []
    for length in LONG_LENGTHS:
        for _ in range(long_per_length):
            ints = rng.choice(LONG_RANGE, size=length)
            ops = rng.choice(REFERENCE_OPERATORS, size=length - 1)
            test_long.append(format_expression(ints, ops))

    return Protocol(
        seed=seed,
        train=make_split("train", train),
        validation=make_split("validation", validation),
        test_in=make_split("in", test_in),
        test_out=make_split("out", test_out),
        test_long=make_split("long", test_long),
    )


def reference_getxy_draws() -> set[str]:
    """The prior report's own training draw (train + validation), replayed from ``GetXY.py``.

    ``GetXY.py`` seeds NumPy's legacy generator with 42 and draws 4,000 ``a op b op c``; the
    set of unique expressions is fixed by that seed (its order, and so the prior report's 75/25 split,
    depends on Python's string hashing and is not reproducible). The prior report's in-range test set
    is every expression over -5..4 not in this set.
    """
    state = np.random.RandomState(42)
    x1, x2, x3 = (state.rand(4000) * 10 for _ in range(3))
    ints = [(x.astype(int) - 5) for x in (x1, x2, x3)]
    drawn = set()
    for i in range(4000):
        n = state.rand(1)[0]
        if n < 0.25:
            ops = ("+", "+")
        elif 0.25 < n < 0.5:
            ops = ("+", "-")
        elif n > 0.75:
            ops = ("-", "+")
        else:
            ops = ("-", "-")
        drawn.add(format_expression((int(ints[0][i]), int(ints[1][i]), int(ints[2][i])), ops))
    return drawn


# The former names, read by predcalc.data.calculator_families: its code is part of the calculator study's
# fingerprint (predcalc.calculator.cache.FINGERPRINTED), so it keeps them until its stored parts are recomputed.
seed_protocol = reference_protocol  # old name (issue 43)
SEED_OPERATORS = REFERENCE_OPERATORS  # old name (issue 43)
