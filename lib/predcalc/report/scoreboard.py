"""Every published row of the prior report against this project's trained models, metric by metric.

Like for like only: each side is the prior report's published column computed the prior report's way
(``metrics.reference_way``) on the protocol's fixed test sets, TF backend, means over seeds. A
"signed" MAE long (``mean(|y| - prediction)``, the prior report's ``FNN_FNN2.py``) is not an error and is not
ranked; the score is not ranked either, because its baseline FNN runs differ (the prior report's own
``FNN1_1.py`` runs against this project's).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from predcalc.report.anchors import REFERENCE_ROWS
from predcalc.training import metrics as M

RANKED = (("MAE in", "mae_in"), ("MRE in", "mre_in"), ("MAE out", "mae_out"), ("MRE out", "mre_out"))


def compared_metrics(published: dict) -> list[tuple[str, str]]:
    """(reference-way column, published key) pairs that rank a published row: its absolute MAE long too."""
    long = [("MAE long", "mae_long")] if published.get("long") == "absolute" else []
    return [*RANKED, *long]


# The faithful replica of each published row: the same layers, width, tokens and recipe as the
# prior report's code (FNN3's positional encoding was not rebuilt). Other models registered
# against a row are variants (another recipe, readout or token features) and are labelled so.
REPLICAS = {
    "FNN2 (1 x 345 PReLU)": "fnn2",
    "RNN2 (SimpleRNN + PReLU)": "rnn2",
    "BiLSTM + attention": "bilstm_attention",
    "transformer4 (encoder, regression)": "transformer4_reference",
    "transformer5": "transformer5_reference",
}


def published_row(model: str) -> tuple[str, dict] | None:
    """The published row a model replicates and its numbers (:data:`REPLICAS`), or None."""
    row = next((name for name, replica in REPLICAS.items() if replica == model), None)
    return None if row is None else (row, REFERENCE_ROWS[row])


def candidates(models, base_runs: list[dict] | None) -> list[dict]:
    """The reference-way values of every model in ``models`` (``(name, ModelRecord)`` pairs from the stored
    records) that was trained here (at least one epoch a seed) and stored the prior report's
    columns: per seed (``per_seed``, a list of dicts) and their means (``reference_way``);
    ``base_runs``: the baseline FNN's per-seed metrics, whose means the score is taken against."""
    base = base_runs or []
    if not base or not all(M.has_reference_way(r) for r in base):
        return []
    baseline = M.reference_baseline(base)
    out = []
    for name, model in models:
        runs = [r.metrics for r in model.runs]
        trained = all((r.epochs or 0) > 0 for r in model.runs)
        if not runs or not trained or not all(M.has_reference_way(r) for r in runs):
            continue
        long = REFERENCE_ROWS.get(model.reference_row or "", {}).get("long", "signed")
        per_seed = [{**M.reference_way([r], baseline, long), "MAE long (absolute)": r["long"]["mae"]} for r in runs]
        out.append(
            {
                "name": name,
                "label": model.label,
                "reference_row": model.reference_row,
                "params": model.params,
                "seeds": len(runs),
                "per_seed": per_seed,
                "reference_way": M.reference_way(runs, baseline, long),
                "absolute_long": float(np.mean([r["long"]["mae"] for r in runs])),
            }
        )
    return out


def _values(candidate: dict, column: str) -> list[float]:
    """A candidate's per-seed values in a ranked column (the absolute MAE long for "MAE long")."""
    key = "MAE long (absolute)" if column == "MAE long" else column
    return [seed[key] for seed in candidate["per_seed"]]


def comparison(candidate: dict, published: dict) -> dict[str, dict]:
    """Per ranked metric of ``published``: the sign test of the candidate's seeds against it
    (:func:`predcalc.training.metrics.sign_test`: "better", "worse" or "not resolved")."""
    return {
        column: M.sign_test(_values(candidate, column), published[key]) for column, key in compared_metrics(published)
    }


def _best_variant(pool: list[dict], published: dict) -> dict | None:
    """The candidate that is better than ``published`` on the most ranked metrics (sign test), ties
    broken by the geometric mean of its mean / published over those metrics."""
    if not pool:
        return None

    def key(candidate):
        ratios = [float(np.mean(_values(candidate, c))) / published[k] for c, k in compared_metrics(published)]
        ratios = [r if math.isfinite(r) and r > 0 else math.inf for r in ratios]
        wins = sum(test["verdict"] == "better" for test in comparison(candidate, published).values())
        return (-wins, float(np.exp(np.mean(np.log(ratios)))))

    return min(pool, key=key)


def matches(pool: list[dict]):
    """``(row, published, replica or None, best variant or None)`` per published row: the replica is
    the faithful rebuild (:data:`REPLICAS`); the variant is the best other trained model of any
    architecture."""
    for row, published in REFERENCE_ROWS.items():
        replica = next((c for c in pool if c["name"] == REPLICAS.get(row)), None)
        others = [c for c in pool if c is not replica]
        yield row, published, replica, _best_variant(others, published)


VERDICTS = ("better", "not resolved", "worse")  # the sign test's verdicts, as the table's columns count them


def tally(candidate: dict | None, published: dict) -> dict[str, int | str]:
    """How many of a published row's ranked columns the candidate is better on (every seed), not
    resolved on, and worse on (every seed); "-" for each where there is no candidate."""
    if candidate is None:
        return dict.fromkeys(VERDICTS, "-")
    verdicts = [test["verdict"] for test in comparison(candidate, published).values()]
    return {word: verdicts.count(word) for word in VERDICTS}


def summary_table(pool: list[dict]) -> pd.DataFrame:
    """One row per published row: the faithful replica and the best variant, each with its counts of
    ranked columns by verdict."""
    if not pool:
        return pd.DataFrame()
    rows = []
    for row, published, replica, variant in matches(pool):
        line = {"published row": row, "faithful replica": f"`{replica['name']}`" if replica else "none"}
        line.update({f"replica {word}": n for word, n in tally(replica, published).items()})
        line["best variant"] = f"`{variant['name']}`" if variant else "none"
        line.update({f"variant {word}": n for word, n in tally(variant, published).items()})
        rows.append(line)
    return pd.DataFrame(rows)
