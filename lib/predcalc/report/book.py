"""The report as a browsable book (``make book``, ``python -m predcalc.report.book``).

Builds a static site with Sphinx, MyST-NB and the Sphinx Book Theme from the findings as data
(:func:`predcalc.report.paper.build_document`) and the executed notebooks in
``reports/runs/NAME/NAME.ipynb``. No rendered page is read back: every page takes its sections
from the :class:`~predcalc.report.document.Document` by key (see :data:`PAGES`), so a renamed
heading changes a title, never a page's content. Nothing is executed. The pages are written into
``build/book_src/`` (with ``book/conf.py`` and ``book/_static/``), the site into ``build/book/``
(``index.html`` at its root).

Pages: the question and the answer (``index``), the method, the results, what we learned and
its limits, the appendix, deployment, one page per notebook (a notebook without an executed copy
falls back to its source in ``notebooks/``, with a note saying so), and how to reproduce. The
book's source mirrors ``reports/`` (notebook pages at ``runs/NAME/NAME.ipynb``), so the
Document's links, written relative to ``reports/``, work unchanged. Numbers are formatted for
people: percentages with one decimal (never rounded up to 100.0 % or down to 0.0 %), errors in
plain notation (or ``4.2 × 10⁻⁷``), scores past a million marked unbounded. Every figure is
shown at most :data:`MAX_SIDE` pixels on its longer side.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import importlib.util
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jinja2
import nbformat
import pandas as pd
from PIL import Image

from predcalc.paths import ROOT
from predcalc.report.document import Bullets, Document, Figure, Section, Table, Text
from predcalc.report.render import TEMPLATES, tidy
from predcalc.report.tables import markdown_table, metric_cell, plain_cell
from predcalc.training.runner import discover, source_of

CONFIG = ROOT / "book"
SOURCE = ROOT / "build" / "book_src"
OUT = ROOT / "build" / "book"

WIDE_FIGURE = 900  # pixels: a figure wider than the text column spans the margin too
MAX_SIDE = 2400  # pixels: a larger figure is shown scaled down to this on its longer side
UNBOUNDED = 1e6  # a benchmark score past this divides by an error at float32 precision

# Notebooks 01-19 and 30 train architectures on the seed's protocol; the rest are studies.
ARCHITECTURE_PREFIXES = tuple(f"{i:02d}_" for i in range(1, 20)) + ("30_",)


# --------------------------------------------------------------------------- numbers


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def scientific(value: float, digits: int = 2) -> str:
    """``4.2 × 10⁻⁷``: scientific notation as a person writes it."""
    exponent = math.floor(math.log10(abs(value)))
    mantissa = value / 10**exponent
    if round(mantissa, digits - 1) >= 10:
        mantissa, exponent = mantissa / 10, exponent + 1
    return f"{mantissa:.{digits - 1}f}\u00a0×\u00a010{str(exponent).translate(_SUPERSCRIPT)}"


def number(value: float, digits: int = 3) -> str:
    """An error or a ratio in plain notation with ``digits`` significant digits.

    ``0.0651``, ``2.47``, ``410``, ``3,447,000``; below 0.0001 ``4.2 × 10⁻⁷``."""
    value = float(value)
    if not math.isfinite(value):
        return "∞" if value > 0 else ("−∞" if value < 0 else "n/a")
    if value == 0:
        return "0"
    if abs(value) < 1e-4:
        return scientific(value)
    if abs(value) >= 10**digits:
        return f"{round(value, digits - 1 - math.floor(math.log10(abs(value)))):,.0f}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def percent(fraction: float, decimals: int = 1) -> str:
    """A share as a percentage: ``0.9951`` -> ``99.5 %``. A share short of 1 is never written
    ``100.0 %`` and one above 0 never ``0.0 %``: it gets the decimals that tell them apart."""
    value = 100 * float(fraction)
    text = f"{value:.{decimals}f}"
    while decimals < 4 and 0 < value < 100 and float(text) in (0.0, 100.0):
        decimals += 1
        text = f"{value:.{decimals}f}"
    return f"{text}\u00a0%"


def points(change: float) -> str:
    """A change of a share in percentage points: ``-0.0012`` -> ``-0.1 pt``; ``0.0 pt`` when it
    rounds to nothing."""
    text = f"{100 * float(change):+.1f}"
    return f"{'0.0' if float(text) == 0 else text}\u00a0pt"


def score(value: float) -> str:
    """The prior report's benchmark score: plain up to a million, past it ``unbounded``."""
    return "unbounded" if float(value) >= UNBOUNDED else number(value)


