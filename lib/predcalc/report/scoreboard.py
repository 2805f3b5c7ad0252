"""Every published row of the seed against this project's trained models, metric by metric.

Like for like only: each side is the seed's published column computed the seed's way
(``metrics.seed_way``) on the seed protocol's fixed test sets, TF backend, means over seeds. A
"signed" MAE long (``mean(|y| - prediction)``, the seed's ``FNN_FNN2.py``) is not an error and is not
ranked; the score is not ranked either, because its baseline FNN runs differ (the seed's own
``FNN1_1.py`` runs against this project's).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from predcalc.report.anchors import SEED_ROWS
from predcalc.training import metrics as M

RANKED = (("MAE in", "mae_in"), ("MRE in", "mre_in"), ("MAE out", "mae_out"), ("MRE out", "mre_out"))


def compared_metrics(published: dict) -> list[tuple[str, str]]:
    """(seed-way column, published key) pairs that rank a published row: its absolute MAE long too."""
    long = [("MAE long", "mae_long")] if published.get("long") == "absolute" else []
    return [*RANKED, *long]


def candidates(models, base_runs: list[dict] | None) -> list[dict]:
    """The seed-way means of every model in ``models`` (``(name, model)`` pairs from the stored
    records) that was trained here (at least one epoch a seed) and stored the seed's columns;
    ``base_runs``: the baseline FNN's per-seed metrics, whose means the score is taken against."""
    base = base_runs or []
    if not base or not all(M.has_seed_way(r) for r in base):
        return []
    baseline = M.seed_baseline(base)
    out = []
    for name, model in models:
        runs = [r["metrics"] for r in model["runs"]]
        trained = all(r.get("epochs", 0) > 0 for r in model["runs"])
        if not runs or not trained or not all(M.has_seed_way(r) for r in runs):
            continue
        long = SEED_ROWS.get(model.get("seed_row") or "", {}).get("long", "signed")
        out.append({"name": name, "label": model["label"], "seed_row": model.get("seed_row"),
                    "params": model["params"], "seeds": len(runs), "seed_way": M.seed_way(runs, baseline, long),
                    "absolute_long": float(np.mean([r["long"]["mae"] for r in runs]))})
    return out


def _ranked_value(candidate: dict, column: str) -> float:
    """A candidate's value in a ranked column: the absolute MAE long, or its seed-way mean."""
    return candidate["absolute_long"] if column == "MAE long" else candidate["seed_way"][column]


def comparison(candidate: dict, published: dict) -> dict[str, bool]:
    """Per ranked metric of ``published``: does ``candidate`` have the lower mean?"""
    out = {}
    for column, key in compared_metrics(published):
        value = _ranked_value(candidate, column)
        out[column] = bool(math.isfinite(value) and value < published[key])
    return out


def _best(pool: list[dict], published: dict) -> dict | None:
    """The candidate that beats ``published`` on the most ranked metrics, ties broken by the
    geometric mean of value / published over those metrics."""
    if not pool:
        return None

    def key(candidate):
        ratios = [_ranked_value(candidate, c) / published[k] for c, k in compared_metrics(published)]
        ratios = [r if math.isfinite(r) and r > 0 else math.inf for r in ratios]
        return (-sum(comparison(candidate, published).values()), float(np.exp(np.mean(np.log(ratios)))))

    return min(pool, key=key)


def _matches(pool: list[dict]):
    """``(row, published, best of any architecture, best of the row's own or None)`` per published row."""
    for row, published in SEED_ROWS.items():
        yield row, published, _best(pool, published), _best([c for c in pool if c["seed_row"] == row], published)


def _lost(candidate: dict, published: dict) -> tuple[int, list[str]]:
    """How many ranked columns ``published`` has, and those ``candidate`` does not beat."""
    wins = comparison(candidate, published)
    return len(wins), [column for column, won in wins.items() if not won]


def _verdict(candidate: dict | None, published: dict) -> str:
    if candidate is None:
        return "none trained"
    total, lost = _lost(candidate, published)
    seeds = f"{candidate['seeds']} seed{'s' * (candidate['seeds'] > 1)}"
    head = f"{candidate['label']} ({candidate['params']:,} params, {seeds})"
    return f"{head}: " + (f"beaten on all {total}" if not lost
                          else f"beaten on {total - len(lost)} of {total}, not on {', '.join(lost)}")


def scoreboard_table(pool: list[dict]) -> pd.DataFrame:
    """One row per published seed row: its ranked metrics, the best of ``pool`` (``candidates``)
    registered against that row, and the best of any architecture, with what each beats."""
    if not pool:
        return pd.DataFrame()
    return pd.DataFrame([{"published row": row,
                          "ranked metrics": ", ".join(f"{c} {published[k]:g}" for c, k in compared_metrics(published)),
                          "same architecture here": _verdict(same, published),
                          "any trained model here": _verdict(best, published)}
                         for row, published, best, same in _matches(pool)])


def exact_signed_long(long_values) -> float:
    """The seed's signed "MAE long" of the exact answers: mean(|y| - y), what a perfect model gets."""
    values = np.asarray(long_values, dtype=np.float64)
    return float(np.mean(np.abs(values) - values))


def scoreboard_text(perfect_signed: float) -> str:
    return ("Each published row of the seed (ANCHORS.md) against the best trained model of this project, "
            "on the columns it publishes that rank a model, computed the seed's way (the table above) on the "
            "seed protocol's test sets: out of range the same 2,048 expressions; in range and long drawn the "
            "seed's way from this project's data seed, not the seed's own draw. Ranked: MAE and MRE in and out "
            "of range, and MAE long where the code behind the row computes it as an absolute error (the "
            "transformer rows). Not ranked: a *signed* MAE long "
            f"(the exact answers themselves get {perfect_signed:.3g} on this long set, so a lower value is not "
            "a better model), and the score and its p-value, whose baseline FNN runs differ (the seed's own "
            "against this project's). Models set partly by hand or in closed form, and weights not trained here, "
            "are left out. \"Same architecture\" is a model trained here against that row: its replica, or a "
            "variant with the same layers and width (another recipe, readout or token features).")


def scoreboard_summary(pool: list[dict]) -> str:
    """One sentence for the answer: which published rows are beaten on every ranked column, by
    whom, and how the same-architecture models fare."""
    if not pool:
        return ""
    winners, same = [], []
    for row, published, best, replica in _matches(pool):
        if not _lost(best, published)[1]:
            winners.append(best["label"])
        if replica is None:
            same.append(f"{row} none trained")
        else:
            total, lost = _lost(replica, published)
            same.append(f"{row} all {total}" if not lost else
                        f"{row} {total - len(lost)} of {total} (not {', '.join(lost)})")
    beaten = len(winners)
    winners = list(dict.fromkeys(winners))
    return (f"- The seed's {len(SEED_ROWS)} published regression rows, like for like (its columns computed its "
            f"way on the seed protocol's test sets): {beaten} of {len(SEED_ROWS)} are beaten on every "
            "ranked column by "
            + (", ".join(f"**{w}**" for w in winners) if winners else "no trained model")
            + "; by a model of the row's own architecture trained here: " + "; ".join(same) + ".")
