"""What the notebooks' steps read of the studies' records: the partly built models (the scan's
closed-form finishes), a model's label as tables show it, an extended suite's best model, an edge cell."""

from __future__ import annotations

from predcalc.models.registry import display_label
from predcalc.readable import share

# The scan's closed-form finishes (models/syntax_gated_scan.py: the models whose ModelSpec has a
# ``finish``) and what each sets by hand or solves: partly built, so the answer never names them as a
# trained result (a test keeps this in step with the registry).
FINISHES = {
    "scan_typed_solved": "operators overwrite the sign state and the readout is solved by least squares",
    "scan_typed_readout_solved": "only the readout is solved, the operator gates stay as fitted",
}


def shown_label(name: str, label: str) -> str:
    """A model's label as the report shows it (a closed-form finish marked partly built)."""
    return display_label(label, partly_built=name in FINISHES)


def extended_best(entry: dict, built: bool = False) -> dict | None:
    """The trained (or, with ``built``, partly built) model of an extended-suite ``entry`` with the best mean."""
    best = None
    for name, model in entry["models"].items():
        if (name in FINISHES) != built:
            continue
        runs = model["runs"]
        by_family = {f: sum(r["metrics"][f]["accuracy"] for r in runs) / len(runs) for f in entry["families"]}
        mean = sum(by_family.values()) / len(by_family)
        if best is None or mean > best["mean"]:
            worst = min(by_family, key=by_family.get)
            best = {
                "name": name,
                "label": shown_label(name, model["label"]),
                "params": model["params"],
                "seeds": len(runs),
                "mean": mean,
                "by_family": by_family,
                "exact": [f for f, a in by_family.items() if a >= 0.99],
                "worst": (worst, by_family[worst]),
                "per_seed": [
                    sum(r["metrics"][f]["accuracy"] for f in entry["families"]) / len(by_family) for r in runs
                ],
                "worst_seeds": [r["metrics"][worst]["accuracy"] for r in runs],
            }
    return best


def edge_cell(score: dict | None) -> str:
    return "-" if score is None else f"{share(score['accuracy'], 1)} ({score['mae']:.3g})"
