"""An extended benchmark suite beyond the reference protocol, each split fixed by a seed.

The training distribution is modest: integers of 1 to 2 digits, 2 to 4 terms, all four
operators with precedence, at most one level of parentheses. Each test family varies one
difficulty at a time beyond it:

- ``digits``: numbers of exactly d digits, d = 1..6 (3 terms, no parentheses);
- ``terms``: n = 2..10 terms of 1-2 digit numbers (no parentheses);
- ``depth``: parenthesis nesting depth k = 0..3 (4 to 6 one-digit terms).

Divisions are generated so every value is an integer (``a / b`` with ``b`` dividing ``a``),
so exact accuracy is well defined for models that write an integer answer.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from predcalc.data.expressions import count_numbers, depth, evaluate, parse
from predcalc.data.protocol import Split

ALL_OPERATORS = "+-*/"


@dataclasses.dataclass(frozen=True)
class SuiteSplit:
    """A split with the difficulty of each expression."""

    split: Split
    digits: np.ndarray  # (n,) most digits of any number
    depth: np.ndarray  # (n,) parenthesis nesting depth

    @property
    def terms(self) -> np.ndarray:
        return self.split.terms


def _number(rng, min_digits: int, max_digits: int) -> int:
    digits = int(rng.integers(min_digits, max_digits + 1))
    low = 0 if digits == 1 else 10 ** (digits - 1)
    return int(rng.integers(low, 10**digits))


def _leaf(rng, min_digits, max_digits, negative_rate=0.3) -> str:
    value = _number(rng, min_digits, max_digits)
    return f"-{value}" if value and rng.random() < negative_rate else str(value)


def random_expression(
    rng, terms: int, min_digits: int = 1, max_digits: int = 2, operators: str = ALL_OPERATORS, nesting: int = 0
) -> str:
    """A random expression with ``terms`` numbers and exactly ``nesting`` levels of parentheses.

    Multiplication and division join neighbouring numbers only (``a * b``, ``a / b`` with b
    dividing a), so every value is an integer and numbers stay of the asked size.
    """
    if terms < 1:
        raise ValueError(f"terms must be at least 1. Received: terms={terms}")
    if min_digits < 1 or max_digits < min_digits:
        raise ValueError(f"need 1 <= min_digits <= max_digits. Received: {min_digits}, {max_digits}")
    if any(op not in ALL_OPERATORS for op in operators) or not operators:
        raise ValueError(f"operators must be drawn from {ALL_OPERATORS!r}. Received: {operators!r}")
    if nesting > 0 and terms < 2:
        raise ValueError("parentheses need at least 2 terms")
    parts: list[str] = []
    index = 0
    while index < terms:
        op = str(rng.choice(list(operators))) if index else None
        if op is not None and op in "*/" and len(parts) >= 2 and parts[-2] in "*/":
            op = str(rng.choice([o for o in operators if o in "+-"] or ["+"]))  # one product or quotient per term
        if op is not None and op in "+-":
            parts.append(op)
        elif op is not None:  # * or /: glue to the previous number with a fresh right operand
            right = _number(rng, min_digits, max_digits)
            if op == "/":
                right = right or 1
                low = 1 if min_digits == 1 else 10 ** (min_digits - 1)
                high = 10**max_digits - 1
                q_low, q_high = -(-low // right), high // right
                if q_low > q_high:  # no multiple of ``right`` has the asked number of digits
                    parts += ["+", str(right)]
                    index += 1
                    continue
                previous = parts.pop()
                sign = "-" if previous.startswith("-") else ""
                parts.append(f"{sign}{int(rng.integers(q_low, q_high + 1)) * right}")
                parts += ["/", str(right)]
            else:
                parts += ["*", str(right)]
            index += 1
            continue
        parts.append(_leaf(rng, min_digits, max_digits))
        index += 1
    text = " ".join(parts)
    for _ in range(nesting):
        text = _wrap(rng, text)
    return text


def _wrap(rng, text: str) -> str:
    """Put parentheses around a contiguous run of additive terms (one more nesting level)."""
    tokens = text.split(" ")
    numbers = [i for i in range(0, len(tokens), 2)]
    if len(numbers) < 2:
        return f"({text})"
    # choose a span of numbers [a, b] (at least two) and wrap it; keep existing groups balanced
    for _ in range(50):
        a, b = sorted(rng.choice(len(numbers), size=2, replace=False))
        span = " ".join(tokens[numbers[a] : numbers[b] + 1])
        if span.count("(") == span.count(")") and "/" not in span.split(" ")[0:1]:
            candidate = " ".join(tokens[: numbers[a]] + [f"({span})"] + tokens[numbers[b] + 1 :])
            try:
                value = evaluate(candidate)
            except ValueError:  # ExpressionError: e.g. the new group divides by zero
                continue
            if value.denominator == 1 and depth(parse(candidate)) > depth(parse(text)):
                return candidate
    return f"({text})"


def _digits(text: str) -> int:
    return max(len(t.strip("()-")) for t in text.split(" ") if t.strip("()-").isdigit())


def make_suite_split(name: str, expressions) -> SuiteSplit:
    expressions = tuple(expressions)
    values = np.array([float(evaluate(e)) for e in expressions], dtype=np.float64)
    split = Split(
        name=name,
        expressions=expressions,
        values=values,
        terms=np.array([count_numbers(e) for e in expressions], dtype=np.int64),
    )
    return SuiteSplit(
        split=split,
        digits=np.array([_digits(e) for e in expressions], dtype=np.int64),
        depth=np.array([depth(parse(e)) for e in expressions], dtype=np.int64),
    )


def _draw(rng, count: int, **kwargs) -> list[str]:
    """``count`` distinct expressions with integer values."""
    found: dict[str, None] = {}
    attempts = 0
    while len(found) < count:
        attempts += 1
        if attempts > 50 * count:
            raise RuntimeError(f"could not draw {count} distinct expressions with {kwargs}")
        text = random_expression(rng, **kwargs)
        if evaluate(text).denominator == 1:
            found[text] = None
    return list(found)


def training_distribution(rng, count: int, operators: str = ALL_OPERATORS, parentheses: bool = True) -> list[str]:
    """2-4 terms, 1-2 digit numbers, ``operators`` (default + - * /), nesting 0 or 1 (0 without parentheses)."""
    out: dict[str, None] = {}
    while len(out) < count:
        terms = int(rng.integers(2, 5))
        nesting = int(rng.integers(0, 2)) if parentheses else 0
        out.update(
            dict.fromkeys(_draw(rng, 1, terms=terms, min_digits=1, max_digits=2, nesting=nesting, operators=operators))
        )
    return list(out)


def extended_suite(
    seed: int = 0,
    train_size: int = 20000,
    test_size: int = 200,
    operators: str = ALL_OPERATORS,
    parentheses: bool = True,
) -> dict[str, SuiteSplit]:
    """The extended suite: ``train``, ``validation``, ``iid`` and the difficulty families.

    Keys: ``train``, ``validation``, ``iid``, ``digits_1`` .. ``digits_6``, ``terms_2`` ..
    ``terms_10``, and with parentheses ``depth_0`` .. ``depth_3``. Test expressions never
    appear in training. ``operators="+-", parentheses=False`` gives the additive part of the
    suite, which models reading only signed sums (the typed tokens) can encode.
    """
    if train_size <= 0 or test_size <= 0:
        raise ValueError(f"sizes must be positive. Received: train_size={train_size}, test_size={test_size}")
    if not operators or any(op not in ALL_OPERATORS for op in operators):
        raise ValueError(f"operators must be drawn from {ALL_OPERATORS!r}. Received: operators={operators!r}")
    rng = np.random.default_rng(seed)
    pool = training_distribution(rng, train_size + train_size // 10 + test_size, operators, parentheses)
    train = pool[:train_size]
    validation = pool[train_size : train_size + train_size // 10]
    iid = pool[train_size + train_size // 10 :]
    seen = set(pool)

    def fresh(count, **kwargs):
        return [e for e in _draw(rng, count * 2, **kwargs) if e not in seen][:count]

    suite = {
        "train": make_suite_split("train", train),
        "validation": make_suite_split("validation", validation),
        "iid": make_suite_split("iid", iid),
    }
    for d in range(1, 7):
        suite[f"digits_{d}"] = make_suite_split(
            f"digits_{d}", fresh(test_size, terms=3, min_digits=d, max_digits=d, operators=operators)
        )
    for n in range(2, 11):
        suite[f"terms_{n}"] = make_suite_split(
            f"terms_{n}", fresh(test_size, terms=n, max_digits=2, operators=operators)
        )
    if not parentheses:
        return suite
    for k in range(0, 4):
        terms = int(max(4, k + 2))
        suite[f"depth_{k}"] = make_suite_split(
            f"depth_{k}", fresh(test_size, terms=terms, min_digits=1, max_digits=1, nesting=k, operators=operators)
        )
    return suite


@dataclasses.dataclass(frozen=True)
class SuiteProtocol:
    """The extended suite in the shape training takes (:func:`predcalc.training.experiment.run_seeds`):
    the suite's ``train`` and ``validation`` splits, and its test families as the test sets."""

    seed: int
    train: Split
    validation: Split
    tests: dict

    def test_sets(self) -> dict[str, Split]:
        return dict(self.tests)

    def counts(self) -> dict[str, int]:
        return {
            name: len(split)
            for name, split in {"train": self.train, "validation": self.validation, **self.tests}.items()
        }


def suite_protocol(suite: dict[str, SuiteSplit], seed: int) -> SuiteProtocol:
    """Train on the suite's ``train`` split, stop early on ``validation``, test on every other split."""
    missing = {"train", "validation"} - set(suite)
    if missing:
        raise ValueError(f"the suite has no {sorted(missing)} split; build it with extended_suite()")
    tests = {name: entry.split for name, entry in suite.items() if name not in ("train", "validation")}
    return SuiteProtocol(seed=seed, train=suite["train"].split, validation=suite["validation"].split, tests=tests)
