"""What notebook 07 (the Gemma fine-tune) shows: its tables, its loss figure and the values its
conclusion glues. Values and tables only: the notebook's markdown says what they mean."""

from __future__ import annotations

import numpy as np
import pandas as pd

from predcalc.report.anchors import REFERENCE_LLM_ROWS
from predcalc.llm import weights as gemma_weights

SETS = ("in", "out", "long")


def conversion_frame() -> pd.DataFrame:
    """What the GGUF-to-keras-hub conversion mapped, and the architecture it read."""
    conversion = gemma_weights.conversion_report()
    meta = conversion["metadata"]
    shown = ("num_layers", "hidden_dim", "num_query_heads", "head_dim", "vocabulary_size")
    values = {**{k: conversion[k] for k in ("tensors", "weights", "params")}, **{k: meta[k] for k in shown}}
    return pd.Series(values, name=gemma_weights.LABEL).to_frame()


def _side(values, reference) -> str:
    """The side of ``reference`` every seed lies on, else "not resolved"."""
    if reference is None or len(values) < 2:
        return ""
    if all(v > reference for v in values):
        return "above"
    return "below" if all(v < reference for v in values) else "not resolved"


def gemma_table(record: dict) -> pd.DataFrame:
    """Each test set and held-out edge set over the LoRA seeds, beside the prior report's 270M row;
    the base model before fine-tuning below them."""
    seeds, prior, rows = record.get("seeds") or [], REFERENCE_LLM_ROWS["Gemma 3 270M"], []

    def row(model, name, values, n, reference=None):
        rows.append(
            {
                "model": model,
                "set": name,
                "n": n,
                "per seed": " / ".join(f"{100 * v:.2f} %" for v in values),
                "min": f"{100 * min(values):.2f} %",
                "max": f"{100 * max(values):.2f} %",
                "prior report": "" if reference is None else f"{100 * reference:.2f} %",
                "every seed": _side(values, reference),
            }
        )

    lora = "LoRA, seeds " + ", ".join(str(s["seed"]) for s in seeds)
    for name in SETS:
        scores = [s["scores"][name]["accuracy"] for s in seeds]
        row(lora, name, scores, record["test_counts"][name], prior[f"accuracy_{name}"])
    for name in seeds[0].get("edges", {}) if seeds else ():
        row(lora, name, [s["edges"][name]["accuracy"] for s in seeds], seeds[0]["edges"][name]["n"])
    for mode in ("zero_shot", "few_shot"):
        for name, score in ((record.get("base") or {}).get(mode, {}).get("scores") or {}).items():
            row(f"before fine-tuning, {mode.replace('_', '-')}", name, [score["accuracy"]], score["n"])
    return pd.DataFrame(rows)


def search_frames(record: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The search's candidates (each at its plateau) and its stages."""
    rows = [
        {
            "recipe": r["recipe"]["name"],
            "trainable": r["trainable_params"],
            "steps": r["steps"],
            "best step": r["best_step"],
            "stopped by": r["stopped_by"],
            "validation exact": r["validation"]["accuracy"],
        }
        for r in record["search"]["rows"]
    ]
    return pd.DataFrame(rows), pd.DataFrame(record["search"]["stages"])


def plot_losses(record: dict):
    """Each seed's answer-token loss (10-step mean) over its steps, log scale."""
    import matplotlib.pyplot as plt  # plotting, only where a figure is drawn

    figure, axis = plt.subplots(figsize=(7, 3.5))
    for run in record["seeds"]:
        smooth = np.convolve(np.asarray(run["losses"]), np.ones(10) / 10, mode="valid")
        axis.plot(np.arange(len(smooth)) + 10, smooth, label=f"seed {run['seed']}")
    title = "Gemma 3 270M, LoRA " + record["seeds"][0]["recipe"]["name"]
    axis.set(xlabel="step", ylabel="answer-token loss (10-step mean)", yscale="log", title=title)
    axis.legend()
    return figure


def _pct(value) -> str:
    return "n/a" if value is None else f"{100 * value:.2f} %"


def glue_texts(tiny: dict, control: dict, lora_rank: int, record: dict | None) -> dict[str, str]:
    """Every value the conclusion glues, by name, in every profile ("n/a" where a profile did not
    compute it): the prior report's rows, the tiny run and its control, the real model's seeds."""
    out = {}
    for name, row in REFERENCE_LLM_ROWS.items():
        for t in SETS:
            out[f"prior_{name.split()[-1].lower()}_{t}"] = _pct(row[f"accuracy_{t}"])
    unparseable = tiny.get("unparseable", {})
    out |= {
        "tiny_label": tiny.get("label", "n/a"),
        "tiny_rank": str(lora_rank),
        "tiny_trainable": f"{tiny.get('trainable_params', 0):,}",
        "tiny_epochs": str(tiny.get("epochs", "n/a")),
        "tiny_seconds": f"{tiny.get('train_seconds', 0):.0f}",
        "tiny_unparseable": " / ".join(str(unparseable.get(t, "n/a")) for t in SETS),
        "control_trainable": f"{control.get('trainable_params', 0):,}",
    }
    for t in SETS:
        out[f"tiny_{t}"] = _pct(tiny.get("accuracy", {}).get(t))
        out[f"control_{t}"] = _pct(control.get("accuracy", {}).get(t))
    seeds = (record or {}).get("seeds") or []
    table = gemma_table(record).set_index(["model", "set"]) if seeds else None
    out["gemma_seeds"] = str(len(seeds))
    out["gemma_recipe"] = seeds[0]["recipe"]["name"] if seeds else "n/a"
    out["gemma_trainable"] = f"{seeds[0]['trainable_params']:,}" if seeds else "n/a"
    for t in SETS:
        row = table.xs(t, level="set").iloc[0] if seeds else {}
        out[f"gemma_{t}"] = f"{row['min']} to {row['max']}" if seeds else "n/a"
        out[f"gemma_{t}_side"] = (row["every seed"] or "not resolved") if seeds else "n/a"
    exported = (record or {}).get("export") or {}
    out["export_same"], out["export_n"] = str(exported.get("same", "n/a")), str(exported.get("n", "n/a"))
    return out


def jetson_frame(protocol, work, output, record: dict, n_export: int = 200, n_cli: int = 20) -> pd.DataFrame:
    """The published adapter's LiteRT file against Keras (stored in the record), and what the
    command line's rebuilt model answers on ``n_cli`` in-range expressions."""
    from predcalc.llm import finetune as llm, deploy as llm_deploy  # Keras and keras-hub: only where a model is built

    adapter = output / record["run_folder"]["adapter"]
    export = record["export"] = llm_deploy.export_stage(protocol, work, adapter, n=n_export)
    adapted = llm_deploy.GemmaAdapter(output)  # what `predcalc evaluate --model <run folder>` builds
    check = llm.subsample(protocol.test_in, n_cli, 0)
    right = int(sum(a == v for a, v in zip(adapted.predict(check.expressions), check.values)))
    shown = ("format", "size_mb", "load_seconds", "tokens_per_second", "same", "n")
    values = {**{k: export[k] for k in shown}, f"command line: exact of {n_cli} in range": right}
    return pd.Series(values, name=adapted.name).to_frame()
