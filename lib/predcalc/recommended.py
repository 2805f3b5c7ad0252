"""The models the findings recommend, read from ``reports/recommended.json``: the one list in the code.

The report, the deploy check (``make jetson-check``) and the edge study all read it; nothing else
keeps its own copy. Standard library only, so a Jetson's runtime install can read it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from predcalc.paths import RECOMMENDED_FILE

# How ``chosen_on`` names a model the Answer's families table chooses (report/answer.py), on development
# data the table does not show; a test checks that every such entry is the table's choice.
FAMILY_RULE = "the families table's rule"


@dataclass(frozen=True)
class Recommended:
    """One recommended model: its registry ``name``, its ``kind`` (the registry's, as the findings show
    it; tests/test_recommended.py holds the two together), the ``notebook``
    that trains it, its ``export`` folder (relative to ``reports/runs/``), whether the held-out edge
    study scores it (``edges``), whether the findings lead with it (``headline``), ``why``, and
    ``chosen_on``: the data or rule that chose it (:data:`FAMILY_RULE` for a families-table choice).
    ``input``: what the model reads, ``value`` (each number as one float) or ``digits`` (a token a
    digit); a digit model's ``export`` is the folder of its seeds' folders (``NOTEBOOK_seeds/MODEL``,
    beside the run's folder, which a rerun replaces whole) and ``box`` its training
    box (``{"digits": [lo, hi], "terms": [lo, hi]}``)."""

    name: str
    kind: str
    notebook: str
    export: str
    edges: bool = False
    headline: bool = False
    why: str = ""
    chosen_on: str = ""
    input: str = "value"
    box: dict | None = None


def read(path: Path | str = RECOMMENDED_FILE) -> tuple[Recommended, ...]:
    """Every entry of the file, in its order; a bad entry raises one line naming it."""
    data = json.loads(Path(path).read_text())
    entries = []
    for number, entry in enumerate(data["models"], 1):
        try:
            model = Recommended(**entry)
        except TypeError as error:
            raise ValueError(f"{path}: entry {number} is malformed ({error})") from None
        if model.input not in ("value", "digits") or (model.input == "digits") != (model.box is not None):
            raise ValueError(f"{path}: {model.name} needs input value, or input digits with its box")
        if not model.kind:
            raise ValueError(f"{path}: {model.name} has no kind")
        entries.append(model)
    names = [model.name for model in entries]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: a model is listed twice")
    return tuple(entries)


@cache
def recommended() -> tuple[Recommended, ...]:
    """The recommended models of ``reports/recommended.json`` (read once)."""
    return read()


def headline() -> tuple[str, ...]:
    """Names of the trained models the findings lead with."""
    return tuple(model.name for model in recommended() if model.headline)


def on_edges() -> dict[str, str]:
    """``{name: notebook}`` of the models the held-out edge study scores on every seed."""
    return {model.name: model.notebook for model in recommended() if model.edges}


def exports() -> dict[str, str]:
    """``{export folder: why}`` of every recommended model that reads values (relative to
    ``reports/runs/``): the files ``predcalc predict`` and the Jetson check open."""
    return {model.export: model.why for model in recommended() if model.input == "value"}


def digit_models() -> tuple[Recommended, ...]:
    """The recommended models that read digits (their seeds' folders under ``reports/runs/``)."""
    return tuple(model for model in recommended() if model.input == "digits")


def family_choices() -> tuple[str, ...]:
    """Names of the recommended models the Answer's families table chooses (:data:`FAMILY_RULE`)."""
    return tuple(model.name for model in recommended() if model.chosen_on.startswith(FAMILY_RULE))
