"""A user's own test file: one ``expression<TAB>answer`` per line, the answer optional."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from pathlib import Path

import numpy as np

from predcalc.data.expressions import ExpressionError, count_numbers, evaluate, quoted_expression
from predcalc.data.protocol import Split
from predcalc.errors import one_line


class ExpressionFileError(ValueError):
    """An expression file that cannot be used: a malformed line (:func:`load_exact_pairs`; the
    message names the file and line), no expression line, or no line a model could answer."""


@dataclasses.dataclass(frozen=True)
class ExpressionLine:
    """One expression line of a file: its number, its expression and its exact answer, or why the
    line cannot be read (``refused``: one line; then ``truth`` is None)."""

    number: int
    expression: str
    truth: Fraction | None
    refused: str | None = None


def read_expression_lines(path) -> list[ExpressionLine]:
    """Every expression line of ``expression<TAB>answer`` lines, a malformed one kept with its reason.

    Blank lines and lines starting with ``#`` are skipped. A missing answer is computed exactly; an
    answer that disagrees with the exact value is kept as given (the file is the ground truth the
    user chose). Answers are integers or fractions ``p/q`` read exactly (no float).

    Raises:
        FileNotFoundError: the file does not exist.
        ExpressionFileError: the file holds no expression line.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    lines = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = raw.rstrip("\n").split("\t")
        expression = fields[0].strip()
        if len(fields) > 2:
            reason = f"expected 'expression<TAB>answer', found {len(fields)} tab-separated fields"
            lines.append(ExpressionLine(number, expression, None, reason))
            continue
        try:
            exact = evaluate(expression)
        except ExpressionError as error:
            lines.append(ExpressionLine(number, expression, None, one_line(str(error))))
            continue
        except ValueError as error:  # a number past Python's limit on int-string conversion
            reason = f"its exact answer cannot be computed: {one_line(str(error))}"
            lines.append(ExpressionLine(number, expression, None, one_line(reason)))
            continue
        if len(fields) == 2 and fields[1].strip():
            try:
                exact = Fraction(fields[1].strip())
            except (ValueError, ZeroDivisionError):
                reason = f"answer {quoted_expression(fields[1].strip())!r} is not a number"
                lines.append(ExpressionLine(number, expression, None, reason))
                continue
        lines.append(ExpressionLine(number, expression, exact))
    if not lines:
        raise ExpressionFileError(f"{path}: no expressions in the file")
    return lines


def load_exact_pairs(path) -> list[tuple[str, Fraction]]:
    """Read ``expression<TAB>answer`` lines as (expression, exact answer) (:func:`read_expression_lines`).

    Raises:
        FileNotFoundError: the file does not exist.
        ExpressionFileError: a line is malformed (the message names ``path:line``), or there is none.
    """
    lines = read_expression_lines(path)
    for line in lines:
        if line.refused:
            raise ExpressionFileError(f"{path}:{line.number}: {line.refused}")
    return [(line.expression, line.truth) for line in lines]


def load_expression_file(path) -> Split:
    """:func:`load_exact_pairs` as a Split (float values, for the regression metrics)."""
    pairs = load_exact_pairs(path)
    expressions = tuple(e for e, _ in pairs)
    return Split(
        name=Path(path).stem,
        expressions=expressions,
        values=np.array([float(v) for _, v in pairs], dtype=np.float64),
        terms=np.array([count_numbers(e) for e in expressions], dtype=np.int64),
    )
