"""The findings section on the edges of the protocol's box: each stored ``edges.json``
(written by :func:`predcalc.report.notebook.edge_table`, first seed of each model) as one table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from predcalc.readable import percent_number, share
from predcalc.report.answer import short_name
from predcalc.report.cell import set_cell
from predcalc.report.document import Table
from predcalc.report.records import StoredRecord
from predcalc.report.studies import shown_label
from predcalc.report.tables import markdown_table, plain_cell
from predcalc.studies.edges import EDGE_AXES, NO_SPACES
from predcalc.training.metrics import bootstrap_interval

EDGES_FILE = "edges.json"


def edge_cell(score: dict | None) -> str:
    """One model on one edge set: "exact % (MAE)", or "-" where it cannot take the set's length."""
    return "-" if score is None else f"{share(score['accuracy'], 1)} ({score['mae']:.3g})"


def stored_edges(records: list[StoredRecord]) -> list[dict]:
    """``{"model": label, "notebook", "scores": {set: metrics or None}}`` for each model of each run
    that stored edge scores, read once."""
    found = []
    for record in records:
        folder = record.folder
        if folder is None or not (folder / EDGES_FILE).is_file():
            continue
        for name, by_set in json.loads((folder / EDGES_FILE).read_text()).items():
            label = shown_label(name, record.models[name].label if name in record.models else name)
            found.append({"model": label, "notebook": record.notebook, "scores": by_set})
    return found


def edges_frame(records: list[StoredRecord], stored: list[dict] | None = None) -> pd.DataFrame:
    """One row per model scored on the edge sets, one :func:`edge_cell` per set; empty when no run
    stored edge scores. ``stored``: :func:`stored_edges` of ``records``, when already read."""
    stored = stored_edges(records) if stored is None else stored
    return pd.DataFrame(
        [
            {
                "model": entry["model"],
                "notebook": entry["notebook"],
                **{name: edge_cell(score) for name, score in entry["scores"].items()},
            }
            for entry in stored
        ]
    )


def edges_text(counts) -> str:
    """``counts``: the set sizes the stored scores were measured on."""
    axes = "; ".join(
        f"`{name}` {terms} numbers from -{bound:,}..{bound:,}" for name, (terms, bound) in EDGE_AXES.items()
    )
    size = " or ".join(f"{n:,}" for n in sorted(set(counts)))
    return (
        "Held-out sets one axis beyond the protocol's box (training: 3 numbers from -5..4, `+`/`-`, "
        f"with spaces), {size} expressions each, scored on each model's first seed: {axes}; `{NO_SPACES}` "
        '3 numbers from -5..4 written without spaces. Each cell: exact accuracy (MAE). "-": the model\'s '
        "weights depend on its input length, so it cannot read that length. A claim of this report holds "
        "inside the box it names; these columns show how far past it each model still calculates."
    )


def edges_lines(records: list[StoredRecord]) -> list[str]:
    """The section, or nothing when no run stored edge scores."""

    stored = stored_edges(records)
    if not stored:
        return []
    counts = [score["n"] for entry in stored for score in entry["scores"].values() if score is not None]
    return ["## Edges of the box", "", edges_text(counts), "", markdown_table(edges_frame(records, stored)), ""]


def suite_summary(record: dict) -> dict:
    """``{model: {set: {"mean", "min", "max", "seeds"}}}`` of exact accuracy over seeds, for the sets
    each model can read (:func:`seed_table`'s rows without a note)."""
    table = seed_table(record)
    read = table[table.note == ""]
    return {
        model: {
            row.set: {
                "mean": float(row.accuracy),
                "min": float(row["min"]),
                "max": float(row["max"]),
                "seeds": int(row.seeds),
            }
            for _, row in rows.iterrows()
        }
        for model, rows in read.groupby("model", sort=False)
    }


def load_suites(folder) -> dict:
    """The stored edge suites under ``folder`` (``heldout.json``, ``development.json``,
    ``third_heldout.json``): per suite
    and model, each set's exact accuracy over seeds (``suite``), and the stored record
    (``suite_record``); {} where none was stored."""
    out = {}
    for suite in ("heldout", "development", "third_heldout"):
        path = Path(folder) / f"{suite}.json"
        if path.is_file():
            stored = json.loads(path.read_text())
            out[suite] = suite_summary(stored)
            out[f"{suite}_record"] = stored
    return out


def suite_blocks(edges: dict, suite: str, models) -> list:
    """A suite's blocks for the findings: one row per set (its box), one column per model
    ("mean [min-max] %" of exact accuracy over seeds and the seeds exact on every expression, or why
    the model cannot read the set)."""

    record = edges.get(f"{suite}_record")
    if not record:
        return []
    table = seed_table(record)
    shown = [m for m in models if m in set(table.model)] or sorted(set(table.model))
    rows = []
    for set_name, box in record["suite"]["sets"].items():
        row = {"set": set_name, "box": box}
        for model in shown:
            found = table[(table.model == model) & (table.set == set_name)]
            if found.empty:
                continue
            cell = found.iloc[0]
            if cell.note and "tokens" in cell.note:  # longer than its files read: not read, not 0
                row[short_name(model)] = f"not read ({cell.note})"
            elif cell.note:
                row[short_name(model)] = "not in its input language"
            else:
                row[short_name(model)] = set_cell(cell.accuracy, cell["min"], cell["max"], cell.exact_seeds, cell.seeds)
        rows.append(row)
    return [Table(pd.DataFrame(rows), cell=plain_cell)]


