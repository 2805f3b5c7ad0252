"""The book's notebook pages: which notebooks there are, in which group and order
(``notebooks/index.json``), their titles and questions, and each executed copy as a reader sees it
(progress bars, stderr, runtime warnings, object reprs and nbval markers left out; figures scaled
to fit)."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from pathlib import Path

import nbformat

from predcalc.paths import ROOT
from predcalc.report.book_cells import WIDE_FIGURE, fit, png_size
from predcalc.training.runner import discover, notebook_groups, source_of


@dataclasses.dataclass
class Notebook:
    name: str
    path: Path
    executed: bool
    title: str
    run: dict
    group: str  # its group in notebooks/index.json: "architectures" or "studies"

    @property
    def doc(self) -> str:
        """The page's name in the book: where the notebook sits under ``reports/``."""
        return f"runs/{self.name}/{self.name}"

    @property
    def profile(self) -> str:
        """The profile it ran at (``full``), without the parameters a run overrode."""
        return str(self.run.get("profile") or "").split(" with ")[0]

    @property
    def architecture(self) -> bool:
        return self.group == "architectures"


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _title(path: Path) -> str:
    """The notebook's ``# `` heading (its first markdown cell names it)."""
    for c in _cells(path):
        if c["cell_type"] == "markdown":
            for line in "".join(c["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return path.stem


def question(path: Path) -> str:
    """The notebook's ``**Question.**`` paragraph, without the label and display formulas."""
    for c in _cells(path):
        if c["cell_type"] != "markdown":
            continue
        paragraphs = "".join(c["source"]).split("\n\n")
        start = next((i for i, p in enumerate(paragraphs) if p.startswith("**Question.**")), None)
        if start is None:
            continue
        kept = []
        for paragraph in paragraphs[start : start + 4]:
            if not paragraph.lstrip().startswith("$$"):
                kept.append(" ".join(paragraph.split()))
            if paragraph.rstrip().endswith("?"):
                break
        return " ".join(kept).removeprefix("**Question.**").strip()
    return ""


def notebooks(root: Path = ROOT) -> list[Notebook]:
    """Every notebook in ``notebooks/``, paired with its executed copy when there is one, in the
    groups and order of ``notebooks/index.json``."""

    listed = {p.stem: p for p in discover(directory=root / "notebooks")}
    found = []
    for group, names in notebook_groups(root / "notebooks").items():
        for name in names:  # an alias runs its template under its own name
            executed = root / "reports" / "runs" / name / f"{name}.ipynb"
            path = executed if executed.exists() else source_of(listed[name])[0]
            run_json = executed.parent / "run.json"
            run = json.loads(run_json.read_text()) if run_json.exists() else {}
            found.append(Notebook(name, path, executed.exists(), _title(path), run, group))
    return found


def short_title(notebook: Notebook) -> str:
    """``03 · LSTM: ...`` -> ``LSTM: ...`` (the number is in the contents already)."""
    head, dot, rest = notebook.title.partition("·")
    return rest.strip() if dot and head.strip().isdigit() else notebook.title


# Lines a reader should not see in a stream output: TensorFlow's and absl's log lines (retracing
# warnings, "Assets written", the CUDA stub), written into the cell by the runtimes, not by the notebook.
NOISE = re.compile(
    r"^(WARNING|INFO|ERROR):(tensorflow|absl)|^WARNING: All log messages before absl|^[IWE]\d{4} [\d:.]+ +\d+ "
    r"|Could not find cuda drivers|triggered tf\.function retracing"
)
NBVAL_MARKER = re.compile(r"^\s*# NBVAL_\w+\s*$")  # nbval's cell markers: for the test, not the reader
PATH_REPR = re.compile(r"^(Posix|Windows)?Path\(.*\)$")  # the return value of a cell that wrote a file


def _shown(output: dict) -> dict | None:
    """An output as the book shows it, or None to leave it out."""
    data = output.get("data", {})
    if "application/vnd.jupyter.widget-view+json" in data:
        return None  # progress bars: their state is not saved, a browser shows nothing
    if output.get("output_type") == "stream":
        if output.get("name") == "stderr":
            return None
        text = output.get("text", "")
        kept = [
            line
            for line in (text if isinstance(text, str) else "".join(text)).splitlines(True)
            if not NOISE.search(line)
        ]
        if not "".join(kept).strip():
            return None
        output["text"] = "".join(kept)
        return output
    if output.get("output_type") == "execute_result" and set(data) == {"text/plain"}:
        if PATH_REPR.match("".join(data["text/plain"]).strip()):
            return None
    if "image/png" in data:
        png = fit(base64.b64decode("".join(data["image/png"])))
        data["image/png"] = base64.b64encode(png).decode()
        output.get("metadata", {}).pop("image/png", None)  # a stored size no longer fits
    return output


def reader_copy(path: Path) -> nbformat.NotebookNode:
    """The executed notebook as a reader sees it in the book: no progress bars, stderr, runtime log
    lines, path reprs or nbval markers; figures at most :data:`MAX_SIDE` pixels on their longer side;
    setup cells folded (*Show code*) and cells with a wide figure over the margin."""
    notebook = nbformat.read(path, as_version=4)
    notebook.metadata.pop("widgets", None)
    for c in notebook.cells:
        if c.cell_type != "code":
            continue
        c.source = "\n".join(line for line in c.source.splitlines() if not NBVAL_MARKER.match(line))
        c.outputs = [o for o in (_shown(o) for o in c.get("outputs", [])) if o is not None]
        tags = set(c.metadata.get("tags", []))
        source = c.source.strip()
        if (
            tags & {"parameters", "injected-parameters"}
            or source.startswith(("import ", "from "))
            or source.count("\n") >= 15
        ):
            tags.add("hide-input")  # setup: *Show code* opens it
        if any(png_size(base64.b64decode(o.get("data", {}).get("image/png", "")))[0] > WIDE_FIGURE for o in c.outputs):
            tags.add("full-width")  # over the margin: a wide figure keeps its labels readable
        c.metadata["tags"] = sorted(tags)
    return notebook
