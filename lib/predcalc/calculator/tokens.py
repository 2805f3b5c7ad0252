"""The calculator's lexer: characters to tokens, numbers as signed digit atoms (code, not learned).

A token is an operator or parenthesis (a one-character string) or a :class:`Number`: a sign bit
and the digits of a numerator and a denominator, least significant digit first. Unary minus
binds to a literal (``2*-26``). The grammar check is a single left-to-right pass (no recursion,
so 5,000 nested parentheses are fine); it looks at token kinds only, never at values.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

OPERATORS = "+-*/"
#: Token kinds the controller sees: 0 is padding (before the start or after the end).
PAD, NUM = 0, 1
KINDS = {"+": 2, "-": 3, "*": 4, "/": 5, "(": 6, ")": 7}
N_KINDS = 8
MAX_CHARACTERS = 1_000_000


class CalculatorError(ValueError):
    """An expression the calculator refuses: malformed input or division by zero."""


@dataclasses.dataclass
class Number:
    """A signed rational atom: ``(-1)**sign * numerator / denominator``, digits least significant first."""

    sign: int
    numerator: np.ndarray
    denominator: np.ndarray

    @classmethod
    def from_text(cls, digits: str, negative: bool = False) -> Number:
        return cls(int(negative), digits_from_text(digits), _ONE)

    def text(self) -> str:
        numerator = text_from_digits(self.numerator)
        denominator = text_from_digits(self.denominator)
        sign = "-" if self.sign else ""  # zero comes without a sign (Engine.normalise)
        return f"{sign}{numerator}" if denominator == "1" else f"{sign}{numerator}/{denominator}"


def digits_from_text(digits: str) -> np.ndarray:
    """``"120"`` -> ``[0, 2, 1]`` (least significant first, leading zeros dropped)."""
    stripped = digits.lstrip("0") or "0"
    if len(stripped) <= _SHORT:
        found = _SHORT_DIGITS.get(stripped)
        if found is None:
            found = _SHORT_DIGITS[stripped] = _digits(stripped)
            found.setflags(write=False)
        return found
    return _digits(stripped)


_SHORT, _SHORT_DIGITS = 4, {}  # the digits of short literals, shared (read-only) by every literal written alike


def _digits(stripped: str) -> np.ndarray:
    return np.frombuffer(stripped[::-1].encode(), dtype=np.uint8) - ord("0")


_ONE = digits_from_text("1")
_ONE.setflags(write=False)  # shared by every integer's denominator


def text_from_digits(digits: np.ndarray) -> str:
    """``[0, 2, 1]`` -> ``"120"``: every digit written, most significant first (no digit looked at;
    the lexer and :meth:`Engine.normalise` leave no leading zeros)."""
    return (np.asarray(digits[::-1], dtype=np.uint8) + ord("0")).tobytes().decode()


_TOKENS = re.compile(r"([0-9]+)|([-+*/()])|(\s+)|(.)", re.DOTALL)


def lex(text: str) -> list:
    """Tokens of ``text``: Numbers and one-character operator/parenthesis strings.

    Raises:
        CalculatorError: on characters outside the grammar or a malformed token sequence, with
            the position of the problem.
    """
    if not isinstance(text, str):
        raise CalculatorError(f"expression must be a string. Received: {text!r}")
    if len(text) > MAX_CHARACTERS:
        raise CalculatorError(f"expression longer than {MAX_CHARACTERS:,} characters")
    tokens, positions = [], []
    for match in _TOKENS.finditer(text):
        digits, symbol, _, other = match.groups()
        if digits is not None:
            negative = tokens and tokens[-1] == "-" and _unary(tokens, len(tokens) - 1)
            if negative:
                tokens.pop()
                positions.pop()
            tokens.append(Number.from_text(digits, negative=bool(negative)))
            positions.append(match.start())
        elif symbol is not None:
            tokens.append(symbol)
            positions.append(match.start())
        elif other is not None:
            raise CalculatorError(f"unexpected character {other!r} at position {match.start()}")
    _check(tokens, positions, text)
    return tokens


def _unary(tokens: list, index: int) -> bool:
    """The ``-`` at ``index`` is a sign (not an operator) at the start, after an operator or after ``(``."""
    return index == 0 or (isinstance(tokens[index - 1], str) and tokens[index - 1] != ")")


def _check(tokens: list, positions: list, text: str) -> None:
    if not tokens:
        raise CalculatorError("empty expression")
    depth, expect_operand = 0, True
    for token, position in zip(tokens, positions):
        if isinstance(token, Number) or token == "(":
            if not expect_operand:
                raise CalculatorError(f"missing operator before position {position}")
            if token == "(":
                depth += 1
            else:
                expect_operand = False
        elif token == ")":
            if expect_operand:
                raise CalculatorError(f"missing number before ')' at position {position}")
            depth -= 1
            if depth < 0:
                raise CalculatorError(f"unbalanced parentheses: ')' at position {position} has no '('")
        else:
            if expect_operand:
                raise CalculatorError(f"operator {token!r} at position {position} has no left operand")
            expect_operand = True
    if expect_operand:
        raise CalculatorError(f"expression ends too early: {text.strip()[-20:]!r}")
    if depth:
        raise CalculatorError(f"unbalanced parentheses: {depth} '(' never closed")


def kind(token) -> int:
    return NUM if isinstance(token, Number) else KINDS[token]


def windows_of_many(sequences: list, radius: int = 2) -> np.ndarray:
    """:func:`windows` of each sequence, concatenated: one gather for the whole batch.

    The sequences are laid out with ``radius`` PADs before each and after the last, so the i-th
    sequence's tokens sit ``(i + 1) * radius`` places after their index in the concatenation."""
    lengths = np.array([len(k) for k in sequences])
    pad = np.zeros(radius, np.int64)
    padded = np.concatenate([part for k in sequences for part in (pad, np.asarray(k, np.int64))] + [pad])
    position = np.arange(lengths.sum()) + radius * np.repeat(np.arange(1, len(sequences) + 1), lengths)
    return padded[(position - radius)[:, None] + np.arange(2 * radius + 1)]


def windows(kinds: np.ndarray, radius: int = 2) -> np.ndarray:
    """Each token's neighbourhood of kinds, ``[len, 2 * radius + 1]``, padded with PAD."""
    return windows_of_many([kinds], radius)
