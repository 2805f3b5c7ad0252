"""One cell of the report's accuracy tables: a model's exact accuracy on one set over its seeds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from predcalc.readable import percent_number
from predcalc.report import prose


@dataclass
class Cell:
    """Exact accuracy of one model on one set: per-seed values (or, where only a summary is
    stored, mean and worst seed with the count of seeds)."""

    values: list[float] | None = None
    mean: float | None = None
    worst: float | None = None
    seeds: int | None = None

    @property
    def n(self) -> int:
        return len(self.values) if self.values is not None else int(self.seeds or 0)

    @property
    def average(self) -> float:
        return float(np.mean(self.values)) if self.values is not None else float(self.mean)

    @property
    def exact(self) -> int | None:
        """Seeds exact on every expression of the set (None where it cannot be told)."""
        if self.values is not None:
            return sum(v >= 1.0 for v in self.values)
        return self.n if self.worst is not None and self.worst >= 1.0 else None

    def text(self) -> str:
        """ "mean, k/n exact, min-max" (per-seed range in %)."""
        exact = f"{self.exact}/{self.n} exact" if self.exact is not None else f"n = {self.n}"
        if self.values is not None:
            spread = prose.spread(self.values)
        else:
            spread = f"worst seed {100 * self.worst:.1f}"
        return f"{prose.share(self.average, 1)}, {exact}, {spread}"


def set_cell(mean: float, low: float, high: float, exact: int, seeds: int) -> str:
    """A held-out table's cell for one set: ``"mean [lowest-highest], k/n exact"`` (%)."""
    return (
        f"{percent_number(mean, 1)} [{percent_number(low, 1)}-{percent_number(high, 1)}], "
        f"{int(exact)}/{int(seeds)} exact"
    )
