"""The calculator study's sentences and tables as Jinja2 templates (rendered by :func:`render`)."""

from __future__ import annotations

from pathlib import Path

import jinja2

FOLDER = Path(__file__).parent


def _percent(share: float, digits: int = 1) -> str:
    """A share as a percent; a share short of 100 % is never written 100 % (nor above 0 as 0)."""
    text = f"{100 * share:.{digits}f}"
    if share < 1 and float(text) >= 100:
        text = f"{100 - 10**-digits:.{digits}f}"
    if share > 0 and float(text) <= 0:
        text = f"{10**-digits:.{digits}f}"
    return f"{text} %"


def render(name: str, **values) -> str:
    """``name`` rendered with ``values`` (StrictUndefined: a missing value is an error, not a blank)."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(FOLDER),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["percent"] = _percent
    environment.filters["cell"] = lambda v: str(v).replace("|", "\\|").replace("\n", " ")
    return environment.get_template(name).render(**values)
