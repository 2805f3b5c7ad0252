"""Every published row of the prior report against this project's trained models, like for like: both
sides computed its way (``metrics.reference_way``), means over seeds. Its "signed" MAE long is not an
error and is not ranked; nor is the score, whose baseline runs differ."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from predcalc.report.anchors import REFERENCE_ROWS
from predcalc.training import metrics as M

RANKED = (("MAE in", "mae_in"), ("MRE in", "mre_in"), ("MAE out", "mae_out"), ("MRE out", "mre_out"))


def compared_metrics(published: dict) -> list[tuple[str, str]]:
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
    row = next((name for name, replica in REPLICAS.items() if replica == model), None)
    return None if row is None else (row, REFERENCE_ROWS[row])


def candidates(models, base_runs: list[dict] | None) -> list[dict]:
    """The reference-way values, per seed and mean, of every model trained here that stored the prior report's columns."""
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
    key = "MAE long (absolute)" if column == "MAE long" else column
    return [seed[key] for seed in candidate["per_seed"]]


def comparison(candidate: dict, published: dict) -> dict[str, dict]:
    """Per ranked metric: the sign test of the candidate's seeds against the published value."""
    return {
        column: M.sign_test(_values(candidate, column), published[key]) for column, key in compared_metrics(published)
    }


def _best_variant(pool: list[dict], published: dict) -> dict | None:
    """The candidate better than ``published`` on the most ranked metrics, ties by the geometric mean ratio."""
    if not pool:
        return None

    def key(candidate):
        ratios = [float(np.mean(_values(candidate, c))) / published[k] for c, k in compared_metrics(published)]
        ratios = [r if math.isfinite(r) and r > 0 else math.inf for r in ratios]
        wins = sum(test["verdict"] == "better" for test in comparison(candidate, published).values())
        return (-wins, float(np.exp(np.mean(np.log(ratios)))))

    return min(pool, key=key)


def matches(pool: list[dict]):
    """``(row, published, replica or None, best variant or None)`` per published row."""
    for row, published in REFERENCE_ROWS.items():
        replica = next((c for c in pool if c["name"] == REPLICAS.get(row)), None)
        others = [c for c in pool if c is not replica]
        yield row, published, replica, _best_variant(others, published)


VERDICTS = ("better", "not resolved", "worse")  # the sign test's verdicts, as the table's columns count them


def tally(candidate: dict | None, published: dict) -> dict[str, int | str]:
    """How many ranked columns the candidate is better, not resolved and worse on ("-" without a candidate)."""
    if candidate is None:
        return dict.fromkeys(VERDICTS, "-")
    verdicts = [test["verdict"] for test in comparison(candidate, published).values()]
    return {word: verdicts.count(word) for word in VERDICTS}


def summary_table(pool: list[dict]) -> pd.DataFrame:
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
