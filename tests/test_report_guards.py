"""Guards that keep the report's text true to its runs.

- No notebook markdown cell holds a result number: results come from generated output cells, which
  a rerun updates; hand-written markdown is not rerun.
- No text in the repository cites a file that is not in it (the project's private notes, the prior
  report's source tree, the shared briefing files).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from predcalc.paths import ROOT
from predcalc.report.anchors import REFERENCE_LLM_ROWS, REFERENCE_ROWS
from predcalc.studies.backprop_check import ARTICLE
from predcalc.training.runner import ALIASES

# ---- (a) no result number in notebook markdown

# A result number: a decimal (0.0314), a percentage (27.04 %), a multiple (12.0x), a count of
# seeds or of a whole ("3 of 5", "all 5 seeds", "5/5"). Not one: a number in code (`k = 12`), in
# a section or equation reference ("section 1.2", "eq. (7)"), an arXiv id, a year or a plain integer
# that sizes the method (200 epochs, 15 tokens); those say how, not what came out.
RESULT = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?\s?%|\d+(?:\.\d+)?x\b|\d[\d,]*\.\d+|\d+ of \d+\b|all \d+ seeds|\d+/\d+ (?:seeds|exact))"
)
NOT_RESULTS = re.compile(
    r"`[^`]*`"  # code and parameters
    r"|\$\$.*?\$\$|\$[^$]*\$"  # equations (the article's printed values in 00 are checked below)
    r"|(?:section|sections|eq\.|document|seed) \d+(?:\.\d+)*(?:-\d+)?"  # references into documents
    r"|arXiv \d{4}\.\d{4,5}"
    r"|\b\d+/\d+/\d+\b",
    flags=re.S,
)


def _published_values() -> set[float]:
    """Numbers other people published: the prior report's rows and the worked article notebook 00 checks."""
    values = set()
    for row in [*REFERENCE_ROWS.values(), *REFERENCE_LLM_ROWS.values()]:
        numbers = [float(v) for v in row.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        values |= set(numbers) | {100 * v for v in numbers if v <= 1}  # accuracies are quoted in percent

    def walk(item):
        if isinstance(item, dict):
            for value in item.values():
                walk(value)
        elif isinstance(item, (list, tuple)):
            for value in item:
                walk(value)
        elif isinstance(item, (int, float)):
            values.add(abs(float(item)))

    walk(ARTICLE)
    return values


# Method constants and published figures that notebooks state in words, by notebook, each with why.
METHOD_NUMBERS = {
    "*": {
        "0.5": "the padding token and the rounding threshold of exact accuracy",
        "1.0": "the numeric token of +",
        "0.0": "the numeric token of -",
        "75/25": "the training / validation split of the protocol",
    },
    "00_backprop_by_hand": {"0.005": "the agreement tolerance, half the article's last decimal"},
    "06_transformer": {
        "5 %": "warm-up length",
        "10 %": "the prior report's decay floor",
        "0.85": "the prior report's AdamW beta 1",
        "1.42": "the prior report's peak rate (1.42e-3)",
    },
    "07_gemma_finetune": {"0.32": "the keras-hub version"},
    "21_parallel_scan": {
        "175x": "minGRU paper (Feng et al. 2024)",
        "235x": "minGRU paper",
        "1324x": "minGRU paper",
        "1361x": "minGRU paper",
        "88 %": "minGRU paper: extra training memory",
    },
    "22_timeseries": {"70 %": "the chronological split", "15 %": "the chronological split"},
    "41_digits": {
        "1x": "the suite's reach, in multiples of the box",
        "2x": "the suite's reach",
        "3x": "the suite's reach",
        "10x": "the suite's reach",
        "99 %": "the issue's bar",
        "6.7x": "position coupling's reach (Cho et al. 2024)",
        "6x": "Abacus ids' reach (McLeish et al. 2024)",
    },
}


def _markdown_cells(path: Path):
    for index, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] == "markdown":
            yield index, "".join(cell["source"])


def result_numbers(text: str, notebook: str, published: set[float]) -> list[str]:
    """The numbers of ``text`` that read as results (see :data:`RESULT`), after the allowed ones."""
    allowed = {**METHOD_NUMBERS["*"], **METHOD_NUMBERS.get(notebook, {})}
    found = []
    for match in RESULT.finditer(NOT_RESULTS.sub(" ", text)):
        token = match.group(1)
        if token in allowed:
            continue
        number = re.fullmatch(r"(\d[\d,]*\.\d+)\s?%?", token)
        if number:
            value = float(number.group(1).replace(",", ""))
            decimals = len(number.group(1).split(".")[1])
            if any(round(v, decimals) == value for v in published):
                continue  # a published number, quoted as such
        found.append(token)
    return found


def _notebooks() -> list[Path]:
    executed = (p for p in (ROOT / "reports" / "runs").glob("*/*.ipynb") if not p.parent.name.startswith("."))
    return sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted(executed)  # not a run in progress


