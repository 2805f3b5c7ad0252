"""The book's notebook pages: which notebooks there are, in which group and order
(``notebooks/index.json``), their titles, and each executed copy as a reader sees it."""

from __future__ import annotations

import base64
import dataclasses
import functools
import io
import json
import math
import re
from pathlib import Path

import nbformat
import pandas as pd
from PIL import Image

from predcalc.models.registry import display_label
from predcalc.paths import ROOT
from predcalc.readable import number, points
from predcalc.report.tables import markdown_table, plain_cell
from predcalc.training.runner import discover, notebook_groups, source_of

WIDE_FIGURE = 900  # pixels: a figure wider than the text column spans the margin too
MAX_SIDE = 2400  # pixels: a larger figure is shown scaled down to this on its longer side


def png_size(data: bytes) -> tuple[int, int]:
    if data[:8] != b"\x89PNG\r\n\x1a\n":  # not a PNG
        return 0, 0
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def fit(data: bytes, side: int = MAX_SIDE) -> bytes:
    width, height = png_size(data)
    if max(width, height) <= side:
        return data

    image = Image.open(io.BytesIO(data))
    scale = side / max(width, height)
    image = image.resize((max(1, round(width * scale)), max(1, round(height * scale))), Image.LANCZOS)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


EXPORT_COLUMNS = {"model", "format", "KB", "acc change in", "acc change out", "acc change long", "verdict"}


def export_grid(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The export table as a model x format grid (size, worst accuracy loss), and why files are unsuitable."""
    cells, why = {}, {}
    for row in frame.to_dict("records"):
        changes = [row[f"acc change {t}"] for t in ("in", "out", "long")]
        changes = [c for c in changes if c is not None and math.isfinite(c)]
        parts = ([f"{number(row['KB'])}\u00a0KB"] if row["KB"] is not None and math.isfinite(row["KB"]) else []) + (
            [points(min(changes))] if changes else []
        )
        text = ", ".join(parts) or "no file"
        if row["verdict"] != "use":
            text += f" ({row['verdict']})"
            why.setdefault(row.get("why") or row["verdict"], []).append(f"{row['model']} {row['format']}")
        cells.setdefault(row["model"], {})[row["format"]] = text
    formats = list(dict.fromkeys(frame["format"]))
    grid = pd.DataFrame([{"model": model, **{f: by.get(f, "") for f in formats}} for model, by in cells.items()])
    notes = pd.DataFrame({"why a file is not to be used": list(why), "files": [len(f) for f in why.values()]})
    return grid, notes


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
        return f"runs/{self.name}/{self.name}"

    @property
    def profile(self) -> str:
        return str(self.run.get("profile") or "").split(" with ")[0]


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _title(path: Path) -> str:
    for c in _cells(path):
        if c["cell_type"] == "markdown":
            for line in "".join(c["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return path.stem


def notebooks(root: Path = ROOT, runs: Path | None = None) -> list[Notebook]:
    """Every notebook in ``root/notebooks/`` with its executed copy in ``runs`` where there is one, in index order."""
    runs = root / "reports" / "runs" if runs is None else Path(runs)
    listed = {p.stem: p for p in discover(directory=root / "notebooks")}
    found = []
    for group, names in notebook_groups(root / "notebooks").items():
        for name in names:  # an alias runs its template under its own name
            executed = runs / name / f"{name}.ipynb"
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


EXPORT_HEADER = "| model | format | KB |"  # the start of an export table (one row per file)


def _number(text: str) -> float | None:
    text = text.strip()
    if not text:
        return None
    if text.endswith("pt"):
        return float(text.removesuffix("pt")) / 100
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


@functools.cache
def _short_names() -> dict[str, str]:
    from predcalc.models import MODELS  # the registry's labels: Keras, only when a page has an export table

    names = {}
    for name in MODELS:
        spec = MODELS[name]
        for label in {spec.label, display_label(spec.label), getattr(spec, "shown_label", spec.label)}:
            names[str(label)] = name
    return names


def compact_export_table(markdown: str) -> str:
    """An export table as the book's model x format grid by registered name; other markdown as it is."""
    lines = markdown.strip().splitlines()
    if len(lines) < 3 or not lines[0].startswith(EXPORT_HEADER):
        return markdown
    columns = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = []
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != len(columns):
            return markdown  # not a plain pipe table: leave it as it is
        rows.append(dict(zip(columns, cells, strict=True)))
    frame = pd.DataFrame(rows)
    frame["model"] = [_short_names().get(label, label) for label in frame["model"]]
    for column in ["KB"] + [c for c in frame.columns if c.startswith("acc change")]:
        frame[column] = [_number(v) for v in frame[column]]
    if not EXPORT_COLUMNS <= set(frame.columns):
        return markdown
    grid, notes = export_grid(frame.astype(object).where(frame.notna(), None))
    return "\n\n".join(markdown_table(table, plain_cell) for table in (grid, notes) if not table.empty)


def _shown(output: dict) -> dict | None:
    data = output.get("data", {})
    if "application/vnd.jupyter.widget-view+json" in data:
        return None  # progress bars: their state is not saved, a browser shows nothing
    if output.get("output_type") == "stream":
        if output.get("name") == "stderr":
            return None
        text = "".join(output.get("text", ""))  # a string, or its lines
        kept = [line for line in text.splitlines(True) if not NOISE.search(line)]
        if not "".join(kept).strip():
            return None
        output["text"] = "".join(kept)
        return output
    if output.get("output_type") == "execute_result" and set(data) == {"text/plain"}:
        if PATH_REPR.match("".join(data["text/plain"]).strip()):
            return None
    if "text/markdown" in data:
        data["text/markdown"] = compact_export_table("".join(data["text/markdown"]))
    if "image/png" in data:
        png = fit(base64.b64decode("".join(data["image/png"])))
        data["image/png"] = base64.b64encode(png).decode()
        output.get("metadata", {}).pop("image/png", None)  # a stored size no longer fits
    return output


def reader_copy(path: Path) -> nbformat.NotebookNode:
    """The executed notebook as a reader sees it: noise left out, figures scaled, setup cells folded."""
    notebook = nbformat.read(path, as_version=4)
    notebook.metadata.pop("widgets", None)
    for c in notebook.cells:
        if c.cell_type != "code":
            continue
        c.source = "\n".join(line for line in c.source.splitlines() if not NBVAL_MARKER.match(line))
        c.outputs = [o for o in (_shown(o) for o in c.get("outputs", [])) if o is not None]
        tags = set(c.metadata.get("tags", []))
        source = c.source.strip()
        setup = source.startswith(("import ", "from ")) or source.count("\n") >= 15
        if setup or tags & {"parameters", "injected-parameters"}:
            tags.add("hide-input")  # setup: *Show code* opens it
        if any(png_size(base64.b64decode(o.get("data", {}).get("image/png", "")))[0] > WIDE_FIGURE for o in c.outputs):
            tags.add("full-width")  # over the margin: a wide figure keeps its labels readable
        c.metadata["tags"] = sorted(tags)
    return notebook
