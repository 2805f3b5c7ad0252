"""The arithmetic units' notebook (11): every seed's scores, the learned weights against the grid
{-1, 0, 1}, and the counts its conclusion glues (:func:`model_summary`, :func:`comparison`).

Everything here reads the record ``Results.to_json`` writes (``metrics.json``), whose runs carry
each seed's learned NMU and NAU kernels (``learned_weights``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from predcalc.data import get_tokenizer
from predcalc.readable import percent
from predcalc.studies.edges import heldout_suite, holds, third_heldout_suite

SETS = (("in", "in range"), ("out", "out of range"), ("long", "long"))
GRID = np.array([-1.0, 0.0, 1.0])  # the values the regulariser pulls every weight to (NMU: 0 and 1)
ON_GRID = 1e-3  # a weight within this of -1, 0 or 1 counts as on the grid
# A per-term model computes, on each (operator o, number x) pair, c_ox o x + c_x x + c_o o + c_1; the rule
# (2 o - 1) x, with o = 1 for +, 0 for - and 0.5 for padding, is:
RULE = {"o x": 2.0, "x": -1.0, "o": 0.0, "1": 0.0}


def grid_distance(values) -> np.ndarray:
    """Each value's distance to the nearest of -1, 0 and 1."""
    values = np.asarray(values, dtype=float).reshape(-1, 1)
    return np.abs(values - GRID).min(axis=1)


def _weights(run: dict) -> np.ndarray:
    learned = run.get("learned_weights") or {}
    return np.concatenate([np.asarray(learned[k], dtype=float).reshape(-1) for k in ("nmu", "nau") if k in learned])


def term_function(learned: dict) -> dict | None:
    """The function a per-term model's units compute on one (operator ``o``, number ``x``) pair, as its
    coefficients ``{"o x", "x", "o", "1"}`` (exact: each NMU factor is affine in ``o`` or in ``x``, so
    the NAU's sum of products is bilinear); None for a model whose NMU reads more than a pair."""
    nmu, nau = np.asarray(learned["nmu"], dtype=float), np.asarray(learned["nau"], dtype=float)[:, 0]
    if nmu.shape[0] != 2:
        return None

    def f(o, x):
        return float(np.sum(nau * (nmu[0] * o + 1 - nmu[0]) * (nmu[1] * x + 1 - nmu[1])))

    return {"o x": f(1, 1) - f(1, 0) - f(0, 1) + f(0, 0), "x": f(0, 1) - f(0, 0), "o": f(1, 0) - f(0, 0), "1": f(0, 0)}


def rule_distance(function: dict) -> float:
    """The largest difference of a term function's coefficient from the rule's (:data:`RULE`)."""
    return max(abs(function[k] - v) for k, v in RULE.items())


def seed_table(record: dict) -> pd.DataFrame:
    """One row per model and seed: epochs, exact accuracy and MAE on each of the protocol's test sets."""
    rows = []
    for model in record["models"].values():
        for run in model["runs"]:
            row = {"model": model["label"], "seed": run["seed"], "epochs": run["epochs"]}
            row |= {f"exact {label}": run["metrics"][key]["accuracy"] for key, label in SETS}
            row |= {f"MAE {label}": run["metrics"][key]["mae"] for key, label in SETS}
            rows.append(row)
    return pd.DataFrame(rows)


# The held-out suites scored beside the protocol (drawn after every choice in this notebook; prefix
# ``heldout_SEED/`` in a run's metrics): the edge suite (seed 31) and the sign scan's suite (seed 5151).
HELDOUT_PREFIXES = {"heldout_31": "the held-out edge suite", "heldout_5151": "the sign scan's held-out suite"}


def heldout_sets(length: int = 15) -> dict:
    """The sets of both held-out suites that ``length`` numeric tokens can hold (3 numbers of up to 6
    digits, carry and cancellation patterns), keyed ``heldout_SEED/SET``: extra test sets for
    :func:`predcalc.training.experiment.run_seeds`, scored on every seed in Keras."""
    tokenizer = get_tokenizer("numeric", length=length)
    suites = {"heldout_31": heldout_suite(), "heldout_5151": third_heldout_suite()}
    return {
        f"{prefix}/{name}": split
        for prefix, suite in suites.items()
        for name, split in suite.items()
        if holds(tokenizer, split.expressions)
    }