def seed_table(record: dict) -> pd.DataFrame:
    """One row per model and set of a stored suite record (``reports/edges/*.json``, written by
    :func:`predcalc.studies.edge_seeds.suite_scores`: ``models`` holds ``{model: {seed: {set: score}}}``,
    ``about`` each model's kind, files and checks): exact accuracy over seeds (mean, min, max and
    a bootstrap 95 % interval of the mean), mean MAE, each seed's accuracy; a set the model's
    tokeniser cannot encode gets its reason in ``note``."""

    rows = []
    boxes = record["suite"]["sets"]
    for name, by_seed in record["models"].items():
        for set_name, box in boxes.items():
            per_seed = {seed: scores[set_name] for seed, scores in by_seed.items()}
            row = {
                "model": name,
                "kind": record["about"][name]["kind"],
                "set": set_name,
                "box": box,
                "seeds": len(per_seed),
            }
            refused = [s for s in per_seed.values() if "accuracy" not in s]
            if refused:
                rows.append({**row, "note": refused[0].get("not_in_input_language") or refused[0].get("too_long")})
                continue
            accuracy = np.array([s["accuracy"] for s in per_seed.values()])
            low, high = bootstrap_interval(accuracy)
            rows.append(
                {
                    **row,
                    "accuracy": accuracy.mean(),
                    "min": accuracy.min(),
                    "max": accuracy.max(),
                    "boot_low": low,
                    "boot_high": high,
                    "mae": float(np.mean([s["mae"] for s in per_seed.values()])),
                    "per_seed": " / ".join(percent_number(a, 1) for a in accuracy),
                    "exact_seeds": int((accuracy >= 1.0).sum()),
                    "note": "",
                }
            )
    return pd.DataFrame(rows)


def seed_facts(record: dict) -> list[str]:
    """Plain sentences from a stored suite record: per model, the sets every seed answers (at least 99 %
    exact), those every seed fails (below 50 %), the sets outside its input language, whether unspaced
    forms apply, how far its two runtimes agree, and how closely retraining reproduced the stored runs."""
    table = seed_table(record)
    suite = record["suite"]
    facts = []
    for name, by_seed in record["models"].items():
        model = record["about"][name]
        rows = table[table.model == name]
        scored = rows[rows.note == ""]
        held = ", ".join(scored[scored["min"] >= 0.99].set) or "none"
        failed = ", ".join(scored[scored["max"] < 0.5].set) or "none"
        facts.append(
            f"{name} ({model['kind']}, {len(by_seed)} seeds, {suite['kind']} suite seed {suite['seed']}, "
            f"{suite['count']} expressions a set, read through its exported ONNX file at "
            f"{model['input_length']} tokens): every seed at least 99 % exact on {held}; every seed below "
            f"50 % on {failed}."
        )
        for _, row in rows[rows.note != ""].iterrows():
            facts.append(f"{name}: {row.set} ({row.box}) is not scored: {row.note}.")
        unspaced = model["unspaced_forms"]
        facts.append(f"{name}: unspaced forms {'apply' if unspaced['applies'] else 'do not apply'}: {unspaced['why']}.")
        scores = [s for by_set in by_seed.values() for s in by_set.values() if "accuracy" in s]
        gap = max(s["runtimes_max_abs_diff"] for s in scores)
        points = max(abs(s["accuracy"] - s["litert"]["accuracy"]) for s in scores)
        facts.append(
            f"{name}: LiteRT and ONNX answers differ by at most {gap:.2g} (exact accuracy by at most "
            f"{100 * points:.2f} points on any set and seed)."
        )
        facts.append(f"{name}: {reproduction_fact(model['reproduction'])}")
    return facts


def reproduction_fact(reproduction: dict) -> str:
    """One sentence on how closely retraining reproduced the stored runs (``reproduction`` of
    :func:`predcalc.studies.edge_seeds.reproduction`)."""
    if not reproduction:
        return "no seed was retrained."
    seeds = len(reproduction)
    same_epochs = sum(r["epochs"][0] == r["epochs"][1] for r in reproduction.values())
    same_accuracy = sum(
        all(s["accuracy"][0] == s["accuracy"][1] for s in r["sets"].values()) for r in reproduction.values()
    )
    loss = max(r["val_loss_relative_difference"] for r in reproduction.values())
    mae = max(s["mae_difference"] for r in reproduction.values() for s in r["sets"].values())
    return (
        f"retraining with the stored parameters gave the stored exact accuracy on every test set on "
        f"{same_accuracy} of {seeds} seeds and the same number of epochs on {same_epochs}; the best validation "
        f"loss differs by up to {100 * loss:.2g} % and a test set's MAE by up to {mae:.2g}: "
        f"{'bit-for-bit reproducible' if loss == 0 and mae == 0 else 'not bit-for-bit reproducible'} here."
    )
