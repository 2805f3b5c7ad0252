"""What the book shows of the Document's blocks: table cells formatted for reading
(:mod:`predcalc.readable`), figures scaled to fit, links made relative to a page, and the export
table as a model x format grid."""

from __future__ import annotations

import dataclasses
import io
import math
import os
import re
from pathlib import Path

import pandas as pd
from PIL import Image

from predcalc.readable import number, p_value, percent, points, score
from predcalc.report.document import Bullets, Section, Table, Text
from predcalc.report.tables import markdown_table, metric_cell, plain_cell

WIDE_FIGURE = 900  # pixels: a figure wider than the text column spans the margin too
MAX_SIDE = 2400  # pixels: a larger figure is shown scaled down to this on its longer side


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
