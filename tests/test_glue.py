"""Every glued value a notebook's markdown names is glued by that notebook's run.

myst-nb renders ``{glue:text}`name``` from an output of ``glue("name", ...)``; a name with no such
output renders as an error in the book. The executed copies under ``reports/runs/`` are what a reader
opens, so each is checked as it stands."""

import json
import re
from pathlib import Path

import pytest

from predcalc.paths import RUNS

REFERENCE = re.compile(r"\{glue(?::[a-z]+)?\}`([^`]+)`")


def glue_gaps(notebook: dict) -> set[str]:
    """The names the markdown cells glue that no output of the notebook holds."""
    named = {
        match
        for cell in notebook["cells"]
        if cell["cell_type"] == "markdown"
        for match in REFERENCE.findall("".join(cell["source"]))
    }
    glued = {
        output.get("metadata", {}).get("scrapbook", {}).get("name")
        for cell in notebook["cells"]
        for output in cell.get("outputs", [])
    }
    return named - glued


def _cell(kind, source, outputs=()):
    cell = {"cell_type": kind, "metadata": {}, "source": [source]}
    if kind == "code":
        cell["outputs"] = list(outputs)
    return cell


def test_a_name_without_its_glue_is_found():
    output = {"output_type": "display_data", "metadata": {"scrapbook": {"name": "best"}}, "data": {}}
    notebook = {
        "cells": [_cell("code", "glue('best', 1)", [output]), _cell("markdown", "{glue:text}`best` and {glue}`worst`")]
    }
    assert glue_gaps(notebook) == {"worst"}


EXECUTED = sorted(p for p in RUNS.glob("*/*.ipynb") if not p.parent.name.startswith("."))  # not a run in progress


@pytest.mark.parametrize("path", EXECUTED, ids=[p.stem for p in EXECUTED])
def test_every_executed_copy_glues_what_its_markdown_names(path: Path):
    assert glue_gaps(json.loads(path.read_text())) == set()