def p_value(value: float) -> str:
    return "< 0.001" if float(value) < 0.001 else number(value, 2)


def cell(value, column: str) -> str:
    """One table cell for a reader, by what its column holds: shares in %, counts with separators,
    errors in plain notation. Text stays as it is."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "yes" if value else "no"
    name = column.strip().lower()
    if name.startswith("acc change"):
        return points(value)
    if name.startswith("acc"):
        return percent(value)
    if name == "score":
        return score(value)
    if name == "p":
        return p_value(value)
    if isinstance(value, int) or type(value).__name__.startswith("int") or name in ("params", "trainable params"):
        return f"{int(value):,}"
    return number(value)


def table_markdown(table: Table) -> str:
    """A Document table in the book: the book's :func:`cell` where the table uses the default
    metric format, the table's own ``cell`` where its author chose another."""
    return markdown_table(table.frame, cell if table.cell is metric_cell else table.cell)


# --------------------------------------------------------------------------- figures


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) of a PNG, from its header; (0, 0) for anything else."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return 0, 0
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def fit(data: bytes, side: int = MAX_SIDE) -> bytes:
    """The PNG as it is when its longer side is at most ``side`` pixels, else scaled down to it."""
    width, height = png_size(data)
    if max(width, height) <= side:
        return data

    image = Image.open(io.BytesIO(data))
    scale = side / max(width, height)
    image = image.resize((max(1, round(width * scale)), max(1, round(height * scale))), Image.LANCZOS)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


# --------------------------------------------------------------------------- notebooks


@dataclasses.dataclass
class Notebook:
    name: str
    path: Path
    executed: bool
    title: str
    run: dict

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
        return self.name.startswith(ARCHITECTURE_PREFIXES)


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


def _question(path: Path) -> str:
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
    """Every notebook in ``notebooks/``, paired with its executed copy when there is one."""

    found = []
    for listed in discover(directory=root / "notebooks"):
        name = listed.stem  # an alias (03_lstm) runs its template (03_gated_rnn) under its own name
        executed = root / "reports" / "runs" / name / f"{name}.ipynb"
        path = executed if executed.exists() else source_of(listed)[0]
        run_json = executed.parent / "run.json"
        run = json.loads(run_json.read_text()) if run_json.exists() else {}
        found.append(Notebook(name, path, executed.exists(), _title(path), run))
    return found


def _short_title(notebook: Notebook) -> str:
    """``03 · LSTM: ...`` -> ``LSTM: ...`` (the number is in the contents already)."""
    head, dot, rest = notebook.title.partition("·")
    return rest.strip() if dot and head.strip().isdigit() else notebook.title


# --------------------------------------------------------------------------- pages


@dataclasses.dataclass(frozen=True)
class Page:
    """A page of the book: the Document sections it shows, by key, in order. With a ``title`` the
    sections sit under it at level 2; without one a single section is the page, headed by its own
    title."""

    name: str
    keys: tuple[str, ...]
    about: str  # what a reader finds there, for the index's "How to read it"
    title: str = ""


