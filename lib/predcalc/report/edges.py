"""The findings section on the edges of the protocol's box: each stored ``edges.json``
(written by :func:`predcalc.report.notebook.edge_table`, first seed of each model) as one table."""

from __future__ import annotations

import json

import pandas as pd

from predcalc.report.studies import shown_label
from predcalc.studies.edges import EDGE_AXES, NO_SPACES

EDGES_FILE = "edges.json"


def edge_cell(score: dict | None) -> str:
    """One model on one edge set: "exact % (MAE)", or "-" where it cannot take the set's length."""
    return "-" if score is None else f"{100 * score['accuracy']:.1f} % ({score['mae']:.3g})"


def stored_edges(records: list[dict]) -> list[dict]:
    """``{"model": label, "notebook", "scores": {set: metrics or None}}`` for each model of each run
    that stored edge scores, read once."""
    found = []
    for record in records:
        folder = record.get("_dir")
        if folder is None or not (folder / EDGES_FILE).is_file():
            continue
        for name, by_set in json.loads((folder / EDGES_FILE).read_text()).items():
            label = shown_label(name, record.get("models", {}).get(name, {}).get("label", name))
            found.append({"model": label, "notebook": record["notebook"], "scores": by_set})
    return found


def edges_frame(records: list[dict], stored: list[dict] | None = None) -> pd.DataFrame:
    """One row per model scored on the edge sets, one :func:`edge_cell` per set; empty when no run
    stored edge scores. ``stored``: :func:`stored_edges` of ``records``, when already read."""
    stored = stored_edges(records) if stored is None else stored
    return pd.DataFrame([{"model": entry["model"], "notebook": entry["notebook"],
                          **{name: edge_cell(score) for name, score in entry["scores"].items()}}
                         for entry in stored])


def edges_text(counts) -> str:
    """``counts``: the set sizes the stored scores were measured on."""
    axes = "; ".join(f"`{name}` {terms} numbers from -{bound:,}..{bound:,}"
                     for name, (terms, bound) in EDGE_AXES.items())
    size = " or ".join(f"{n:,}" for n in sorted(set(counts)))
    return ("Held-out sets one axis beyond the protocol's box (training: 3 numbers from -5..4, `+`/`-`, "
            f"with spaces), {size} expressions each, scored on each model's first seed: {axes}; `{NO_SPACES}` "
            "3 numbers from -5..4 written without spaces. Each cell: exact accuracy (MAE). \"-\": the model's "
            "weights depend on its input length, so it cannot read that length. A claim of this report holds "
            "inside the box it names; these columns show how far past it each model still calculates.")


def edges_lines(records: list[dict]) -> list[str]:
    """The section, or nothing when no run stored edge scores."""
    from predcalc.report.tables import markdown_table

    stored = stored_edges(records)
    if not stored:
        return []
    counts = [score["n"] for entry in stored for score in entry["scores"].values() if score is not None]
    return ["## Edges of the box", "", edges_text(counts), "", markdown_table(edges_frame(records, stored)), ""]


def edges_answer(records: list[dict], labels) -> str:
    """One answer line: the exact accuracy on each edge set of the models labelled ``labels`` (the
    ones that met the goal inside the box), or "" when none of them was scored there."""
    labels = set(labels)
    chosen = [entry for entry in stored_edges(records) if entry["model"] in labels]
    if not chosen:
        return ""

    def exact(score):
        return "too long to read" if score is None else f"{100 * score['accuracy']:.1f} %"

    def per_set(scores):
        return ", ".join(f"{name} {exact(score)}" for name, score in scores.items())

    parts = [f"**{entry['model']}**: {per_set(entry['scores'])}" for entry in chosen]
    return ("  - Past the box, one axis at a time (exact accuracy, first seed; see \"Edges of the box\"): "
            + "; ".join(parts) + ".")


def _summarise(per_seed: dict) -> dict:
    """``{seed: {set: {"accuracy": ...}}}`` -> ``{set: {"mean", "min", "max", "seeds"}}`` (sets a model
    cannot read, stored as None, are left out)."""
    sets: dict[str, list[float]] = {}
    for scores in per_seed.values():
        for name, score in scores.items():
            if isinstance(score, dict) and score.get("accuracy") is not None:
                sets.setdefault(name, []).append(float(score["accuracy"]))
    return {name: {"mean": sum(v) / len(v), "min": min(v), "max": max(v), "seeds": len(v)}
            for name, v in sets.items()}


def load_suites(folder) -> dict:
    """The stored edge suites under ``folder`` (``heldout.json``, ``development.json``): per suite
    and model, each set's exact accuracy over seeds; {} where none was stored."""
    import json
    from pathlib import Path

    out = {}
    for suite in ("heldout", "development"):
        path = Path(folder) / f"{suite}.json"
        if path.is_file():
            stored = json.loads(path.read_text())
            models = stored.get("models", stored)
            out[suite] = {model: _summarise(per_seed) for model, per_seed in models.items()
                          if isinstance(per_seed, dict)}
            out[f"{suite}_record"] = stored
    return out


def heldout_blocks(edges: dict, models) -> list:
    """The Results' held-out edge blocks: one row per set, one column per recommended model
    ("mean [min-max] %" over seeds)."""
    from predcalc.report.document import Table, Text
    from predcalc.report.tables import plain_cell

    held = edges.get("heldout") or {}
    shown = [m for m in models if m in held]
    if not shown:
        return []
    sets = list(dict.fromkeys(s for m in shown for s in held[m]))
    rows = []
    for name in sets:
        row = {"set": name}
        for model in shown:
            score = held[model].get(name)
            row[f"`{model}`"] = ("cannot read" if score is None else
                                 f"{100 * score['mean']:.1f} [{100 * score['min']:.1f}-{100 * score['max']:.1f}] "
                                 f"({score['seeds']} seeds)")
        rows.append(row)
    record = edges.get("heldout_record") or {}
    about = record.get("description", "")
    return [Text("Exact accuracy on the held-out edge suite (drawn after every choice in Method, never used to "
                 "choose), through each seed's exported file; mean [min-max] over seeds. " + about),
            Table(pd.DataFrame(rows), cell=plain_cell)]