def test_the_detector_finds_a_result_number_and_passes_method_text():
    published = _published_values()
    assert result_numbers("the exact first entry is 0.1793, and", "00_backprop_by_hand", published) == ["0.1793"]
    assert result_numbers("2 of 3 networks beat every baseline", "22_timeseries", published) == ["2 of 3"]
    assert result_numbers("min_lstm reaches 27.04 % out of range", "08_min_rnn", published) == ["27.04 %"]
    assert result_numbers("published MAE 0.0269 and 2.18", "01_fnn", published) == []
    assert result_numbers("`k = 12`, section 1.2, $0.1793$, 75/25", "01_fnn", published) == []


@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_notebook_markdown_cell_holds_a_result_number(path):
    published = _published_values()
    notebook = path.stem
    bad = {
        index: numbers
        for index, text in _markdown_cells(path)
        if (numbers := result_numbers(text, notebook, published))
    }
    assert not bad, f"{path.relative_to(ROOT)}: markdown cells hold result numbers (move them to output cells): {bad}"


# ---- (b) no text cites a file that is not in the repository


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if (ROOT / line).is_file()]


# Files of other repositories that the text names as such: the prior report's published code and
# weights (in its public repository, cited by name), never as paths of this one.
PRIOR_REPORT_FILES = {
    "GetXY.py",
    "FNN1_1.py",
    "FNN_FNN2.py",
    "get_p-value.py",
    "transformer_transformer4.py",
    "transformer_transformer5.py",
    "FNN2_weights.weights.h5",
}
OUTSIDE = re.compile(
    r"(?<![\w.-])("
    r"(?:\.\./)*shared/[\w./-]*"  # the project's shared notes
    r"|matura/[\w./-]*"  # the prior report's source tree, cited as a path
    r"|seeds/\d{3}[\w./-]*"  # its documents, by file
    r"|[A-Z][A-Z_]+\.md"  # a briefing file by name (ANCHORS.md, FACTS.md, ...)
    r")"
)
TOP = ("lib/", "notebooks/", "reports/", "sweeps/", "tuning/", "book/", "docs/")
REPO_PATH = re.compile(r"(?<![\w./~-])((?:lib|notebooks|reports|sweeps|tuning|book|docs)/[\w./-]+\.[a-z0-9]+)\b")
PLACEHOLDER = re.compile(r"[*{}<>]|\bNN_|_N\b|/N\b|NAME|/x/|\.partial")
GENERATED = re.compile(r"^reports/runs/[^/]+/export/|^reports/runs/[^/]+/outputs?/")


TEXT_SUFFIXES = (".md", ".py", ".j2", ".yaml", ".yml", ".toml", ".cfg")


def _texts():
    """(path, text) of every tracked text a reader or a developer reads: markdown, notebook cells,
    Python (docstrings, strings, comments), templates, configuration."""
    for path in _tracked():
        if path.endswith(".ipynb"):
            cells = json.loads((ROOT / path).read_text())["cells"]
            yield path, "\n".join("".join(cell["source"]) for cell in cells)
        elif path.endswith(TEXT_SUFFIXES) or path in ("Makefile", "requirements.txt"):
            if path.startswith("tests/"):
                continue  # tests build paths of their own in temporary folders
            yield path, (ROOT / path).read_text()


def missing_citations(text: str, tracked: set[str], names: set[str]) -> set[str]:
    """The file paths ``text`` cites that are not in the repository."""
    bad = {m.group(1) for m in OUTSIDE.finditer(text) if m.group(1) not in names}
    for match in REPO_PATH.finditer(text):
        path = match.group(1).rstrip(".")
        if PLACEHOLDER.search(path) or GENERATED.search(path) or path in tracked:
            continue
        bad.add(path)
    return bad


def test_the_citation_detector_catches_outside_paths():
    tracked, names = {"README.md", "lib/predcalc/cli.py"}, {"README.md", "cli.py"}
    text = "see ANCHORS.md, shared/seeds/004_x.txt, matura/FNN.py, ../shared/FACTS.md and lib/predcalc/gone.py"
    assert missing_citations(text, tracked, names) == {
        "ANCHORS.md",
        "shared/seeds/004_x.txt",
        "matura/FNN.py",
        "../shared/FACTS.md",
        "lib/predcalc/gone.py",
    }
    assert (
        missing_citations("README.md, lib/predcalc/cli.py, `GetXY.py`, reports/runs/NN_name", tracked, names) == set()
    )


def test_no_text_cites_a_file_that_is_not_in_the_repository():
    # a notebook alias runs a template under its own name (training.runner.ALIASES): a name, not a file
    tracked = set(_tracked()) | {f"notebooks/{alias}.ipynb" for alias in ALIASES}
    names = {Path(p).name for p in tracked} | PRIOR_REPORT_FILES
    bad = {path: sorted(found) for path, text in _texts() if (found := missing_citations(text, tracked, names))}
    assert not bad, f"texts cite files that are not in the repository: {bad}"
