"""The report as a browsable book (``make book``, ``python -m predcalc.report.book``): Sphinx pages from
the findings, the Appendix, every notebook and ``docs/``, nothing executed, its source mirroring ``reports/``."""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from predcalc.paths import ROOT
from predcalc.report import appendix, findings, written
from predcalc.report.book_notebooks import Notebook, fit, notebooks, reader_copy, short_title

CONFIG = ROOT / "book"
SOURCE = ROOT / "build" / "book_src"
OUT = ROOT / "build" / "book"
GROUPS = {"architectures": "Architectures", "studies": "Studies"}  # notebooks/index.json's groups
NOT_RUN = "_No executed copy in `reports/runs/`: this page is the notebook's source, not run._"
COPIED = ("claims.csv", "recommended.json")  # files of reports/ the findings link to
TOCTREE = "\n```{{toctree}}\n:hidden:\n:caption: {}\n\n{}\n```\n"


def toctree(caption: str, pages) -> str:
    return TOCTREE.format(caption, "\n".join(pages))


def group_page(title: str, pages: list[Notebook]) -> str:
    items = "\n".join(f"- [{short_title(nb)}]({nb.doc}.ipynb)" for nb in pages)
    return f"# {title}\n\n{items}\n" + toctree(title, [nb.doc for nb in pages])


def write_notebook(nb: Notebook, target: Path) -> None:
    notebook = reader_copy(nb.path)
    if not nb.executed:
        first = next((i for i, c in enumerate(notebook.cells) if c.cell_type == "markdown"), -1)
        notebook.cells.insert(first + 1, nbformat.v4.new_markdown_cell(NOT_RUN))
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)


def write(source: Path = SOURCE, root: Path = ROOT, config: Path = CONFIG) -> list[str]:
    reports = root / "reports"
    if source.exists():
        shutil.rmtree(source)
    shutil.copytree(config, source)
    for path in sorted(reports.rglob("*.png")) if reports.is_dir() else []:
        target = source / path.relative_to(reports)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(fit(path.read_bytes()))
    for name in COPIED:
        if (reports / name).is_file():
            shutil.copy2(reports / name, source / name)
    pages = notebooks(root)
    records = findings.load_runs(reports / "runs")
    (source / "appendix.md").write_text(appendix.appendix(records, reports, reports / "runs"))
    for group, title in GROUPS.items():
        (source / f"{group}.md").write_text(group_page(title, [nb for nb in pages if nb.group == group]))
    for nb in pages:
        write_notebook(nb, source / f"{nb.doc}.ipynb")
    guides = write_docs(root / "docs", source / "docs")
    index = written.read(reports / "findings.md") if (reports / "findings.md").is_file() else "# Findings\n"
    index += toctree("Findings", ["appendix"]) + toctree("Notebooks", list(GROUPS))
    index += toctree("Using the code", [f"docs/{name}" for name in guides]) if guides else ""
    (source / "index.md").write_text(index)
    mathjax = _mathjax()
    if mathjax:  # the single-file TeX-to-SVG component and the TeX extensions it may load
        target = source / "_mathjax" / "mathjax"
        target.mkdir(parents=True)
        shutil.copy2(mathjax / "tex-svg.js", target)
        shutil.copytree(mathjax / "input" / "tex", target / "input" / "tex")
    return ["index", "appendix", *GROUPS, *(nb.doc for nb in pages), *(f"docs/{name}" for name in guides)]


_OUTSIDE_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\((\.\./[^)\s]+)\)")


def write_docs(docs: Path, target: Path) -> list[str]:
    """The ``docs/*.md`` pages into ``target`` (a link out of ``docs/`` becomes the path as code): their names."""
    pages = sorted(docs.glob("*.md")) if docs.is_dir() else []
    target.mkdir(parents=True, exist_ok=True)

    def plain(match: re.Match) -> str:
        text, path = match.group(1), match.group(2).removeprefix("../")
        return f"`{path}`" if text.strip("`") == path else f"{text} (`{path}`)"

    for page in pages:
        (target / page.name).write_text(_OUTSIDE_LINK.sub(plain, page.read_text()))
    return [page.stem for page in pages]


def _mathjax() -> Path | None:
    spec = importlib.util.find_spec("sphinx-mathjax-offline")  # the wheel's folder has a hyphen
    if spec is None or not spec.submodule_search_locations:
        return None
    static = Path(list(spec.submodule_search_locations)[0]) / "static" / "mathjax"
    return static if (static / "tex-svg.js").exists() else None


def build(out: Path = OUT, source: Path = SOURCE, root: Path = ROOT, quiet: bool = True) -> tuple[Path, list[str]]:
    pages = write(source, root)
    if out.exists():
        shutil.rmtree(out)
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-n", "--keep-going", "-W", str(source), str(out)]
    if quiet:
        command.insert(3, "-q")
    subprocess.run(command, check=True)
    return out / "index.html", pages


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
