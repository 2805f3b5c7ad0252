"""The findings as data: sections of text, bullet lists, tables and figures.

:mod:`predcalc.report.findings` builds one :class:`Document` from the stored runs;
:mod:`predcalc.report.render` turns it into ``findings.md`` and ``findings.html``
through Jinja2 templates, and :mod:`predcalc.report.book` writes the book's pages from the same
object. Nothing reads a rendered page back: a renamed heading changes only its ``title``, never
which blocks a page receives, because pages find sections by their ``key``.

Example:
    >>> import pandas as pd
    >>> doc = Document("Findings", [Section("question", "Question", [Text("Which model?")])])
    >>> doc.section("question").title
    'Question'
    >>> Table(pd.DataFrame({"model": ["a"], "acc in": [1.0]})).frame.shape
    (1, 2)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from predcalc.report.tables import metric_cell


@dataclass
class Text:
    """A paragraph (inline markdown: emphasis, code, links)."""

    text: str


@dataclass
class Bullets:
    """A bullet list; an item may hold inline markdown."""

    items: list[str]


@dataclass
class Table:
    """A table as data: ``cell(value, column)`` formats each cell when it is rendered."""

    frame: pd.DataFrame
    caption: str = ""
    cell: Callable[[object, str], str] = metric_cell


@dataclass
class Figure:
    """A figure file (absolute path) and the sentence that says what it shows."""

    path: Path
    caption: str


Block = Text | Bullets | Table | Figure


@dataclass
class Section:
    """A titled part of the findings. ``key`` is stable (pages and tests find sections by it);
    ``part`` is "main" or "appendix"; ``notebooks`` names the notebooks it draws on."""

    key: str
    title: str
    blocks: list[Block] = field(default_factory=list)
    part: str = "main"
    notebooks: list[str] = field(default_factory=list)
    subsections: list[Section] = field(default_factory=list)

    def __post_init__(self):
        if self.part not in ("main", "appendix"):
            raise ValueError(f"part must be 'main' or 'appendix'. Received: part={self.part!r}")

    def walk(self) -> Iterator[Section]:
        """This section, then its subsections, depth first."""
        yield self
        for sub in self.subsections:
            yield from sub.walk()

    @property
    def empty(self) -> bool:
        return not self.blocks and not self.subsections


@dataclass
class Document:
    """The whole findings: a title, a note on where it came from, and its sections in order."""

    title: str
    sections: list[Section]
    source_note: str = ""
    facts: dict = field(default_factory=dict)  # named numbers the README and the book quote

    def section(self, key: str) -> Section:
        """The section (at any depth) whose key is ``key``; KeyError if there is none."""
        for top in self.sections:
            for section in top.walk():
                if section.key == key:
                    return section
        raise KeyError(f"no section with key {key!r}; keys: {[s.key for t in self.sections for s in t.walk()]}")

    def get(self, key: str) -> Section | None:
        try:
            return self.section(key)
        except KeyError:
            return None

    def part(self, part: str) -> list[Section]:
        return [section for section in self.sections if section.part == part]