PAGES = (
    Page(
        "method",
        ("method",),
        "the protocol, the models (what each is, its size, whether it is trained, "
        "memorised or code), how the scan, the gated readout and the calculator work, and which probe "
        "chose which variant.",
    ),
    Page(
        "results",
        ("results",),
        "the summary figure, the held-out edge suite over 5 seeds, the scoreboard "
        "against the published rows, and the calculator.",
    ),
    Page(
        "learned",
        ("learned", "limitations"),
        "what the runs show, and what they do not.",
        title="What we learned, and its limits",
    ),
    Page(
        "appendix",
        (
            "appendix.all_models",
            "appendix.seed_way",
            "appendix.recipe",
            "appendix.stability",
            "appendix.development_edges",
        ),
        "every model's numbers, the prior report's way of scoring, the training recipe, stability and the "
        "development edges.",
        title="Appendix: every model and protocol",
    ),
    Page("calculator", ("appendix.calculator",), "the learned calculator in detail."),
    Page("llm", ("appendix.llm",), "fine-tuned language models on the same task."),
    Page(
        "deployment",
        ("appendix.export", "appendix.bench"),
        "the exported files, their agreement with Keras, and their speed.",
        title="Deployment",
    ),
)
MAIN_PAGES = ("method", "results", "learned")  # the report's body; the rest is its appendix
STUDIES = "appendix.studies"  # its subsections open their notebooks' pages
RUNS_KEY = "appendix.runs"  # on the page that says how to reproduce every run


def _environment(base: str, figures: dict[Path, tuple[str, bool]]) -> jinja2.Environment:
    """The templates beside :mod:`predcalc.report.render` with the book's filters, for a page in
    the folder ``base`` of the book's source; ``figures`` maps a figure file to its copy there
    and whether it is wider than the text column."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=False,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    environment.filters["table"] = table_markdown
    environment.filters["figure_path"] = lambda path: Path(
        os.path.relpath(figures[Path(path)][0], base or ".")
    ).as_posix()
    environment.tests["wide"] = lambda path: figures[Path(path)][1]
    return environment


_LINK = re.compile(r"(?<=\]\()(?![a-z][a-z0-9+.-]*:|#|/)([^)\s]+)(?=\))")


def rebase(text: str, base: str) -> str:
    """Inline links written relative to ``reports/`` (as the Document writes them), made relative
    to the folder ``base`` of the book's source that a page sits in."""
    if not base:
        return text
    return _LINK.sub(lambda m: Path(os.path.relpath(m.group(1), base)).as_posix(), text)


EXPORT_COLUMNS = {"model", "format", "KB", "acc change in", "acc change out", "acc change long", "verdict"}


