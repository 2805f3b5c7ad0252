"""What a finished search shows: the trial table, which hyperparameters mattered, repeated trials,
the best trial against a published number, and the trials figure."""

from __future__ import annotations

import json
import math
from pathlib import Path

from predcalc import paths
from predcalc.training.metrics import sign_test, spread
from predcalc.training.sweep import is_int
from predcalc.training.tune_config import OBJECTIVES, RUNNER


def finished_trials(oracle) -> list:
    return [t for t in oracle.trials.values() if t.status == "COMPLETED"]


def trial_table(oracle, config: dict):
    """Every trial as a row (pandas): its id, status, the tuner that ran it (where known),
    hyperparameters, metrics, epochs trained, seconds and parameter count."""
    import pandas as pd  # tables only when the trials are written

    rows = []
    metric_names = (*OBJECTIVES, "epochs", "seconds", "params")
    for trial_id, trial in sorted(oracle.trials.items()):
        values = trial.hyperparameters.values
        runner = Path(oracle._get_trial_dir(trial_id)) / RUNNER
        row = {
            "trial": trial_id,
            "status": trial.status,
            "tuner": json.loads(runner.read_text())["tuner"] if runner.is_file() else None,
        }
        row.update({name: values.get(name) for name in config["space"]})
        if "tuner/epochs" in values:
            row["budget_epochs"] = values["tuner/epochs"]
        for name in metric_names:
            row[name] = trial.metrics.get_last_value(name) if trial.metrics.exists(name) else None
        rows.append(row)
    return pd.DataFrame(rows)


def hyperparameter_effects(table, config: dict) -> dict:
    """Spearman's rank correlation of each hyperparameter with the objective over the finished
    trials (choices ranked in the config's order; None where a column is constant or fewer than
    4 trials finished): a first look at which ones mattered, not a test."""
    from scipy.stats import spearmanr  # statistics only when the trials are summarised

    finished = table[table["status"] == "COMPLETED"] if len(table) else table
    effects = {}
    for name, dimension in config["space"].items():
        if len(finished) < 4:
            effects[name] = None
            continue
        values = finished[name].tolist()
        ranks = (
            [[str(c) for c in dimension["choices"]].index(str(v)) for v in values] if "choices" in dimension else values
        )
        rho = spearmanr(ranks, finished[config["objective"]].astype(float)).statistic
        effects[name] = None if not math.isfinite(rho) else round(float(rho), 3)
    return effects


def final_comparison(folder, published: float) -> dict | None:
    """The final stage's in-range MAE per seed (``metrics.json``) against a published mean: the
    seeds' MAEs, (mean, min, max), the exact sign test over seeds (:func:`metrics.sign_test`: "better"
    only when every seed beats it) and the final stage's training minutes. None before it ran."""
    path = Path(folder) / "metrics.json"
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    runs = next(iter(record["models"].values()))["runs"]
    maes = [r["metrics"]["in"]["mae"] for r in runs]
    return {
        "seeds": [r["seed"] for r in runs],
        "mae": maes,
        "spread": spread(maes),
        "test": sign_test(maes, published),
        "epochs": [r["epochs"] for r in runs],
        "train_minutes": sum(r.get("train_seconds", 0.0) for r in runs) / 60,
        "published": published,
    }


def repeated_trials(folder, config: dict, tolerance: float = 0.1) -> list[tuple[list[str], list[float]]]:
    """Pairs of finished trials (``trials.csv``) that the tuner drew almost alike: every choice and
    integer the same, every continuous value within ``tolerance`` of each other (relative). Their
    objectives, side by side, show how noisy one trial's objective is. (ids, objectives) per pair."""
    import pandas as pd  # tables only when a search is summarised

    path = Path(folder) / "trials.csv"
    if not path.is_file():
        return []
    table = pd.read_csv(path, dtype={"trial": str})
    table = table[table["status"] == "COMPLETED"].reset_index(drop=True)
    space = config["space"]
    continuous = [n for n, d in space.items() if "choices" not in d and not all(map(is_int, (d["min"], d["max"])))]
    discrete = [n for n in space if n not in continuous]
    pairs = []
    for i in range(len(table)):
        for j in range(i + 1, len(table)):
            a, b = table.iloc[i], table.iloc[j]
            if all(a[n] == b[n] for n in discrete) and all(
                abs(a[n] - b[n]) <= tolerance * max(abs(a[n]), abs(b[n])) for n in continuous
            ):
                pairs.append(([a["trial"], b["trial"]], [float(a[config["objective"]]), float(b[config["objective"]])]))
    return pairs


def best_trial(oracle):
    trials = oracle.get_best_trials(1)
    return trials[0] if trials else None


def plot_trials(table, config: dict, path=None):
    """The objective of every finished trial against each hyperparameter (one panel each; log
    axes where the range is on a log scale; the best trial in red)."""
    import matplotlib.pyplot as plt  # plotting only when the figure is drawn
    import numpy as np
    from matplotlib import ticker

    finished = table[table["status"] == "COMPLETED"]
    objective = config["objective"]
    names = list(config["space"])
    columns = min(3, len(names))
    rows = math.ceil(len(names) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.2 * rows), squeeze=False)
    values = finished[objective].astype(float).to_numpy()
    best = (np.argmin(values) if OBJECTIVES[objective] == "min" else np.argmax(values)) if len(values) else None
    for index, name in enumerate(names):
        axis = axes[index // columns][index % columns]
        dimension = config["space"][name]
        column = finished[name].tolist()
        if "choices" in dimension:
            labels = [str(c) for c in dimension["choices"]]
            x = np.array([labels.index(str(v)) for v in column], dtype=float)
            rng = np.random.default_rng(0)
            x = x + rng.uniform(-0.12, 0.12, len(x))  # spread equal choices so every trial shows
            axis.set_xticks(range(len(labels)), labels)
            axis.set_xlim(-0.5, len(labels) - 0.5)  # every choice shown, tried or not
        else:
            x = np.array(column, dtype=float)
            low, high = dimension["min"], dimension["max"]
            if dimension["log"]:
                axis.set_xscale("log")
                axis.set_xlim(low / 1.5, high * 1.5)  # the whole range searched
            else:
                axis.set_xlim(low - 0.05 * (high - low), high + 0.05 * (high - low))
        axis.scatter(x, values, s=22, alpha=0.7, color="#4477aa")
        if best is not None:
            axis.scatter([x[best]], [values[best]], s=60, color="#cc3311", label="best")
        if objective != "val_accuracy" and len(values) and np.all(values > 0):
            axis.set_yscale("log")
            plain = ticker.FuncFormatter(lambda value, _: f"{value:.3g}")
            axis.yaxis.set_major_formatter(plain)
            axis.yaxis.set_minor_formatter(plain)
        axis.set_xlabel(name)
        axis.set_ylabel(objective)
    for index in range(len(names), rows * columns):
        axes[index // columns][index % columns].axis("off")
    figure.suptitle(
        f"{config['model']}: {len(finished)} trials ({config['tuner']}), {objective} against each hyperparameter",
        fontsize=10,
    )
    figure.tight_layout()
    if path is not None:
        paths.save_figure(figure, path)
    plt.close(figure)
    return figure


def short_value(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)
