"""Expressions of many-digit signed integers, and the token formats the digit models read.

An expression is a list of terms, each a signed integer with the operator before it
(``17 - -250 + 3``: terms ``+17``, ``- -250``, ``+ +3``). Its value is an exact Python integer.

A *format* writes an expression as one token sequence for a causal decoder: the prompt, then the
rows the model writes. Everything here is design, chosen before training and listed in the digit
notebook's Method; no part of it adds, carries or compares:

- every term is written as its operator, its number's sign and its digits, zero-padded to the
  widest term's width ``W`` (the first term gets the operator ``+``);
- ``reverse``: numbers are written least significant digit first (else most significant first);
- ``scratchpad``: before the answer the model writes one row per term, the running total after
  that term in ten's complement over ``W + 2`` digits (``-3`` over 3 digits is ``997``); without
  it the model writes the answer at once;
- the answer: its sign (``+`` or ``-``; zero is ``+``) and the magnitude over ``W + 1`` digits;
- position ids (``positions``): ``absolute`` (the token's index), ``abacus`` (a digit's index
  within its own number, from the first digit written) or ``coupled`` (a digit's significance, with
  a second id for its row: term ``j`` is level ``2j``, scratch row ``j`` level ``2j + 1``, the
  answer level ``2T + 2``). A rotary decoder's attention is rotated by these ids, so only their
  differences matter; a decoder with learned id tables reads the ids themselves, and trains with
  a random offset added to them (:func:`table_room` says how far they may move).

The decoding loop (:func:`decode_rows`' caller in :mod:`predcalc.models.digit_decoder`) writes the
layout: the separators, how many digits a row has and how many rows there are. The network writes
every digit and the answer's sign.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

PAD, SEP = 0, 13  # padding; "=" before each written row
PLUS, MINUS = 11, 12
BOS = 14
VOCAB = 15  # 0 pad, 1-10 the digits 0-9, 11 "+", 12 "-", 13 "=", 14 start
DIGIT0 = 1

POSITIONS = ("absolute", "abacus", "coupled")
ID_FLOOR = -1
"""The lowest id a format writes (the operator before a number's first digit); a learned id table
is indexed from it."""


def table_room(ids, levels, tables: tuple[int, int]) -> tuple[int, int]:
    """How far ``ids`` and ``levels`` may be shifted up and stay inside learned tables of
    ``tables`` (ids from :data:`ID_FLOOR`, levels from 0); negative where they do not fit at all."""
    return tables[0] - (int(np.max(ids)) - ID_FLOOR + 1), tables[1] - (int(np.max(levels)) + 1)


_TERM = re.compile(r"\s*([+-])\s*([+-]?)\s*([0-9]+)\s*")
_FIRST = re.compile(r"\s*([+-]?)\s*([0-9]+)\s*")


class DigitExpressionError(ValueError):
    """A line that is not an expression of signed integers joined by + and -."""


@dataclasses.dataclass(frozen=True)
class Expression:
    """Terms as (operator, number) pairs: operator +1 or -1, number a signed Python int."""

    terms: tuple[tuple[int, int], ...]

    @property
    def value(self) -> int:
        return sum(op * number for op, number in self.terms)

    @property
    def width(self) -> int:
        """The widest term's digit count."""
        return max(len(str(abs(number))) for _, number in self.terms)

    def text(self) -> str:
        parts = []
        for index, (op, number) in enumerate(self.terms):
            if index:
                parts.append("+" if op > 0 else "-")
            parts.append(str(number))
        return " ".join(parts)


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # past Python's limit on converting digit strings (4300 digits)
        raise DigitExpressionError(
            f"a number of {len(text.lstrip('+-'))} digits is more than this reader takes"
        ) from None


def parse(text: str) -> Expression:
    """``"17 - -250 + 3"`` as an :class:`Expression`; a one-line error for anything else."""
    first = _FIRST.match(text)
    if not first:
        raise DigitExpressionError(f"not an expression of integers joined by + and -: {text[:40]!r}")
    terms = [(1, _integer(first.group(1) + first.group(2)))]
    position = first.end()
    while position < len(text):
        term = _TERM.match(text, position)
        if not term:
            raise DigitExpressionError(f"not an expression of integers joined by + and -: {text[:40]!r}")
        terms.append((1 if term.group(1) == "+" else -1, _integer(term.group(2) + term.group(3))))
        position = term.end()
    if len(terms) < 2:
        raise DigitExpressionError(f"an expression needs two terms or more: {text[:40]!r}")
    return Expression(tuple(terms))


@dataclasses.dataclass(frozen=True)
class Format:
    """How an expression is written for a decoder (the module docstring lists each choice)."""

    positions: str = "coupled"
    reverse: bool = True
    scratchpad: bool = True

    def __post_init__(self):
        if self.positions not in POSITIONS:
            raise ValueError(f"positions must be one of {', '.join(POSITIONS)}, not {self.positions!r}")


@dataclasses.dataclass
class Encoded:
    """One expression as a decoder reads it: tokens, the two id rows, and which positions the
    network writes (``target``: the token to predict at the position before it)."""

    tokens: np.ndarray
    ids: np.ndarray
    levels: np.ndarray
    written: np.ndarray  # True where the token is written by the network (digits of a row, the sign)
    prompt_length: int


def _digits(magnitude: int, width: int, reverse: bool) -> tuple[list[int], list[int]]:
    text = str(magnitude).rjust(width, "0")
    if len(text) > width:
        raise ValueError(f"{magnitude} does not fit in {width} digits")
    significance = list(range(width - 1, -1, -1))  # of each written digit, most significant first
    digits = [int(c) for c in text]
    if reverse:
        return digits[::-1], significance[::-1]
    return digits, significance


def complement(value: int, width: int) -> int:
    """``value`` in ten's complement over ``width`` digits (the scratch rows' numbers)."""
    return value % 10**width


def rows(expression: Expression, fmt: Format) -> list[tuple[int | None, int, int]]:
    """The rows the network writes: (sign or None, magnitude, width) each."""
    width = expression.width
    out = []
    if fmt.scratchpad:
        total = 0
        for op, number in expression.terms:
            total += op * number
            out.append((None, complement(total, width + 2), width + 2))
    value = expression.value
    out.append((PLUS if value >= 0 else MINUS, abs(value), width + 1))
    return out


def encode(expression: Expression, fmt: Format, answer=True) -> Encoded:
    """The token sequence of ``expression`` (with its rows where ``answer``, else the prompt only).

    Ids: a digit's significance plus 1 (``coupled``) or its index within its number plus 1
    (``abacus``); the operator, sign and ``=`` tokens before a number continue its ids backwards,
    so the token before a digit always has the id one step before the digit's. ``absolute``: every
    token's index. Levels (``coupled`` only): term ``j`` is level ``2j`` and scratch row ``j`` level
    ``2j + 1``, so a row finds its term one level below and the row before it two below; the
    answer is level ``2T + 2``; 0 elsewhere."""
    tokens, ids, levels, written = [BOS], [0], [0], [False]

    def number(lead, magnitude, row_width, level, write):
        digits, significance = _digits(magnitude, row_width, fmt.reverse)
        if fmt.positions == "coupled":
            number_ids = [1 + sig for sig in significance]
            step = 1 if fmt.reverse else -1
        else:
            number_ids = [1 + index for index in range(len(digits))]
            step = 1
        for back, token in enumerate(lead):
            tokens.append(token)
            ids.append(number_ids[0] - step * (len(lead) - back))
            levels.append(level)
            written.append(write and token in (PLUS, MINUS))
        for digit, digit_id in zip(digits, number_ids, strict=True):
            tokens.append(DIGIT0 + digit)
            ids.append(digit_id)
            levels.append(level)
            written.append(write)

    width = expression.width
    for index, (op, value) in enumerate(expression.terms, start=1):
        number([PLUS if op > 0 else MINUS, PLUS if value >= 0 else MINUS], abs(value), width, 2 * index, False)
    prompt_length = len(tokens)
    if answer:
        for index, (sign, magnitude, row_width) in enumerate(rows(expression, fmt), start=1):
            level = 2 * len(expression.terms) + 2 if sign is not None else 2 * index + 1
            number([SEP] + ([sign] if sign is not None else []), magnitude, row_width, level, True)
    if fmt.positions == "absolute":
        ids = list(range(len(tokens)))
    if fmt.positions != "coupled":
        levels = [0] * len(tokens)
    return Encoded(
        np.array(tokens, np.int32),
        np.array(ids, np.int32),
        np.array(levels, np.int32),
        np.array(written, bool),
        prompt_length,
    )


def read_rows(tokens, expression: Expression, fmt: Format) -> int | None:
    """The answer the written rows give (the last row: sign and magnitude), or None if a written
    token is not a digit where a digit belongs."""
    sign_token, _, row_width = rows(expression, fmt)[-1]
    answer = list(tokens[-(row_width + 1) :])
    sign, digits = answer[0], answer[1:]
    if sign not in (PLUS, MINUS) or any(not DIGIT0 <= t < DIGIT0 + 10 for t in digits):
        return None
    digits = [t - DIGIT0 for t in digits]
    if fmt.reverse:
        digits = digits[::-1]
    magnitude = int("".join(map(str, digits)))
    return -magnitude if sign == MINUS else magnitude


# --- drawing expressions -------------------------------------------------------------------------


def draw_number(rng: np.random.Generator, digits: int, signed: bool) -> int:
    """A number of exactly ``digits`` digits (a first digit other than 0 unless it has one digit),
    negative half the time where ``signed``."""
    first = rng.integers(1 if digits > 1 else 0, 10)
    rest = rng.integers(0, 10, size=digits - 1)
    magnitude = int(str(first) + "".join(map(str, rest))) if digits > 1 else int(first)
    return -magnitude if signed and rng.random() < 0.5 else magnitude


def draw(rng, count, terms=(2, 3), digits=(1, 10), signed=True, operators="+-") -> list[Expression]:
    """``count`` expressions: each term count and each number's digit count uniform in the inclusive
    ranges ``terms`` and ``digits``, operators uniform over ``operators``."""
    out = []
    for _ in range(count):
        n_terms = int(rng.integers(terms[0], terms[1] + 1))
        items = []
        for index in range(n_terms):
            op = 1 if index == 0 or operators == "+" else int(rng.choice([1, -1]))
            items.append((op, draw_number(rng, int(rng.integers(digits[0], digits[1] + 1)), signed)))
        out.append(Expression(tuple(items)))
    return out


RUNGS = {
    1: dict(terms=(2, 2), signed=False, operators="+"),
    2: dict(terms=(2, 2), signed=False, operators="+-"),
    3: dict(terms=(3, 3), signed=True, operators="+-"),
    4: dict(terms=(4, 6), signed=True, operators="+-"),
}
"""The task's rungs: ``a + b``; ``a ± b`` (signed answers); ``a ± b ± c`` with signed numbers (the
prior report's form); more terms."""


def carry_chain(rng, count, digits) -> list[Expression]:
    """``9...9 + 1``-like sums whose carry runs the whole width (the nines family)."""
    out = []
    for _ in range(count):
        a = 10**digits - 1 - int(rng.integers(0, 10))
        b = int(rng.integers(1, 10 ** min(digits, 2)))
        c = int(rng.integers(0, 10))
        out.append(Expression(((1, a), (1, b), (1, c))))
    return out


def borrow_chain(rng, count, digits) -> list[Expression]:
    """``10...0 - 1``-like differences whose borrow runs the whole width."""
    out = []
    for _ in range(count):
        a = 10 ** (digits - 1) + int(rng.integers(0, 10))
        b = int(rng.integers(1, 10 ** min(digits - 1, 2)) + 10)
        out.append(Expression(((1, a), (-1, b), (1, int(rng.integers(0, 10))))))
    return out


def cancellation(rng, count, digits) -> list[Expression]:
    """``a - b`` with ``a`` and ``b`` close: equal leading digits, so the answer is short."""
    out = []
    for _ in range(count):
        a = abs(draw_number(rng, digits, False))
        b = a + int(rng.integers(-999, 1000))
        b = max(b, 10 ** (digits - 1))
        out.append(Expression(((1, a), (-1, b), (1, int(rng.integers(0, 10))))))
    return out


def leading_cancel(rng, count, digits) -> list[Expression]:
    """Three terms whose leading digits cancel to zero: ``a + b - c`` with ``c`` about ``a + b``."""
    out = []
    for _ in range(count):
        a = abs(draw_number(rng, digits - 1, False))
        b = abs(draw_number(rng, digits - 1, False))
        c = a + b + int(rng.integers(-99, 100))
        c = max(c, 1)
        out.append(Expression(((1, a), (1, b), (-1, c))))
    return out


# --- the decoding loop ----------------------------------------------------------------------------


def layout(expressions, fmt: Format):
    """Encoded sequences of expressions that share one shape (the same width and term count), with
    their rows' digits zeroed: the loop knows where each written token goes and its ids, not its
    value. Returns tokens, ids, levels, written and the prompt length."""
    encoded = [encode(e, fmt) for e in expressions]
    shapes = {(len(x.tokens), x.prompt_length) for x in encoded}
    if len(shapes) != 1:
        raise ValueError("layout: the expressions do not share one width and term count")
    stack = lambda name: np.stack([getattr(x, name) for x in encoded])  # noqa: E731
    tokens, written = stack("tokens"), stack("written")
    tokens = np.where(written, PAD, tokens)
    return tokens, stack("ids"), stack("levels"), written, encoded[0].prompt_length


def shape_key(expression: Expression) -> tuple[int, int]:
    """Expressions with one key share one layout (and so one batch)."""
    return expression.width, len(expression.terms)


def padded(length: int, multiple: int = 32) -> int:
    """``length`` rounded up to a multiple of ``multiple``: sequences padded at the end (a causal
    model's earlier outputs never see the padding) so that few shapes occur."""
    return -(-length // multiple) * multiple


def greedy(expressions, fmt: Format, logits_at, batch_size: int = 256) -> list[int | None]:
    """Each expression's answer, decoded greedily: the loop writes the layout (separators, row
    widths, the ids) and asks ``logits_at(tokens, ids, levels, position)`` for the logits
    ``(batch, vocabulary)`` of the token at ``position``, given the sequence up to ``position``
    padded to a multiple of 32, with nothing written yet at ``position`` or after it (a causal
    network reads only what comes before).
    None where a written token is not what its place allows (a digit, or the answer's sign)."""
    answers: list[int | None] = [None] * len(expressions)
    groups: dict[tuple[int, int], list[int]] = {}
    for index, expression in enumerate(expressions):
        groups.setdefault(shape_key(expression), []).append(index)
    for indices in groups.values():
        for start in range(0, len(indices), batch_size):
            chunk = indices[start : start + batch_size]
            batch = [expressions[i] for i in chunk]
            tokens, ids, levels, written, prompt_length = layout(batch, fmt)
            length = tokens.shape[1]
            pad = ((0, 0), (0, padded(length) - length))
            tokens, ids, levels = (np.pad(a, pad) for a in (tokens, ids, levels))
            for position in range(prompt_length, length):
                if written[0, position]:
                    cut = padded(position)  # the network reads only what comes before: a shorter pass
                    logits = logits_at(tokens[:, :cut], ids[:, :cut], levels[:, :cut], position)
                    tokens[:, position] = np.argmax(np.asarray(logits), axis=-1)
            for i, row in zip(chunk, tokens[:, :length], strict=True):
                answers[i] = read_rows(row, expressions[i], fmt)
    return answers


# --- the aligned columns a recurrence reads -------------------------------------------------------

COLUMN_SLOTS = 3  # terms the column input has room for: the aligned recurrence's box in terms
COLUMN_FEATURES = COLUMN_SLOTS * 14  # per term: operator (2), sign (2), digit (10), one-hot


class TooManyTermsError(DigitExpressionError):
    """An expression with more terms than the column input has slots."""


def columns(expressions) -> np.ndarray:
    """Expressions sharing one width ``W`` as ``(batch, W + 1, COLUMN_FEATURES)`` one-hot columns,
    least significant first; a term's missing digits (and the top column) read as 0, an empty slot
    as all zeros."""
    widths = {e.width for e in expressions}
    if len(widths) != 1:
        raise ValueError("columns: the expressions do not share one width")
    width = widths.pop() + 1
    out = np.zeros((len(expressions), width, COLUMN_FEATURES), np.float32)
    for row, expression in enumerate(expressions):
        if len(expression.terms) > COLUMN_SLOTS:
            raise TooManyTermsError(f"{len(expression.terms)} terms; the column input has {COLUMN_SLOTS} slots")
        for slot, (op, number) in enumerate(expression.terms):
            base = 14 * slot
            out[row, :, base + (0 if op > 0 else 1)] = 1
            out[row, :, base + 2 + (0 if number >= 0 else 1)] = 1
            digits = str(abs(number))[::-1].ljust(width, "0")
            for column, digit in enumerate(digits):
                out[row, column, base + 4 + int(digit)] = 1
    return out


def column_targets(expressions) -> tuple[np.ndarray, np.ndarray]:
    """The answers as column digits ``(batch, W + 1)`` (least significant first) and signs
    ``(batch,)`` (0 ``+``, 1 ``-``)."""
    width = expressions[0].width + 1
    digits = np.array([[int(c) for c in str(abs(e.value))[::-1].ljust(width, "0")] for e in expressions], np.int32)
    signs = np.array([int(e.value < 0) for e in expressions], np.int32)
    return digits, signs


def read_columns(digit_logits, sign_logits) -> list[int]:
    """Answers from the recurrence's outputs (argmax of each column and of the sign)."""
    digits = np.argmax(np.asarray(digit_logits), axis=-1)
    signs = np.argmax(np.asarray(sign_logits), axis=-1)
    out = []
    for row, sign in zip(digits, signs, strict=True):
        magnitude = int("".join(str(d) for d in row[::-1]))
        out.append(-magnitude if sign else magnitude)
    return out
