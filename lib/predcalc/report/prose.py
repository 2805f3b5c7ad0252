"""Sentences that report results, rendered from Jinja2 templates beside the code that computes
their numbers (``report/templates/*.md.j2``).

A template writes paragraphs separated by blank lines, or bullets starting ``- ``; :func:`say`
returns the paragraphs and :func:`bullets` the bullets, each joined onto one line. The filters
format numbers one way everywhere: :func:`share` (a share short of 100 % is never written
``100.0 %``), :func:`count` (a number with its noun, plural when it needs one) and
:func:`spread` (a mean with its per-seed minimum and maximum).

Example:
    >>> share(0.2704)
    '27.04 %'
    >>> share(0.99999)
    '99.999 %'
    >>> count(1, "seed"), count(5, "seed")
    ('1 seed', '5 seeds')
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import jinja2

from predcalc.readable import percent

TEMPLATES = Path(__file__).with_name("templates")


def share(fraction: float, decimals: int = 2, unit: str = " %") -> str:
    """A share as a percentage to ``decimals`` places, by :func:`predcalc.readable.percent` (a share
    short of 1, or above 0, gets the places that keep it from reading ``100.00 %``, or ``0.00 %``);
    ``unit`` is a plain space and ``%`` in the markdown, ``""`` for a bare number."""
    return percent(fraction, decimals, unit)


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` with its noun: ``1 seed``, ``5 seeds``, ``2,048 expressions``."""
    word = noun if n == 1 else (plural or f"{noun}s")
    return f"{n:,} {word}"


def spread(values: Iterable[float], decimals: int = 1) -> str:
    """Per-seed minimum and maximum of shares, in percent: ``6.0-98.7`` (one value: itself); a share
    short of 100 % is never written 100.0, nor one above 0 as 0.0 (:func:`predcalc.readable.percent`)."""
    values = [float(v) for v in values]
    low, high = percent(min(values), decimals, ""), percent(max(values), decimals, "")
    return low if len(values) == 1 else f"{low}-{high}"


def seeds_list(seeds: Iterable[int]) -> str:
    """Seeds as a range where they are consecutive: ``0-4``, else ``0, 2, 5``."""
    seeds = sorted(int(s) for s in seeds)
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)


def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters.update(share=share, count=count, spread=spread, seeds=seeds_list)
    environment.filters["num"] = lambda n: f"{n:,}"
    return environment


ENVIRONMENT = _environment()


def render(template: str, **values) -> str:
    """The template's text (``template``: a file name under ``report/templates/``)."""
    return ENVIRONMENT.get_template(template).render(**values)


def _join(lines: list[str]) -> str:
    return re.sub(r"\s+", " ", " ".join(line.strip() for line in lines)).strip()


def say(template: str, **values) -> list[str]:
    """The template's paragraphs (blank-line separated), each on one line; empty ones dropped."""
    paragraphs, current = [], []
    for line in render(template, **values).splitlines():
        if line.strip():
            current.append(line)
        elif current:
            paragraphs.append(_join(current))
            current = []
    if current:
        paragraphs.append(_join(current))
    return paragraphs


def bullets(template: str, **values) -> list[str]:
    """The template's bullets (lines starting ``- ``, continued by indented or plain lines)."""
    items: list[list[str]] = []
    for line in render(template, **values).splitlines():
        if line.lstrip().startswith("- "):
            items.append([line.lstrip()[2:]])
        elif line.strip() and items:
            items[-1].append(line)
    return [_join(item) for item in items if _join(item)]
