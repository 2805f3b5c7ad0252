"""A user's own test file: one ``expression<TAB>answer`` per line, the answer optional."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np

from predcalc.data.expressions import ExpressionError, count_numbers, evaluate
from predcalc.data.protocol import Split


class ExpressionFileError(ValueError):
    """A malformed line in an expression file; the message names the file and line."""


def load_exact_pairs(path) -> list[tuple[str, Fraction]]:
    """Read ``expression<TAB>answer`` lines as (expression, exact answer); a missing answer is computed.

    Blank lines and lines starting with ``#`` are skipped. An answer that disagrees with
    the exact value is kept as given (the file is the ground truth the user chose). Answers are
    integers or fractions ``p/q`` read exactly (no float).

    Raises:
        FileNotFoundError: the file does not exist.
        ExpressionFileError: a line is malformed; the message names ``path:line``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    pairs = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = raw.rstrip("\n").split("\t")
        if len(fields) > 2:
            raise ExpressionFileError(
                f"{path}:{number}: expected 'expression<TAB>answer', found {len(fields)} tab-separated fields"
            )
        expression = fields[0].strip()
        try:
            exact = evaluate(expression)
        except ExpressionError as error:
            raise ExpressionFileError(f"{path}:{number}: {error}") from None
        if len(fields) == 2 and fields[1].strip():
            try:
                exact = Fraction(fields[1].strip())
            except (ValueError, ZeroDivisionError):
                raise ExpressionFileError(f"{path}:{number}: answer {fields[1].strip()!r} is not a number") from None
        pairs.append((expression, exact))
    if not pairs:
        raise ExpressionFileError(f"{path}: no expressions in the file")
    return pairs


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
