"""The report as a browsable book (``make book``, ``python -m predcalc.report.book``).

Builds a static site with Sphinx, MyST-NB and the Sphinx Book Theme from the findings as data
(:func:`predcalc.report.paper.build_document`) and the executed notebooks in
``reports/runs/NAME/NAME.ipynb``. No rendered page is read back: every page takes its sections
from the :class:`~predcalc.report.document.Document` by key (see :data:`PAGES`), so a renamed
heading changes a title, never a page's content. Nothing is executed. The pages are written into
``build/book_src/`` (with ``book/conf.py`` and ``book/_static/``), the site into ``build/book/``
(``index.html`` at its root).

Pages: the question and the answer (``index``), the method, the results, the limitations (the
hand-written findings, :mod:`~predcalc.report.written`), the appendix, deployment, one page per notebook (a notebook without an executed copy
falls back to its source in ``notebooks/``, with a note saying so), and how to reproduce. The
book's source mirrors ``reports/`` (notebook pages at ``runs/NAME/NAME.ipynb``), so the
Document's links, written relative to ``reports/``, work unchanged. Numbers are formatted for
people: percentages with one decimal (never rounded up to 100.0 % or down to 0.0 %), errors in
plain notation (or ``4.2 × 10⁻⁷``), scores past a million marked unbounded. Every figure is
shown at most :data:`MAX_SIDE` pixels on its longer side.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jinja2
import nbformat

from predcalc import recommended
from predcalc.paths import ROOT
from predcalc.report.book_cells import (
    WIDE_FIGURE,
    book_view,
    fit,
    png_size,
    rebased,
    table_markdown,
)
from predcalc.report.book_notebooks import Notebook, notebooks, question, reader_copy, short_title
from predcalc.report.document import Document, Figure, Section, Table
from predcalc.report.render import TEMPLATES, tidy

CONFIG = ROOT / "book"
SOURCE = ROOT / "build" / "book_src"
OUT = ROOT / "build" / "book"


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
        "the protocol and test sets, the development and held-out data, the models and their kinds, "
        "seeds and statistics.",
    ),
    Page(
        "results",
        ("results",),
        "the prior report's architectures, the built forms, the sign scan, the rounded transformer, the "
        "learned calculator and the like-for-like comparison with the prior report.",
    ),
    Page("limitations", ("limitations",), "what the runs do not show."),
    Page(
        "appendix",
        (
            "appendix.all_models",
            "appendix.reference_way",
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
MAIN_PAGES = ("method", "results", "limitations")  # the report's body; the rest is its appendix
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
                "title": short_title(n),
                "rows": len(self.rows.get(n.name, [])),
                "question": "" if architecture else question(n.path),
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
        example = next(m.notebook for m in recommended.recommended() if m.headline)  # reports/recommended.json
        return self.render("book_reproduce.md.j2", runs=runs, runs_section=self.doc.get(RUNS_KEY), example=example)

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
        notebook = reader_copy(nb.path)
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
        guides = write_docs(self.root / "docs", source / "docs")
        written.update({f"docs/{name}": [] for name in guides})
        if guides:
            with (source / "index.md").open("a") as index:
                index.write(DOCS_TOCTREE.format("\n".join(f"docs/{name}" for name in guides)))
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


DOCS_TOCTREE = """
```{{toctree}}
:hidden:
:caption: Using the code

{}
```
"""
_OUTSIDE_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\((\.\./[^)\s]+)\)")


def write_docs(docs: Path, target: Path) -> list[str]:
    """The repository's ``docs/*.md`` pages into the book's source (``target``), in name order;
    returns their names. A link out of ``docs/`` (to ``../reports/...``) becomes the path as code:
    the book holds the docs and the reports, not the repository."""
    pages = sorted(docs.glob("*.md")) if docs.is_dir() else []
    target.mkdir(parents=True, exist_ok=True)

    def plain(match: re.Match) -> str:
        text, path = match.group(1), match.group(2).removeprefix("../")
        return f"`{path}`" if text.strip("`") == path else f"{text} (`{path}`)"

    for page in pages:
        (target / page.name).write_text(_OUTSIDE_LINK.sub(plain, page.read_text()))
    return [page.stem for page in pages]


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
