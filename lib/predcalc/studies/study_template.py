"""The studies' sentences: one Jinja2 environment over the templates beside the study modules
(``*.md.j2``), and the per-seed share formats their sections use."""

from __future__ import annotations

from pathlib import Path

import jinja2


def environment(keep_trailing_newline: bool = False, **filters) -> jinja2.Environment:
    """The templates beside the studies, strict about missing values, with ``filters`` added."""
    loaded = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).parent)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=keep_trailing_newline,
    )
    loaded.filters.update(filters)
    return loaded


def percent(value) -> str:
    """A share with one decimal, never rounded up to 100.0 % (``n/a`` for None)."""
    if value is None:
        return "n/a"
    text = f"{100 * value:.1f}"
    if value < 1.0 and text == "100.0":
        text = "99.9"
    return f"{text} %"


def spread(low, high) -> str:
    """The lowest and highest seed's share: ``99.0-100.0 %`` (both equal: ``100.0 %``)."""
    low, high = percent(low), percent(high)
    return low if low == high else f"{low[:-2]}-{high}"