def heldout_summary(model: dict) -> list[dict]:
    """Per held-out set a model's runs were scored on: the suite, the set, the seeds exact on every
    expression, and the lowest and highest seed's exact accuracy."""
    runs = model["runs"]
    names = [k for k in runs[0]["metrics"] if k.split("/")[0] in HELDOUT_PREFIXES] if runs else []
    rows = []
    for key in names:
        accuracies = [run["metrics"][key]["accuracy"] for run in runs]
        prefix, name = key.split("/", 1)
        rows.append(
            {
                "suite": HELDOUT_PREFIXES[prefix],
                "set": name,
                "exact_seeds": sum(a == 1.0 for a in accuracies),
                "n": len(accuracies),
                "low": min(accuracies),
                "high": max(accuracies),
            }
        )
    return rows


def heldout_table(record: dict) -> pd.DataFrame:
    """One row per model and held-out set: the seeds exact on it and the lowest-highest seed."""
    rows = []
    for model in record["models"].values():
        for row in heldout_summary(model):
            spread = (
                percent(row["low"]) if row["low"] == row["high"] else f"{percent(row['low'])} to {percent(row['high'])}"
            )
            rows.append(
                {
                    "model": model["label"],
                    "suite": row["suite"],
                    "set": row["set"],
                    "exact seeds": f"{row['exact_seeds']} of {row['n']}",
                    "seeds": spread,
                }
            )
    return pd.DataFrame(rows)


def _rounded(matrix) -> str:
    """A kernel ``(inputs, units)`` as rows of numbers to 3 decimals (``-0.0`` written ``0``)."""
    rows = np.round(np.asarray(matrix, dtype=float), 3) + 0.0
    return " / ".join(" ".join(f"{v:g}" for v in row) for row in rows)


def weight_table(record: dict, show_up_to: int = 16) -> pd.DataFrame:
    """One row per model and seed: how many learned weights, the largest distance of one from the grid,
    how many lie off it (farther than :data:`ON_GRID`), and the kernels themselves where a model has at
    most ``show_up_to`` weights in a kernel (rows are inputs, separated by ``/``)."""
    rows = []
    for model in record["models"].values():
        for run in model["runs"]:
            if "learned_weights" not in run:
                continue
            distance = grid_distance(_weights(run))
            row = {
                "model": model["label"],
                "seed": run["seed"],
                "weights": distance.size,
                "largest distance from -1/0/1": float(distance.max()),
                "off the grid": int((distance > ON_GRID).sum()),
            }
            for name in ("nmu", "nau"):
                kernel = np.asarray(run["learned_weights"][name])
                row[f"{name.upper()} kernel"] = _rounded(kernel) if kernel.size <= show_up_to else f"{kernel.shape}"
            function = term_function(run["learned_weights"])
            if function is not None:
                row["term function (o x, x, o, 1)"] = ", ".join(f"{v:.4g}" for v in function.values())
                row["largest distance from the rule"] = rule_distance(function)
            rows.append(row)
    return pd.DataFrame(rows)


def model_summary(model: dict) -> dict:
    """Per test set: the seeds exact on every expression, the lowest and highest seed's accuracy; and the
    seeds whose every learned weight lies on the grid."""
    runs = model["runs"]
    sets = {}
    for key, label in SETS:
        accuracies = [run["metrics"][key]["accuracy"] for run in runs]
        sets[key] = {
            "label": label,
            "exact_seeds": sum(a == 1.0 for a in accuracies),
            "low": min(accuracies),
            "high": max(accuracies),
            "n": len(accuracies),
        }
    on_grid = [
        run["seed"] for run in runs if "learned_weights" in run and grid_distance(_weights(run)).max() <= ON_GRID
    ]
    learned = _weights(runs[0]).size if runs and "learned_weights" in runs[0] else model["params"]
    functions = [term_function(run["learned_weights"]) for run in runs if "learned_weights" in run]
    distances = [rule_distance(f) for f in functions if f is not None]
    rule = {"seeds": sum(d <= ON_GRID for d in distances), "largest": max(distances)} if distances else None
    held = heldout_summary(model)
    return {
        "label": model["label"],
        "learned": learned,
        "n": len(runs),
        "sets": sets,
        "on_grid": on_grid,
        "rule": rule,
        "held": held,
        "held_exact": [f"{r['set']}" for r in held if r["exact_seeds"] == r["n"]],
    }


def comparison(record: dict, first: str, second: str, key: str) -> str | None:
    """``"above"`` when every seed of ``first`` scores above every seed of ``second`` on test set ``key``,
    ``"below"`` when every one below, ``"not resolved"`` otherwise (None when a model is missing)."""
    if first not in record["models"] or second not in record["models"]:
        return None
    a = [run["metrics"][key]["accuracy"] for run in record["models"][first]["runs"]]
    b = [run["metrics"][key]["accuracy"] for run in record["models"][second]["runs"]]
    if min(a) > max(b):
        return "above"
    if max(a) < min(b):
        return "below"
    return "not resolved"
