"""Render a :class:`~predcalc.report.document.Document` through the Jinja2 templates beside this
module: ``findings.md`` (markdown) and ``findings.html``.

Example:
    >>> from predcalc.report.document import Document, Section, Text
    >>> doc = Document("Findings", [Section("runs", "Runs", [Text("Every run.")], "appendix")], "built")
    >>> print(markdown(doc, Path("reports")).splitlines()[0])
    # Appendix
"""

from __future__ import annotations

import os
from pathlib import Path

import jinja2
import markdown as markdown_lib

from predcalc.report.document import Document, Section
from predcalc.report.tables import markdown_table
from predcalc.report.written import MARKER

TEMPLATES = Path(__file__).with_name("templates")


def _environment(base: Path) -> jinja2.Environment:
    """The templates, with filters for tables and figure paths relative to ``base`` (the folder
    the rendered page lands in)."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=False,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    environment.filters["table"] = lambda block: markdown_table(block.frame, block.cell)
    environment.filters["figure_path"] = lambda path: Path(os.path.relpath(path, base)).as_posix()
    return environment


def tidy(text: str) -> str:
    """At most one blank line in a row, one newline at the end."""
    lines, blank = [], False
    for line in text.splitlines():
        if not line.strip():
            if not blank and lines:
                lines.append("")
            blank = True
            continue
        lines.append(line.rstrip())
        blank = False
    return "\n".join(lines).rstrip() + "\n"


def markdown(doc: Document, base: Path) -> str:
    """The findings page in markdown: the hand-written part (``doc.facts["prose"]``) as it is, the
    Appendix marker, then the generated Appendix; figure links relative to ``base``."""
    appendix = tidy(_environment(Path(base)).get_template("findings.md.j2").render(doc=doc))
    prose = doc.facts.get("prose", "")
    return f"{prose}\n{MARKER}\n\n{appendix}" if prose else appendix


def section_markdown(section: Section, base: Path, level: int = 1) -> str:
    """One section (and its subsections) in markdown, headed at ``level``: a book page's body."""
    template = _environment(Path(base)).from_string(
        '{% from "blocks.md.j2" import section with context %}{{ section(s, level) }}'
    )
    return tidy(template.render(s=section, level=level))


def template_text(name: str, **values) -> str:
    """A small template of ``templates/`` rendered with ``values`` (a sentence block)."""
    return tidy(_environment(Path(".")).get_template(name).render(**values))


def html(text: str) -> str:
    """A plain HTML rendering of the findings markdown (Python-Markdown, tables)."""

    body = markdown_lib.markdown(text, extensions=["tables"])
    return (
        "<!doctype html><meta charset='utf-8'><title>predcalc findings</title>"
        "<style>body{font-family:sans-serif;max-width:75em;margin:auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}img{max-width:100%}</style>\n" + body
    )
