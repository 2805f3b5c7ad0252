"""Which choice of the prior report's transformer recipe matters: ``transformer4_reference`` with one choice undone
at a time (the sweep ``sweeps/transformer4_reference_ablation.yaml``, stored in ``reports/sweeps/``),
beside the stored run with every choice, the same encoder with a gated value readout
(``transformer4_gated``) and this project's own ``transformer4`` recipe; and the peak learning rate
of ``transformer5_reference``, chosen by short trials as the prior report's tuner did
(``sweeps/transformer5_reference_peak.yaml``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from predcalc.models import get_spec
from predcalc.readable import percent_number, share
from predcalc.report.anchors import REFERENCE_ROWS
from predcalc.report.tables import markdown_table
from predcalc.training.fit import REFERENCE_PEAK_LEARNING_RATE, reference_peak
from predcalc.training.sweep import collect

SWEEP = "transformer4_reference_ablation"
MODEL = "transformer4_reference"
UNDONE = {"cls": "mean pooling instead of the CLS token", "scale_embedding": "no sqrt(d_model) scale on the embedding"}


def _cell(values) -> str:
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return f"{values.mean():.4g}"
    return f"{values.mean():.4g} [{values.min():.3g}-{values.max():.3g}]"


def _exact(runs: list[dict]) -> str:
    """Mean exact accuracy in range, the seeds exact on every expression, and the per-seed range."""
    values = [r["metrics"]["in"]["accuracy"] for r in runs]
    exact = sum(v >= 1.0 for v in values)
    spread = f", {percent_number(min(values), 2)}-{percent_number(max(values), 2)}" if len(values) > 1 else ""
    return f"{share(np.mean(values), 2)} ({exact}/{len(values)} exact{spread})"


def _row(variant: str, how: str, runs: list[dict]) -> dict:
    return {
        "variant": variant,
        "trained": how,
        "seeds": len(runs),
        **{f"MAE {name}": _cell([r["metrics"][name]["mae"] for r in runs]) for name in ("in", "out", "long")},
        "exact in": _exact(runs),
    }


def how_trained(parameters: dict) -> str:
    """ "200 epochs, no early stopping" or "... early stopping (patience 20)" from a run's parameters."""
    epochs, patience = parameters.get("epochs"), parameters.get("patience")
    stop = (
        "no early stopping"
        if patience is not None and epochs is not None and patience >= epochs
        else f"early stopping (patience {patience})"
    )
    return f"{epochs} epochs, {stop}"


def trained_parameters(record: dict, model: dict) -> dict:
    """The parameters ``model`` was trained with: those of the run it was kept from, if it was
    kept from an earlier run, else its record's."""
    return model.get("kept_from", {}).get("parameters") or record.get("parameters", {})


def sweep_notebooks(runs: list[dict]) -> set[str]:
    """The notebooks a sweep's runs ran: the prefix of each run folder ``<notebook>__<hash>``."""
    return {run["run"].split("__")[0] for run in runs}


def recipe_ablation_table(records: list[dict], sweeps: Path) -> pd.DataFrame:
    """One row per variant, mean [min-max] over seeds (absolute MAE on every test set);
    empty without the sweep's finished runs."""

    variants: dict[tuple, list] = {}
    runs = collect(SWEEP, sweeps)
    for run in runs:
        kwargs = run["parameters"].get("model_kwargs", {}).get(MODEL, {})
        undone = "; ".join(UNDONE.get(k, f"{k}={v}") for k, v in sorted(kwargs.items())) or "every choice"
        variants.setdefault((undone, how_trained(run["parameters"])), []).extend(
            run["metrics"]["models"][MODEL]["runs"]
        )
    if not variants:
        return pd.DataFrame()
    rows = []
    notebooks = sweep_notebooks(runs)  # the stored runs of the notebook the sweep varies, then sweeps
    stored = [r for r in records if r.get("notebook") in notebooks]
    for name, variant in (
        (MODEL, "every choice of the prior report's recipe"),
        ("transformer4_gated", "gated value readout instead of the CLS token"),
        ("transformer4_local", "gated readout, local token features, padding masked"),
        ("transformer4_local_bounded", "as transformer4_local, the features of tanh(x_t)"),
        ("transformer4", "this project's transformer4 recipe"),
    ):
        record = next((r for r in stored if r["models"].get(name, {}).get("runs")), None)
        if record is not None:  # a model kept from an earlier run carries that run's parameters
            model = record["models"][name]
            rows.append(_row(variant, how_trained(trained_parameters(record, model)), model["runs"]))
    rows += [_row(undone, how, runs) for (undone, how), runs in sorted(variants.items())]
    return pd.DataFrame(rows)


