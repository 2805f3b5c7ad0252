"""Exact accuracy by difficulty on the extended suite (notebooks 31 and 32): a family is one test
split of :func:`predcalc.data.extended_suite` (``digits_3``, ``terms_6``, ...), named by its axis and level."""

from __future__ import annotations

import dataclasses

import keras
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import predcalc.models  # noqa: F401  (importing the package registers every model)
from predcalc.paths import save_figure
from predcalc.readable import percent_number, share
from predcalc.training import metrics as M


@dataclasses.dataclass(frozen=True)
class Axis:
    prefix: str
    label: str
    trained: tuple[float, float]


def family_table(results, families) -> pd.DataFrame:
    """One row per (model, family): exact accuracy (mean, worst, best seed, 95 % interval), MAE and MRE."""
    rows = []
    for name, result in results.models.items():
        rows += _family_rows(name, result.spec.shown_label, result.runs, families)
    return pd.DataFrame(rows)


def _family_rows(name: str, label: str, runs: list[dict], families) -> list[dict]:
    rows = []
    for family in families:
        values = [run["metrics"][family]["accuracy"] for run in runs]
        low, high = M.confidence_interval(values)
        rows.append(
            {
                "name": name,
                "model": label,
                "family": family,
                "accuracy": float(np.mean(values)),
                "min": float(np.min(values)),
                "max": float(np.max(values)),
                "95 % CI": "" if np.isnan(low) else f"{percent_number(max(low, 0), 1)} to {share(min(high, 1), 1)}",
                "MAE": float(np.mean([run["metrics"][family]["mae"] for run in runs])),
                "MRE": float(np.mean([run["metrics"][family]["mre"] for run in runs])),
            }
        )
    return rows


def accuracy_grid(table: pd.DataFrame, families) -> pd.DataFrame:
    grid = table.pivot(index="family", columns="model", values="accuracy").reindex(list(families))
    return grid[list(dict.fromkeys(table.model))].map(lambda v: share(v, 1))


TRAINED = "levels seen in training"  # the shading's legend entry


def legend_label(rows: pd.DataFrame) -> str:
    label = rows["model"].iloc[0]
    return f"{rows['name'].iloc[0]}: {label}" if "name" in rows else label


def plot_by_difficulty(table: pd.DataFrame, axes_spec, seeds: int, path=None, relative_error: bool = True):
    """Exact accuracy and the mean relative error against each axis's level, the training levels shaded."""
    rows = 2 if relative_error else 1
    models = list(dict.fromkeys(table.model))
    offsets = dict(zip(models, np.linspace(-0.15, 0.15, len(models)) if len(models) > 1 else [0.0]))
    size = (5.5 * len(axes_spec), 3.8 * rows + 0.25 * len(models))
    figure, axes = plt.subplots(rows, len(axes_spec), figsize=size, sharex="col", squeeze=False, layout="constrained")
    for column, axis_spec in enumerate(axes_spec):
        chosen = table[table.family.str.startswith(axis_spec.prefix)]
        levels = sorted({int(f.removeprefix(axis_spec.prefix)) for f in chosen.family})
        for index, (model_label, rows_of) in enumerate(chosen.groupby("model", sort=False)):
            x = np.array([int(f.removeprefix(axis_spec.prefix)) for f in rows_of.family]) + offsets[model_label]
            mean = 100 * rows_of.accuracy.to_numpy()
            error = [mean - 100 * rows_of["min"].to_numpy(), 100 * rows_of["max"].to_numpy() - mean]
            marker = "osD^vPX*<>"[index % 10]
            label = legend_label(rows_of)
            axes[0, column].errorbar(x, mean, yerr=error, marker=marker, markersize=5, capsize=3, label=label)
            if relative_error:
                axes[1, column].plot(x, rows_of.MRE, marker=marker, markersize=5, label=label)
        for row in range(rows):
            axes[row, column].axvspan(*axis_spec.trained, color="grey", alpha=0.15, label=TRAINED)
            axes[row, column].grid(alpha=0.3)
            axes[row, column].set_xticks(levels)
        axes[0, column].set(title=f"exact accuracy by {axis_spec.prefix.rstrip('_')}", ylim=(-3, 103))
        axes[rows - 1, column].set_xlabel(axis_spec.label + " (models offset sideways)")
        if relative_error:
            axes[1, column].set(yscale="log", title="mean relative error")
    axes[0, 0].set_ylabel(f"exact accuracy, % ({seeds} seed(s))")
    if relative_error:
        axes[1, 0].set_ylabel("MRE")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: labels[i] == TRAINED)  # the models first, the shading last
    shown = [handles[i] for i in order], [labels[i] for i in order]
    figure.legend(*shown, loc="outside lower center", ncol=2, fontsize=8, frameon=False)
    if path is not None:
        save_figure(figure, path)
    return figure


def study_record(
    results, notebook: str, parameters: dict, families, data: dict, scope: dict, keep=("in", "out", "long")
) -> dict:
    """The ``metrics.json`` of an extended-suite study: per model and seed, the families' metrics."""
    record = results.to_json(notebook, parameters)
    models = {}
    for name, entry in record["models"].items():
        runs = [
            {
                "seed": run["seed"],
                "epochs": run["epochs"],
                "train_seconds": run["train_seconds"],
                "metrics": {f: run["metrics"][f] for f in (*families, *keep) if f in run["metrics"]},
            }
            for run in entry["runs"]
        ]
        models[name] = {"label": entry["label"], "params": entry["params"], "runs": runs, "export": entry.get("export")}
    return {
        "notebook": notebook,
        "kind": "study",
        "models": {},
        "backend": keras.backend.backend(),
        "parameters": parameters,
        "data": data,
        "extended": {"families": list(families), "scope": dict(scope), "models": models},
    }


ERROR_KINDS = ("correct", "units digit wrong", "higher digits or sign wrong", "unparseable")


def error_kinds(values, predictions) -> dict[str, float]:
    """Shares of answers correct, wrong in the units digit, wrong only higher up or in the sign, or unparseable."""
    values = np.asarray(values, dtype=np.float64)
    predictions = np.asarray(predictions, dtype=np.float64)
    if values.shape != predictions.shape:
        raise ValueError(f"values and predictions differ in shape: {values.shape} vs {predictions.shape}")
    unparseable = np.isnan(predictions)
    wrong = unparseable | (predictions != values)
    units = wrong & ~unparseable & (np.mod(np.abs(np.nan_to_num(predictions)), 10) != np.mod(np.abs(values), 10))
    return {
        "correct": float(np.mean(~wrong)),
        "units digit wrong": float(np.mean(units)),
        "higher digits or sign wrong": float(np.mean(wrong & ~unparseable & ~units)),
        "unparseable": float(np.mean(unparseable)),
    }
