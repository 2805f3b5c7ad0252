"""One model on one edge set, as the notebooks' tables show it."""

from __future__ import annotations

from predcalc.readable import share


def edge_cell(score: dict | None) -> str:
    """One model on one edge set: "exact % (MAE)", or "-" where it cannot take the set's length."""
    return "-" if score is None else f"{share(score['accuracy'], 1)} ({score['mae']:.3g})"