TEXT = (
    f"`{MODEL}` (38,209 parameters, the prior report's recipe: CLS token, sqrt(d_model) embedding scale, 8 heads, "
    "AdamW with the prior report's warm-up and cosine decay) with one choice undone at a time, trained by "
    f"`predcalc sweep sweeps/{SWEEP}.yaml` into `reports/sweeps/{SWEEP}/`, beside the stored "
    "<notebook> runs. Mean [min-max] over seeds of the absolute MAE (the prior report's "
    "transformer notebooks define MAE long this way too). The gated readout (`transformer4_gated`, one "
    "parameter more) keeps the encoder and changes only the head: the answer is "
    "sum_t (w^T h_t + c) v_t + b over the raw numbers v_t, linear in them where the gates do not change "
    "with a number's size. "
    "`transformer4_local` also embeds each token from [x_t, x_{t-1}, (-1)^t] "
    "instead of adding absolute positions, and masks the padding, so a longer expression puts nothing "
    "new in front of it. `transformer4_local_bounded` builds those "
    "features from tanh(x_t), so what the gates read stays bounded however large a number is, while the "
    "sum still takes the raw x_t (both also trained seed by seed by the sweeps `transformer4_local` and "
    "`transformer4_local_squash`). This project's "
    "transformer4 differs in several choices at once (mean pooling, 4 heads, no scale, AdamW decayed "
    "to 0, early stopping)."
)


def recipe_ablation_lines(records: list[dict], sweeps: Path) -> list[str]:
    """The findings section, or nothing without the sweep."""

    table = recipe_ablation_table(records, sweeps)
    if table.empty:
        return []
    text = TEXT.replace("<notebook>", ", ".join(sorted(sweep_notebooks(collect(SWEEP, sweeps)))))
    return ["## The prior report's transformer recipe: which choice matters", "", text, "", markdown_table(table), ""]


PEAK_SWEEP = "transformer5_reference_peak"
FULL_PEAK_SWEEP = "transformer5_reference_peak_200"
PEAK_MODEL = "transformer5_reference"


def _peak_trials(sweeps: Path, records: list[dict] = ()) -> tuple[dict[tuple, list], dict[tuple, list]]:
    """``({(peak, how trained): runs}`` of the 25-epoch probe, ``{...}`` of the full-length runs``)``:
    the probe sweep's finished runs, and those of the 200-epoch sweep with the stored run of
    ``PEAK_MODEL`` at its own peak (from the notebook the sweeps ran)."""

    def add(peaks, parameters, runs):
        peak = parameters.get("model_kwargs", {}).get(PEAK_MODEL, {}).get("peak_learning_rate")
        peak = reference_peak(get_spec(PEAK_MODEL), peak)
        peaks.setdefault((float(peak), how_trained(parameters)), []).extend(runs)

    probe, full = {}, {}
    probe_runs, full_runs = collect(PEAK_SWEEP, sweeps), collect(FULL_PEAK_SWEEP, sweeps)
    for run in probe_runs:
        add(probe, run["parameters"], run["metrics"]["models"][PEAK_MODEL]["runs"])
    for run in full_runs:
        add(full, run["parameters"], run["metrics"]["models"][PEAK_MODEL]["runs"])
    notebooks = sweep_notebooks(probe_runs + full_runs)
    for record in records:
        model = record.get("models", {}).get(PEAK_MODEL)
        if record.get("notebook") in notebooks and not record.get("_sweep") and model and model.get("runs"):
            add(full, trained_parameters(record, model), model["runs"])
    return probe, full