def export_grid(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The export table as a model x format grid, each cell the file's size and its largest loss
    of exact accuracy against Keras (worst test set), and why each unsuitable kind of file is."""
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
    notes = [f"{reason} ({len(files)} {'file' if len(files) == 1 else 'files'})" for reason, files in why.items()]
    return grid, notes


def book_view(section: Section) -> Section:
    """A section as the book shows it: the export table (one row per file) as a model x format
    grid; everything else as it is."""
    if section.key != "appendix.export":
        return section
    blocks = []
    for block in section.blocks:
        if isinstance(block, Table) and EXPORT_COLUMNS <= set(block.frame.columns) and not block.frame.empty:
            grid, notes = export_grid(block.frame)
            blocks += [
                Text(
                    "Each cell: the file's size and its largest loss of exact accuracy against Keras "
                    "(percentage points, worst of the in-range, out-of-range and long test sets). The "
                    "file-by-file table, with each file's largest difference from Keras, is in "
                    "`reports/findings.md`."
                ),
                Table(grid, cell=plain_cell),
            ]
            if notes:
                blocks += [Text("Why a file is not to be used:"), Bullets(notes)]
        else:
            blocks.append(block)
    return dataclasses.replace(section, blocks=blocks)


def rebased(section: Section, base: str) -> Section:
    """A copy of ``section`` whose text, bullets and table cells link from ``base``."""

    def block(b):
        if isinstance(b, Text):
            return Text(rebase(b.text, base))
        if isinstance(b, Bullets):
            return Bullets([rebase(item, base) for item in b.items])
        if isinstance(b, Table):
            frame = b.frame.map(lambda v: rebase(v, base) if isinstance(v, str) else v)
            return dataclasses.replace(b, frame=frame, caption=rebase(b.caption, base))
        return b

    return dataclasses.replace(
        section, blocks=[block(b) for b in section.blocks], subsections=[rebased(s, base) for s in section.subsections]
    )


class Book:
    """Writes the pages of the book from the findings Document and the notebooks."""

    def __init__(self, doc: Document, root: Path = ROOT):
        self.doc = doc
        self.root = root
        self.reports = root / "reports"
        self.notebooks = notebooks(root)
        self.by_name = {n.name: n for n in self.notebooks}
        self.figures: dict[Path, tuple[str, bool]] = {}  # figure -> its copy in the book, wide or not
        self.rows = doc.facts.get("rows_by_notebook", {})

    # ---- which section goes where

    def _sections(self, keys) -> list[Section]:
        return [s for s in (self.doc.get(k) for k in keys) if s is not None]

    def notebook_studies(self, name: str) -> list[Section]:
        """The study sections about notebook ``name`` (they open its page)."""
        studies = self.doc.get(STUDIES)
        return [s for s in (studies.subsections if studies else []) if self._study_notebook(s) == name]

    def _study_notebook(self, section: Section) -> str:
        name = section.notebooks[0] if section.notebooks else section.key.removeprefix(STUDIES + ".")
        return name if name in self.by_name else ""

    def pages(self) -> list[Page]:
        """The pages with at least one section; a top-level section no page names gets a page of
        its own (main part) or joins the appendix page, so none is left out."""
        claimed = {k for page in PAGES for k in page.keys} | {"question", "answer", STUDIES, RUNS_KEY}
        pages = [p for p in PAGES if self._sections(p.keys)]
        for section in self.doc.sections:
            if section.key in claimed:
                continue
            if section.part == "main":
                pages.insert(
                    len([p for p in pages if p.name in MAIN_PAGES]),
                    Page(section.key.replace(".", "-"), (section.key,), section.title + "."),
                )
            else:
                appendix = next((i for i, p in enumerate(pages) if p.name == "appendix"), None)
                if appendix is None:
                    pages.append(Page("appendix", (section.key,), "the rest of the evidence.", title="Appendix"))
                else:
                    page = pages[appendix]
                    pages[appendix] = dataclasses.replace(page, keys=page.keys + (section.key,))
        return pages

    # ---- figures

    def copy_figures(self, source: Path) -> None:
        """Every PNG under ``reports/`` into the book's source at the same place (so an image the
        Document's text links, relative to ``reports/``, is found), and every Figure of the
        Document that lies elsewhere into ``figures/``; each at most :data:`MAX_SIDE` pixels on its
        longer side."""

        def copy(path: Path, target: str) -> None:
            data = fit(path.read_bytes())
            (source / target).parent.mkdir(parents=True, exist_ok=True)
            (source / target).write_bytes(data)
            self.figures[path] = (target, png_size(data)[0] > WIDE_FIGURE)

        if self.reports.is_dir():
            for path in sorted(self.reports.rglob("*.png")):
                copy(path, path.relative_to(self.reports).as_posix())
        for top in self.doc.sections:
            for section in top.walk():
                for block in section.blocks:
                    if not isinstance(block, Figure) or Path(block.path) in self.figures:
                        continue
                    path = Path(block.path)
                    if not path.exists():
                        raise FileNotFoundError(f"section {section.key!r}: figure {path} does not exist")
                    taken = {target for target, _ in self.figures.values()}
                    target = next(
                        f"figures/{prefix}{path.name}"
                        for prefix in ("", *(f"{i}_" for i in range(1, 1000)))
                        if f"figures/{prefix}{path.name}" not in taken
                    )
                    copy(path, target)

    # ---- rendering

    def render(self, template: str, base: str = "", **values) -> str:
        return tidy(_environment(base, self.figures).get_template(template).render(**values))

    def page(self, page: Page) -> str:
        return self.render(
            "book_page.md.j2", title=page.title, sections=[book_view(s) for s in self._sections(page.keys)]
        )

    def index(self, pages: list[Page]) -> str:
        def entry(page):
            return {"name": page.name, "about": page.about, "title": page.title or self._sections(page.keys)[0].title}

        main = [entry(p) for p in pages if all(s.part == "main" for s in self._sections(p.keys))]
        appendix = [entry(p) for p in pages if not all(s.part == "main" for s in self._sections(p.keys))]
        architectures = [n for n in self.notebooks if n.architecture]
        return self.render(
            "book_index.md.j2",
            doc=self.doc,
            question=self.doc.get("question"),
            answer=self.doc.get("answer"),
            main=main,
            appendix=appendix,
            architectures=len(architectures),
            studies=len(self.notebooks) - len(architectures),
        )

    def notebook_list(self, architecture: bool) -> str:
        chosen = [n for n in self.notebooks if n.architecture == architecture]
        entries = [
            {
                "doc": n.doc,
                "title": _short_title(n),
                "rows": len(self.rows.get(n.name, [])),
                "question": "" if architecture else _question(n.path),
            }
            for n in chosen
        ]
        studies = self.doc.get(STUDIES)
        unplaced = [s for s in (studies.subsections if studies else []) if not self._study_notebook(s)]
        return self.render(
            "book_notebooks.md.j2",
            architecture=architecture,
            notebooks=entries,
            studies=None if architecture else studies,
            unplaced=unplaced,
        )

    def reproduce(self) -> str:
        runs = [
            {
                "doc": n.doc,
                "name": n.name,
                "executed": n.executed,
                "profile": n.profile,
                "seconds": n.run.get("seconds"),
                "finished": (n.run.get("finished") or "")[:10],
            }
            for n in self.notebooks
        ]
        return self.render("book_reproduce.md.j2", runs=runs, runs_section=self.doc.get(RUNS_KEY))

    def notebook_summary(self, nb: Notebook) -> str:
        """The markdown that opens a notebook's page: its rows of the all-models table, its study
        sections from the Document, and how it ran."""
        base = str(Path(nb.doc).parent)
        rows = self.rows.get(nb.name)
        if rows is not None and len(rows):  # the source is this notebook: its run is said below
            rows = rebased(Section("rows", "", [Table(rows.drop(columns=["source"], errors="ignore"))]), base).blocks[0]
        else:
            rows = None
        return self.render(
            "book_notebook.md.j2",
            base=base,
            nb=nb,
            rows=rows,
            studies=[rebased(s, base) for s in self.notebook_studies(nb.name)],
            has_all_models=self.doc.get("appendix.all_models") is not None,
            has_runs=self.doc.get(RUNS_KEY) is not None,
        )

    def write_notebook(self, nb: Notebook, target: Path) -> None:

        notebook = nbformat.read(nb.path, as_version=4)
        notebook.metadata.pop("widgets", None)
        for c in notebook.cells:
            if c.cell_type != "code":
                continue
            outputs = []
            for output in c.get("outputs", []):
                data = output.get("data", {})
                if "application/vnd.jupyter.widget-view+json" in data:
                    continue  # progress bars: their state is not saved, a browser shows nothing
                if output.get("output_type") == "stream" and output.get("name") == "stderr":
                    continue
                if "image/png" in data:
                    png = fit(base64.b64decode("".join(data["image/png"])))
                    data["image/png"] = base64.b64encode(png).decode()
                    output.get("metadata", {}).pop("image/png", None)  # a stored size no longer fits
                outputs.append(output)
            c.outputs = outputs
            tags = set(c.metadata.get("tags", []))
            source = c.source.strip()
            if (
                tags & {"parameters", "injected-parameters"}
                or source.startswith(("import ", "from "))
                or source.count("\n") >= 15
            ):
                tags.add("hide-input")  # setup: *Show code* opens it
            if any(
                png_size(base64.b64decode(o.get("data", {}).get("image/png", "")))[0] > WIDE_FIGURE for o in outputs
            ):
                tags.add("full-width")  # over the margin: a wide figure keeps its labels readable
            c.metadata["tags"] = sorted(tags)
        summary = nbformat.v4.new_markdown_cell(self.notebook_summary(nb))
        first = next((i for i, c in enumerate(notebook.cells) if c.cell_type == "markdown"), -1)
        notebook.cells.insert(first + 1, summary)
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, target)

    # ---- the whole source tree

    def write(self, source: Path = SOURCE, config: Path = CONFIG) -> dict[str, list[str]]:
        """The book's source in ``source``; returns each page's name -> the section keys it shows
        (a notebook page lists its study sections)."""
        if source.exists():
            shutil.rmtree(source)
        shutil.copytree(config, source)
        self.copy_figures(source)
        pages = self.pages()
        written = {"index": [k for k in ("question", "answer") if self.doc.get(k)]}
        (source / "index.md").write_text(self.index(pages))
        for page in pages:
            (source / f"{page.name}.md").write_text(self.page(page))
            written[page.name] = [s.key for s in self._sections(page.keys)]
        (source / "architectures.md").write_text(self.notebook_list(architecture=True))
        (source / "studies.md").write_text(self.notebook_list(architecture=False))
        studies = self.doc.get(STUDIES)
        written["architectures"] = []
        written["studies"] = [STUDIES] if studies else []
        if studies:
            written["studies"] += [s.key for s in studies.subsections if not self._study_notebook(s)]
        (source / "reproduce.md").write_text(self.reproduce())
        written["reproduce"] = [RUNS_KEY] if self.doc.get(RUNS_KEY) else []
        for nb in self.notebooks:
            self.write_notebook(nb, source / f"{nb.doc}.ipynb")
            written[nb.doc] = [s.key for s in self.notebook_studies(nb.name)]
        mathjax = _mathjax()
        if mathjax:  # the single-file TeX-to-SVG component and the TeX extensions it may load
            target = source / "_mathjax" / "mathjax"
            target.mkdir(parents=True)
            shutil.copy2(mathjax / "tex-svg.js", target)
            shutil.copytree(mathjax / "input" / "tex", target / "input" / "tex")
        return written


def _mathjax() -> Path | None:
    """MathJax 3 as the ``sphinx-mathjax-offline`` wheel ships it, so formulas render offline."""

    spec = importlib.util.find_spec("sphinx-mathjax-offline")  # the wheel's folder has a hyphen
    if spec is None or not spec.submodule_search_locations:
        return None
    static = Path(list(spec.submodule_search_locations)[0]) / "static" / "mathjax"
    return static if (static / "tex-svg.js").exists() else None


def build(
    out: Path = OUT, source: Path = SOURCE, root: Path = ROOT, quiet: bool = True, doc: Document | None = None
) -> tuple[Path, dict[str, list[str]]]:
    """Write the pages and run Sphinx; returns ``out/index.html`` and each page's section keys
    (:meth:`Book.write`). ``doc`` defaults to the findings built from ``root``'s runs."""
    if doc is None:
        from predcalc.report.paper import build_document

        doc = build_document(runs=root / "reports" / "runs", reports=root / "reports")
    written = Book(doc, root).write(source)
    if out.exists():
        shutil.rmtree(out)
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-n", "--keep-going", "-W", str(source), str(out)]
    if quiet:
        command.insert(3, "-q")
    subprocess.run(command, check=True)
    return out / "index.html", written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m predcalc.report.book", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="the site (default build/book)")
    parser.add_argument("--source", type=Path, default=SOURCE, help="the generated pages (default build/book_src)")
    parser.add_argument("--verbose", action="store_true", help="Sphinx's progress output")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    index, _ = build(args.out, args.source, quiet=not args.verbose)
    print(f"book: {index} ({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
