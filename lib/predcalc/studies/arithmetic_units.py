"""The arithmetic units' notebook (11): every seed's scores, the learned weights against the grid
{-1, 0, 1}, and the counts its conclusion glues, read from the record ``Results.to_json`` writes."""

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
    values = np.asarray(values, dtype=float).reshape(-1, 1)
    return np.abs(values - GRID).min(axis=1)


def _weights(run: dict) -> np.ndarray:
    learned = run.get("learned_weights") or {}
    return np.concatenate([np.asarray(learned[k], dtype=float).reshape(-1) for k in ("nmu", "nau") if k in learned])


def term_function(learned: dict) -> dict | None:
    """A per-term model's function on one (``o``, ``x``) pair as its bilinear coefficients; None for a dense one."""
    nmu, nau = np.asarray(learned["nmu"], dtype=float), np.asarray(learned["nau"], dtype=float)[:, 0]
    if nmu.shape[0] != 2:
        return None

    def f(o, x):
        return float(np.sum(nau * (nmu[0] * o + 1 - nmu[0]) * (nmu[1] * x + 1 - nmu[1])))

    return {"o x": f(1, 1) - f(1, 0) - f(0, 1) + f(0, 0), "x": f(0, 1) - f(0, 0), "o": f(1, 0) - f(0, 0), "1": f(0, 0)}


def rule_distance(function: dict) -> float:
    return max(abs(function[k] - v) for k, v in RULE.items())


def seed_table(record: dict) -> pd.DataFrame:
    rows = [
        {"model": model["label"], "seed": run["seed"], "epochs": run["epochs"]}
        | {f"exact {label}": run["metrics"][key]["accuracy"] for key, label in SETS}
        | {f"MAE {label}": run["metrics"][key]["mae"] for key, label in SETS}
        for model in record["models"].values()
        for run in model["runs"]
    ]
    return pd.DataFrame(rows)


# the held-out suites scored beside the protocol, drawn after every choice here (``heldout_SEED/`` in metrics)
HELDOUT_PREFIXES = {"heldout_31": "the held-out edge suite", "heldout_5151": "the sign scan's held-out suite"}


def heldout_sets(length: int = 15) -> dict:
    """The held-out suites' sets that ``length`` numeric tokens hold, keyed ``heldout_SEED/SET``."""
    tokenizer = get_tokenizer("numeric", length=length)
    suites = {"heldout_31": heldout_suite(), "heldout_5151": third_heldout_suite()}
    return {
        f"{prefix}/{name}": split
        for prefix, suite in suites.items()
        for name, split in suite.items()
        if holds(tokenizer, split.expressions)
    }


def heldout_summary(model: dict) -> list[dict]:
    runs = model["runs"]
    names = [k for k in runs[0]["metrics"] if k.split("/")[0] in HELDOUT_PREFIXES] if runs else []
    return [
        {"suite": HELDOUT_PREFIXES[key.split("/")[0]], "set": key.split("/", 1)[1], **_counts(runs, key)}
        for key in names
    ]


def _counts(runs: list[dict], key: str) -> dict:
    accuracies = [run["metrics"][key]["accuracy"] for run in runs]
    return {
        "exact_seeds": sum(a == 1.0 for a in accuracies),
        "n": len(accuracies),
        "low": min(accuracies),
        "high": max(accuracies),
    }


def heldout_table(record: dict) -> pd.DataFrame:
    rows = [
        {
            "model": model["label"],
            "suite": row["suite"],
            "set": row["set"],
            "exact seeds": f"{row['exact_seeds']} of {row['n']}",
            "seeds": percent(row["low"])
            if row["low"] == row["high"]
            else f"{percent(row['low'])} to {percent(row['high'])}",
        }
        for model in record["models"].values()
        for row in heldout_summary(model)
    ]
    return pd.DataFrame(rows)


def _rounded(matrix) -> str:
    rows = np.round(np.asarray(matrix, dtype=float), 3) + 0.0
    return " / ".join(" ".join(f"{v:g}" for v in row) for row in rows)


def weight_table(record: dict, show_up_to: int = 16) -> pd.DataFrame:
    """One row per model and seed: the weights' distance from the grid, and the small kernels themselves."""
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
    runs = model["runs"]
    sets = {key: {"label": label, **_counts(runs, key)} for key, label in SETS}
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
    """``above``/``below`` when every seed of ``first`` beats/trails every seed of ``second``, else ``not resolved``."""
    if first not in record["models"] or second not in record["models"]:
        return None
    a = [run["metrics"][key]["accuracy"] for run in record["models"][first]["runs"]]
    b = [run["metrics"][key]["accuracy"] for run in record["models"][second]["runs"]]
    if min(a) > max(b):
        return "above"
    if max(a) < min(b):
        return "below"
    return "not resolved"