def peak_probe_table(sweeps: Path, records: list[dict] = ()) -> pd.DataFrame:
    """One row per peak learning rate and training length, the 25-epoch probe first, highest peak
    first: best validation MSE and absolute MAE, mean [min-max] over seeds; empty
    without the probe sweep's finished runs."""
    probe, full = _peak_trials(sweeps, records)
    return _peak_table({**probe, **full}) if probe else pd.DataFrame()


def _by_length_then_peak(item) -> tuple:
    """Sort key of ``((peak, how trained), runs)``: shorter training first, then the higher peak."""
    (peak, how), _ = item
    return int(how.split()[0]), -peak


def _peak_table(trials: dict[tuple, list]) -> pd.DataFrame:
    rows = [
        {
            "peak learning rate": f"{peak:g}",
            "trained": how,
            "seeds": len(runs),
            "best val MSE": _cell([r["best_val_loss"] for r in runs]),
            **{f"MAE {name}": _cell([r["metrics"][name]["mae"] for r in runs]) for name in ("in", "out", "long")},
        }
        for (peak, how), runs in sorted(trials.items(), key=_by_length_then_peak)
    ]
    return pd.DataFrame(rows)


def peak_probe_lines(sweeps: Path, records: list[dict] = ()) -> list[str]:
    """The findings section on transformer5_reference's peak learning rate, or nothing without the sweep."""

    probe, full = _peak_trials(sweeps, records)
    if not probe:
        return []
    best, _ = min(probe, key=lambda key: np.mean([r["best_val_loss"] for r in probe[key]]))
    used = reference_peak(get_spec(PEAK_MODEL))
    text = (
        f"The prior report's transformer5 notebook chose its peak learning rate by its own keras-tuner search "
        f"(25-epoch trials, validation loss); the rate it found is not in its code. `{PEAK_MODEL}` repeats "
        f"that choice in miniature (`predcalc sweep sweeps/{PEAK_SWEEP}.yaml`): the lowest mean validation "
        f"MSE is at a peak of {best:g}; `{PEAK_MODEL}` trains with {used:g} (transformer4's tuned peak is "
        f"{REFERENCE_PEAK_LEARNING_RATE:g})."
    )
    table = markdown_table(_peak_table({**probe, **full}))
    lines = ["### transformer5_reference: the peak learning rate", "", text, "", table, ""]
    if full:
        notebook = ", ".join(sorted(sweep_notebooks(collect(PEAK_SWEEP, sweeps) + collect(FULL_PEAK_SWEEP, sweeps))))
        published = REFERENCE_ROWS["transformer5"]["mae_in"]
        means = {key: float(np.mean([r["metrics"]["in"]["mae"] for r in runs])) for key, runs in full.items()}
        (peak, how), lowest = min(means.items(), key=lambda item: item[1])
        runs = full[(peak, how)]
        first = {
            key[0]: next((r["metrics"]["in"]["mae"] for r in runs if r["seed"] == 0), None)
            for key, runs in full.items()
        }
        same_seed = (
            "; on seed 0, which every full-length peak has: "
            + ", ".join(
                f"{value:.4g} at {rate:g}" for rate, value in sorted(first.items(), reverse=True) if value is not None
            )
            if sum(value is not None for value in first.values()) > 1
            else ""
        )
        lines += [
            f"Trained for the full length ({how}; the 200-epoch rows come from "
            f"`predcalc sweep sweeps/{FULL_PEAK_SWEEP}.yaml` and the stored {notebook} run), the lowest "
            f"mean in-range MAE is {lowest:.4g} at a peak of {peak:g} ({len(runs)} seed{'s' * (len(runs) > 1)})"
            f"{same_seed}; the prior report published {published:g}"
            + (
                " (mean of 5 runs)."
                if lowest < published
                else " (mean of 5 runs): within these peaks the rate does not close the in-range gap."
            ),
            "",
        ]
    return lines
