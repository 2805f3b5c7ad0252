"""What the digit notebook (41_digits) calls: train, export and score every seed, and the tables
it shows. The numbers come from each seed's folder (``state.json``, ``digits.json``,
``scores.json``); the notebook's markdown reads them through myst-nb's ``glue``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from predcalc.deploy.digit_files import ONNX_FILE, SIDECAR
from predcalc.deploy.digit_scores import SCORES, litert_check, score_seed, seeds_cell
from predcalc.models.digits import DIGIT_MODELS
from predcalc.quiet import ENVIRONMENT
from predcalc.training import digits as training


def seed_folder(root, model: str, seed: int) -> Path:
    return Path(root) / model / f"seed_{seed}"


def train_all(root, models: dict, steps: dict, learning_rates: dict, evaluate_every: int) -> pd.DataFrame:
    """Train (or resume, or skip when done) every model (``{model: seeds}``) and seed; one row each."""
    rows = []
    for model, seeds in models.items():
        for seed in seeds:
            state = training.train(
                model,
                seed,
                steps[model],
                seed_folder(root, model, seed),
                evaluate_every=evaluate_every,
                learning_rate=learning_rates[model],
                progress=False,
            )
            last = state["development"][-1] if state["development"] else {}
            rows.append(
                {
                    "model": model,
                    "seed": seed,
                    "steps": state["steps"],
                    "CPU minutes": round(state["cpu_seconds"] / 60, 1),
                    "hardware": "; ".join(sorted({s["hardware"] for s in state["stretches"]})),
                    "resumed": len(state["stretches"]) - 1,
                    **{f"dev {k}": v for k, v in last.items() if k not in ("step", "loss")},
                }
            )
    return pd.DataFrame(rows)


def development_curves(root, models: dict) -> pd.DataFrame:
    """Every evaluation of every seed: model, seed, step and the development sets' exact shares."""
    rows = []
    for model, seeds in models.items():
        for seed in seeds:
            state = json.loads((seed_folder(root, model, seed) / "state.json").read_text())
            rows += [{"model": model, "seed": seed, **point} for point in state["development"]]
    return pd.DataFrame(rows)


def export_all(root, models: dict, litert_models=()) -> pd.DataFrame:
    """ONNX and LiteRT files of every seed (TensorFlow backend, in a child process), with their
    parity; a seed exported before LiteRT files were written is exported again only for
    ``litert_models``."""
    rows = []
    for model, seeds in models.items():
        for seed in seeds:
            folder = seed_folder(root, model, seed)
            sidecar = folder / SIDECAR
            checkpoint, onnx = folder / "checkpoint.keras", folder / ONNX_FILE
            # kept: files newer than their checkpoint, or a clone's (its checkpoint stayed behind, and
            # only the recommended models' files are committed)
            fresh = sidecar.is_file() and (
                not checkpoint.is_file()
                or (
                    onnx.is_file()
                    and onnx.stat().st_mtime >= checkpoint.stat().st_mtime
                    and ("litert" in json.loads(sidecar.read_text()) or model not in litert_models)
                )
            )
            if not fresh:
                env = {**os.environ, **ENVIRONMENT, "KERAS_BACKEND": "tensorflow"}
                done = subprocess.run(
                    [sys.executable, "-m", "predcalc.deploy.digit_files", str(folder)],
                    capture_output=True,
                    text=True,
                    env=env,
                )
                if done.returncode != 0:
                    raise RuntimeError(f"export of {model} seed {seed} failed: {done.stderr.strip().splitlines()[-1]}")
            info = json.loads(sidecar.read_text())
            rows.append(
                {
                    "model": model,
                    "seed": seed,
                    "ONNX bytes": info.get("bytes", onnx.stat().st_size if onnx.is_file() else None),
                    "largest logit difference": info["parity_max_logit_difference"],
                    "LiteRT bytes": info.get("litert", {}).get("bytes"),
                    "LiteRT largest logit difference": info.get("litert", {}).get("parity_max_logit_difference"),
                    "LiteRT error": info.get("litert", {}).get("error"),
                }
            )
    return pd.DataFrame(rows)


