"""The notebooks stay a narrative (issue 33): at most 130 code lines each (the non-blank lines of
their code cells), with a median of at most 75. Logic that grows past that moves into ``lib/``."""

import json
import statistics
from pathlib import Path

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
MOST_LINES = 130
MEDIAN_LINES = 75


def code_lines(notebook: Path) -> int:
    cells = json.loads(notebook.read_text())["cells"]
    return sum(
        bool(line.strip())
        for cell in cells
        if cell["cell_type"] == "code"
        for line in "".join(cell["source"]).splitlines()
    )


def test_only_the_non_blank_lines_of_code_cells_count(tmp_path):
    notebook = tmp_path / "n.ipynb"
    markdown = {"cell_type": "markdown", "source": ["# A title\n", "text"]}
    code = {"cell_type": "code", "source": ["x = 1\n", "\n", "# a comment\n", "y = 2"]}
    notebook.write_text(json.dumps({"cells": [markdown, code]}))
    assert code_lines(notebook) == 3


def test_notebooks_hold_few_code_lines():
    lines = {notebook.name: code_lines(notebook) for notebook in NOTEBOOKS}
    too_long = {name: count for name, count in lines.items() if count > MOST_LINES}
    assert not too_long, f"notebooks over {MOST_LINES} code lines (move logic into lib/): {too_long}"
    median = statistics.median(lines.values())
    assert median <= MEDIAN_LINES, f"median {median} code lines over {MEDIAN_LINES}: {lines}"
