"""Arithmetic expressions: a tokenizer, a recursive-descent parser and an exact evaluator.

The grammar (integers, ``+ - * /``, unary minus, parentheses)::

    expression := term (("+" | "-") term)*
    term       := factor (("*" | "/") factor)*
    factor     := ("-" | "+") factor | INTEGER | "(" expression ")"

Values are computed with :class:`fractions.Fraction`, so ``1 / 3 * 3`` is exactly 1.
Nothing here calls ``eval``: a string is only ever tokenised and parsed.
"""

from __future__ import annotations

import dataclasses
import re
from fractions import Fraction

OPERATORS = "+-*/"

_TOKEN = re.compile(r"\s*(?:(\d+)|(.))")


class ExpressionError(ValueError):
    """An expression that cannot be tokenised, parsed or evaluated."""


@dataclasses.dataclass(frozen=True)
class Token:
    kind: str  # "int", "op", "(" or ")"
    text: str
    position: int


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into integer, operator and parenthesis tokens.

    Raises:
        ExpressionError: on an empty string or a character that is not part of the grammar.
    """
    if not isinstance(text, str):
        raise ExpressionError(f"expression must be a string. Received: {text!r}")
    if not text.strip():
        raise ExpressionError("empty expression")
    tokens = []
    for match in _TOKEN.finditer(text):
        number, other = match.groups()
        if number is not None:
            tokens.append(Token("int", number, match.start(1)))
        elif other is None or other.isspace():
            continue
        elif other in OPERATORS:
            tokens.append(Token("op", other, match.start(2)))
        elif other in "()":
            tokens.append(Token(other, other, match.start(2)))
        else:
            raise ExpressionError(
                f"unexpected character {other!r} at position {match.start(2)} in {text!r}"
            )
    return tokens


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = tokenize(text)
        self.index = 0

    def peek(self) -> Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self) -> Token:
        token = self.peek()
        if token is None:
            raise ExpressionError(f"expression ends too early: {self.text!r}")
        self.index += 1
        return token

    def parse(self):
        tree = self.expression()
        token = self.peek()
        if token is not None:
            if token.kind == ")":
                raise ExpressionError(
                    f"unbalanced parentheses: ')' at position {token.position} has no '(' in {self.text!r}"
                )
            raise ExpressionError(
                f"unexpected {token.text!r} at position {token.position} in {self.text!r}"
            )
        return tree

    def expression(self):
        tree = self.term()
        while (token := self.peek()) is not None and token.kind == "op" and token.text in "+-":
            self.take()
            tree = (token.text, tree, self.term())
        return tree

    def term(self):
        tree = self.factor()
        while (token := self.peek()) is not None and token.kind == "op" and token.text in "*/":
            self.take()
            tree = (token.text, tree, self.factor())
        return tree

    def factor(self):
        token = self.take()
        if token.kind == "op" and token.text in "+-":
            return ("neg" if token.text == "-" else "pos", self.factor())
        if token.kind == "int":
            return int(token.text)
        if token.kind == "(":
            tree = self.expression()
            closing = self.peek()
            if closing is None or closing.kind != ")":
                raise ExpressionError(
                    f"unbalanced parentheses: '(' at position {token.position} is never closed in {self.text!r}"
                )
            self.take()
            return ("group", tree)
        raise ExpressionError(
            f"unexpected {token.text!r} at position {token.position} in {self.text!r}"
        )


def parse(text: str):
    """Parse ``text`` into a nested-tuple syntax tree.

    Leaves are ints; nodes are ``(op, left, right)`` for binary operators, ``("neg", x)``
    and ``("pos", x)`` for unary signs and ``("group", x)`` for parentheses.
    """
    return _Parser(text).parse()


def _value(tree) -> Fraction:
    if isinstance(tree, int):
        return Fraction(tree)
    op = tree[0]
    if op == "neg":
        return -_value(tree[1])
    if op in ("pos", "group"):
        return _value(tree[1])
    left, right = _value(tree[1]), _value(tree[2])
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:
        raise ExpressionError("division by zero")
    return left / right


def evaluate(text: str) -> Fraction:
    """The exact value of an arithmetic expression.

    Example:
        >>> evaluate("3 - -2 + 4")
        Fraction(9, 1)
    """
    return _value(parse(text))


def count_numbers(text: str) -> int:
    """How many integers an expression holds (its number of terms)."""
    return sum(token.kind == "int" for token in tokenize(text))


def depth(tree) -> int:
    """Parenthesis nesting depth of a parsed expression."""
    if isinstance(tree, int):
        return 0
    inner = max(depth(child) for child in tree[1:])
    return inner + 1 if tree[0] == "group" else inner


def format_expression(numbers, operators) -> str:
    """Write ``a op b op c`` the seed's way: spaces around operators, signs glued to numbers."""
    numbers = [int(n) for n in numbers]
    if len(operators) != len(numbers) - 1:
        raise ValueError(
            f"need one operator fewer than numbers. Received: {len(numbers)} numbers, "
            f"{len(operators)} operators"
        )
    parts = [str(numbers[0])]
    for op, number in zip(operators, numbers[1:]):
        parts += [op, str(number)]
    return " ".join(parts)