def score_all(root, models: dict, sets: dict, suite_seed: int, keras_check: int, cache_name: str = SCORES) -> dict:
    """``{model: {seed: scores}}`` through each seed's ONNX file (cached per seed in ``cache_name``)."""
    from tqdm.auto import tqdm  # the progress bar, only where scoring runs

    out: dict = {}
    bar = tqdm(total=sum(map(len, models.values())) * len(sets), desc="scoring", leave=False)
    for model, seeds in models.items():
        for seed in seeds:
            out.setdefault(model, {})[seed] = score_seed(
                seed_folder(root, model, seed),
                sets,
                suite_seed,
                keras_check,
                progress=lambda _: bar.update(1),
                cache_name=cache_name,
            )
    bar.close()
    return out


def litert_all(root, scores: dict, sets: dict, suite_seed: int, count: int) -> pd.DataFrame:
    """Each seed's LiteRT answers against its ONNX answers on the first ``count`` expressions of
    every set the ONNX file was scored on (cached per seed); one row a seed with a LiteRT file."""
    rows = []
    for model, seeds in scores.items():
        for seed, result in sorted(seeds.items()):
            checked = litert_check(seed_folder(root, model, seed), sets, suite_seed, count, result)
            if checked is not None:
                rows.append(
                    {
                        "model": model,
                        "seed": seed,
                        "checked": sum(r["checked"] for r in checked["sets"].values()),
                        "differing": sum(r["differing"] for r in checked["sets"].values()),
                    }
                )
    return pd.DataFrame(rows, columns=["model", "seed", "checked", "differing"])


def suite_table(scores: dict, sets) -> pd.DataFrame:
    """Models by rows, sets by columns, each cell :func:`cell`."""
    rows = {}
    for model, seeds in scores.items():
        label = DIGIT_MODELS.named(model).label
        rows[label] = {name: seeds_cell(seeds[s]["sets"][name]["exact"] for s in sorted(seeds)) for name in sets}
    return pd.DataFrame(rows).T


def parity_table(scores: dict) -> pd.DataFrame:
    """Answers of the ONNX file that differ from Keras', over the checked expressions of every set."""
    rows = []
    for model, seeds in scores.items():
        for seed, result in sorted(seeds.items()):
            checked = sum(p["checked"] for p in result["parity"].values())
            differing = sum(p["differing"] for p in result["parity"].values())
            rows.append({"model": model, "seed": seed, "checked": checked, "differing": differing})
    return pd.DataFrame(rows)


def reach(scores: dict, widths=(10, 20, 30, 50, 100)) -> dict:
    """``{model: {width: [exact of each seed]}}`` on the ``digits_W`` sets that were scored."""
    out = {}
    for model, seeds in scores.items():
        out[model] = {
            w: [seeds[s]["sets"][f"digits_{w}"]["exact"] for s in sorted(seeds)]
            for w in widths
            if f"digits_{w}" in next(iter(seeds.values()))["sets"]
        }
    return out


def plot_reach(ax, scores: dict) -> None:
    """Exact share against digits per number, a line per seed, a colour per model."""
    for index, (model, by_width) in enumerate(reach(scores).items()):
        widths = sorted(by_width)
        values = np.array([by_width[w] for w in widths]).T * 100
        for seed_index, row in enumerate(values):
            ax.plot(
                widths,
                row,
                color=f"C{index}",
                marker="o",
                alpha=0.7,
                label=DIGIT_MODELS.named(model).label if seed_index == 0 else None,
            )
    ax.axvline(10, color="grey", linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_xticks([10, 20, 30, 50, 100], ["10\n(box)", "20", "30", "50", "100"])
    ax.set_xlabel("digits per number (3 terms, signed)")
    ax.set_ylabel("exact (%)")
    ax.set_ylim(-3, 103)
    ax.legend(fontsize=8, loc="upper right")


def others_table(
    path, sets=("digits_10", "digits_30", "digits_100", "terms_6", "terms_9", "rung2_digits_30")
) -> pd.DataFrame:
    """The value models' and the calculator's files on the digit suite (``digit_suite_others``'
    record): per set, how many files answer every line and how many are exact on every line."""
    record = json.loads(Path(path).read_text())
    rows = {}
    for entry in record.values():
        files = len(entry["files"])
        rows[entry["label"]] = {
            name: f"{row['files_all_exact']}/{files} exact, {row['files_all_answered']}/{files} answer all"
            for name, row in entry["sets"].items()
            if name in sets
        }
    return pd.DataFrame(rows).T


def percent_range(values) -> str:
    """The lowest and highest seed as ``22-82 %``, or one number where they agree (``0 %``)."""
    low, high = round(100 * min(values)), round(100 * max(values))
    return f"{low} %" if low == high else f"{low}-{high} %"
