"""Markdown tables of the report and the notebooks, with one formatting rule per column."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from predcalc.readable import share


def metric_cell(value, column: str) -> str:
    """A metric by its column: counts with separators, accuracies in %, p-values in 2 digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if column in ("params", "trainable params"):
        return f"{int(value):,}"
    if column.startswith("acc"):
        return share(value, 2) if not column.startswith("acc change") else f"{100 * value:+.2f} pt"
    if column == "p":
        return f"{value:.2g}"
    if column in ("KB", "epochs"):
        return f"{value:.1f}"
    return f"{value:.4g}"


def plain_cell(value, column: str) -> str:
    return "" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def markdown_table(
    frame: pd.DataFrame,
    cell: Callable[[object, str], str] = metric_cell,
    empty: str = "_no runs yet: `predcalc run` first._",
) -> str:
    if frame.empty:
        return empty
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = [
        "| " + " | ".join(cell(value, column) for column, value in zip(frame.columns, row)) + " |"
        for row in frame.itertuples(index=False)
    ]
    return "\n".join([header, rule, *body])
