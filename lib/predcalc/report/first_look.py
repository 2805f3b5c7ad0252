"""The README's sentence on how long a first look (``make report``, quick) takes, written from the
record ``make first-look`` keeps (``reports/first_look.json``), never typed."""

from __future__ import annotations

import json
from pathlib import Path

from predcalc.report import render
from predcalc.training.first_look import FIRST_LOOK_FILE

START, END = "<!-- first-look:start -->", "<!-- first-look:end -->"


def read(path: Path = FIRST_LOOK_FILE) -> dict | None:
    """The stored measurement, or None before the first one."""
    path = Path(path)
    return json.loads(path.read_text()) if path.is_file() else None


def sentence(record: dict | None) -> str:
    """The README block: how long ``make report`` took on a fresh clone, from ``record``."""
    minutes, seconds = divmod(round(record["seconds"]), 60) if record else (0, 0)
    return render.template_text("first_look.md.j2", record=record, minutes=minutes, seconds=seconds)
