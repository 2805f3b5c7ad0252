"""Arithmetic expressions: a tokenizer, an operator-precedence parser and an exact evaluator.

The grammar (integers, ``+ - * /``, unary minus, parentheses)::

    expression := term (("+" | "-") term)*
    term       := factor (("*" | "/") factor)*
    factor     := ("-" | "+") factor | INTEGER | "(" expression ")"

Values are computed with :class:`fractions.Fraction`, so ``1 / 3 * 3`` is exactly 1.
Nothing here calls ``eval``: a string is only ever tokenised and parsed. Parsing and evaluation
use explicit stacks, not recursion: 20,000 terms or 5,000 nested parentheses are fine.
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
                f"unexpected character {other!r} at position {match.start(2)} in {quoted_expression(text)!r}"
            )
    return tokens


_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


class _Parser:
    """Operator precedence with explicit stacks (no recursion): the grammar above, for expressions
    of any length and nesting depth (Python's recursion limit does not apply)."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = tokenize(text)

    def _unexpected(self, token: Token) -> ExpressionError:
        return ExpressionError(
            f"unexpected {token.text!r} at position {token.position} in {quoted_expression(self.text)!r}"
        )

    def parse(self):
        values: list = []
        operators: list[Token] = []  # binary and unary operators, and "(" markers
        unary: set[int] = set()  # ids of the tokens on ``operators`` that are unary signs

        def reduce_binary():
            op = operators.pop()
            right = values.pop()
            values.append((op.text, values.pop(), right))

        def finish_operand(value):
            while operators and id(operators[-1]) in unary:
                sign = operators.pop()
                value = ("neg" if sign.text == "-" else "pos", value)
            values.append(value)

        expect_operand = True
        for token in self.tokens:
            if expect_operand:
                if token.kind == "op" and token.text in "+-":
                    operators.append(token)
                    unary.add(id(token))
                elif token.kind == "int":
                    finish_operand(int(token.text))
                    expect_operand = False
                elif token.kind == "(":
                    operators.append(token)
                else:
                    raise self._unexpected(token)
            elif token.kind == "op":
                precedence = _PRECEDENCE[token.text]
                while operators and operators[-1].kind == "op" and _PRECEDENCE[operators[-1].text] >= precedence:
                    reduce_binary()
                operators.append(token)
                expect_operand = True
            elif token.kind == ")":
                while operators and operators[-1].kind == "op":
                    reduce_binary()
                if not operators:
                    raise ExpressionError(
                        f"unbalanced parentheses: ')' at position {token.position} has no '(' "
                        f"in {quoted_expression(self.text)!r}"
                    )
                operators.pop()
                finish_operand(("group", values.pop()))
            else:  # a number or "(" right after an operand
                opening = next((op for op in reversed(operators) if op.kind == "("), None)
                if opening is not None:
                    raise ExpressionError(
                        f"unbalanced parentheses: '(' at position {opening.position} is never "
                        f"closed in {quoted_expression(self.text)!r}"
                    )
                raise self._unexpected(token)
        if expect_operand:
            raise ExpressionError(f"expression ends too early: {quoted_expression(self.text)!r}")
        while operators and operators[-1].kind == "op":
            reduce_binary()
        if operators:  # an unclosed "(" (the innermost one is named)
            raise ExpressionError(
                f"unbalanced parentheses: '(' at position {operators[-1].position} is never "
                f"closed in {quoted_expression(self.text)!r}"
            )
        return values.pop()


def quoted_expression(text: str, limit: int = 80) -> str:
    """The expression as error messages quote it: whole, or its start and end when it is long."""
    return text if len(text) <= limit else f"{text[: limit // 2 - 2]} ... {text[-(limit // 2 - 3) :]}"


def parse(text: str):
    """Parse ``text`` into a nested-tuple syntax tree.

    Leaves are ints; nodes are ``(op, left, right)`` for binary operators, ``("neg", x)``
    and ``("pos", x)`` for unary signs and ``("group", x)`` for parentheses.
    """
    return _Parser(text).parse()


def parsed_tokens(text: str) -> list[Token]:
    """The tokens of ``text`` once it parses (:func:`parse`'s errors otherwise): one tokenisation
    for both, where a caller needs the expression checked and its tokens."""
    parser = _Parser(text)
    parser.parse()
    return parser.tokens


def _children(tree) -> tuple:
    return () if isinstance(tree, int) else tree[1:]


def _postorder(tree):
    """The nodes of a tree, children before their parent, left to right (no recursion)."""
    stack = [(tree, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded or isinstance(node, int):
            yield node
        else:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(_children(node)))


def _value(tree) -> Fraction:
    results: list[Fraction] = []
    for node in _postorder(tree):
        if isinstance(node, int):
            results.append(Fraction(node))
            continue
        op = node[0]
        if op == "neg":
            results.append(-results.pop())
            continue
        if op in ("pos", "group"):
            continue  # the value on the stack is already the node's
        right, left = results.pop(), results.pop()
        if op == "+":
            results.append(left + right)
        elif op == "-":
            results.append(left - right)
        elif op == "*":
            results.append(left * right)
        elif right == 0:
            raise ExpressionError("division by zero")
        else:
            results.append(left / right)
    return results.pop()


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
    depths: list[int] = []
    for node in _postorder(tree):
        if isinstance(node, int):
            depths.append(0)
            continue
        count = len(node) - 1
        inner = max(depths[-count:])
        del depths[-count:]
        depths.append(inner + 1 if node[0] == "group" else inner)
    return depths.pop()


def format_expression(numbers, operators) -> str:
    """Write ``a op b op c`` the prior report's way: spaces around operators, signs glued to numbers."""
    numbers = [int(n) for n in numbers]
    if len(operators) != len(numbers) - 1:
        raise ValueError(
            f"need one operator fewer than numbers. Received: {len(numbers)} numbers, {len(operators)} operators"
        )
    parts = [str(numbers[0])]
    for op, number in zip(operators, numbers[1:]):
        parts += [op, str(number)]
    return " ".join(parts)


def running_totals(text: str) -> list[Fraction]:
    """The value after each term from the second on, left to right, of a flat sum of signed
    integers: ``"-3 + 4 - 2"`` -> ``[1, -1]`` (the scratchpad a language model writes; the last
    is the answer). Parentheses, ``*`` and ``/`` fail: a running total is left to right only."""
    tokens = parsed_tokens(text)
    if any(t.kind in "()" or t.text in "*/" for t in tokens):
        raise ExpressionError(f"running totals need a flat sum of + and - terms: {quoted_expression(text)!r}")
    ends = [t.position + len(t.text) for t in tokens if t.kind == "int"]
    return [evaluate(text[:end]) for end in ends[1:]]
