"""The claims table: each headline claim of the findings as a row that names the values it rests
on and the check they must pass. ``tests/test_claims.py`` reads every row against the records, so
a claim whose evidence changes fails there instead of drifting. Standard library only.

A row of ``reports/claims.csv``: ``id``, ``claim`` (the sentence), ``record`` (a JSON file under
``reports/``), ``values`` (a path into it: keys joined by ``.``, ``*`` for every key at that level,
in the record's order), ``check`` (see :func:`check`), ``box`` (the box the claim holds in),
``kind`` (trained, partly built, memorised, code) and ``chosen_by`` (the data that chose it).

Checks: ``all >= X``, ``all <= X``, ``count >= X == N`` (exactly N values at least X),
``count >= X >= N`` (at least N values at least X), ``min == X``, ``max == X`` (exactly X),
``mean == X``, ``min ~ X``, ``max ~ X`` (the mean, least or largest value rounds to X: within half
a unit of X's last decimal, so ``mean == 0.198`` is the 19.8 % a page prints) and ``equals X`` (every value equal to X, numbers or strings; X is the rest
of the rule, spaces included).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

COLUMNS = ("id", "claim", "record", "values", "check", "box", "kind", "chosen_by")


class ClaimError(ValueError):
    """A claims row that cannot be read, or whose values fail its check."""


def resolve(record, path: str) -> list:
    """The values at ``path`` in ``record`` (``*`` matches every key or item at its level)."""
    nodes = [record]
    for key in path.split("."):
        next_nodes = []
        for node in nodes:
            if key == "*":
                next_nodes += list(node.values()) if isinstance(node, dict) else list(node)
            elif isinstance(node, dict) and key in node:
                next_nodes.append(node[key])
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                next_nodes.append(node[int(key)])
            else:
                raise ClaimError(f"no {key!r} at {path!r}")
        nodes = next_nodes
    if not nodes:
        raise ClaimError(f"{path!r} names no value")
    return nodes


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return text


def check(values: list, rule: str) -> bool:
    """Whether ``values`` pass ``rule`` (the module docstring lists the rules)."""
    words = rule.split()
    close = lambda a, b: a == b or (isinstance(a, float | int) and isinstance(b, float) and math.isclose(a, b))  # noqa: E731
    if words[:1] == ["all"] and len(words) == 3 and words[1] in (">=", "<="):
        bound = float(words[2])
        return all(v >= bound - 1e-12 if words[1] == ">=" else v <= bound + 1e-12 for v in values)
    if words[:2] == ["count", ">="] and len(words) == 5 and words[3] in ("==", ">="):
        count = sum(v >= float(words[2]) - 1e-12 for v in values)
        return count == int(words[4]) if words[3] == "==" else count >= int(words[4])
    if words[:1] in (["min"], ["max"]) and len(words) == 3 and words[1] == "==":  # exactly X
        return close(min(values) if words[0] == "min" else max(values), float(words[2]))
    if words[:1] in (["mean"], ["min"], ["max"]) and len(words) == 3 and words[1] in ("==", "~"):
        numbers = [float(v) for v in values]
        value = {"mean": sum(numbers) / len(numbers), "min": min(numbers), "max": max(numbers)}[words[0]]
        return abs(value - float(words[2])) <= 0.5 * 10 ** -len(words[2].partition(".")[2]) + 1e-12
    if words[:1] == ["equals"] and len(words) >= 2:
        expected = rule.split(None, 1)[1]
        return all(close(v, _number(expected)) for v in values)
    raise ClaimError(f"unknown check {rule!r}")


def read(path) -> list[dict]:
    """The rows of a claims table; a missing column raises one line."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    for number, row in enumerate(rows, 2):
        missing = [c for c in COLUMNS if not row.get(c)]
        if missing:
            raise ClaimError(f"{path}:{number}: empty {', '.join(missing)}")
    return rows


def failures(path, reports: Path) -> list[str]:
    """One line for every claim whose values fail its check (empty: every claim holds)."""
    out = []
    for row in read(path):
        try:
            record = json.loads((reports / row["record"]).read_text())
            values = resolve(record, row["values"])
            if not check(values, row["check"]):
                out.append(f"{row['id']}: {row['values']} = {values} fails {row['check']!r}")
        except (ClaimError, OSError, TypeError) as error:
            out.append(f"{row['id']}: {error}")
    return out
