"""The findings section on the edges of the seed protocol's box: each stored ``edges.json``
(written by :func:`predcalc.report.notebook.edge_table`, first seed of each model) as one table."""

from __future__ import annotations

import json

import pandas as pd

from predcalc.studies.edges import EDGE_AXES, NO_SPACES

EDGES_FILE = "edges.json"


def _stored(records: list[dict]):
    """``(record, {model: {set: metrics or None}})`` for each run that stored edge scores."""
    for record in records:
        folder = record.get("_dir")
        if folder is not None and (folder / EDGES_FILE).is_file():
            yield record, json.loads((folder / EDGES_FILE).read_text())


def edges_frame(records: list[dict]) -> pd.DataFrame:
    """One row per model scored on the edge sets: "exact % (MAE)" per set, "-" where the model
    cannot take the set's length; empty when no run stored edge scores."""
    rows = []
    for record, scores in _stored(records):
        for name, by_set in scores.items():
            model = record.get("models", {}).get(name, {})
            rows.append({"model": model.get("label", name), "notebook": record["notebook"],
                         **{set_name: "-" if score is None else f"{100 * score['accuracy']:.1f} % ({score['mae']:.3g})"
                            for set_name, score in by_set.items()}})
    return pd.DataFrame(rows)


def edges_text(counts) -> str:
    """``counts``: the set sizes the stored scores were measured on."""
    axes = "; ".join(f"`{name}` {terms} numbers from -{bound:,}..{bound:,}"
                     for name, (terms, bound) in EDGE_AXES.items())
    size = " or ".join(f"{n:,}" for n in sorted(set(counts)))
    return ("Held-out sets one axis beyond the seed protocol's box (training: 3 numbers from -5..4, `+`/`-`, "
            f"with spaces), {size} expressions each, scored on each model's first seed: {axes}; `{NO_SPACES}` "
            "3 numbers from -5..4 written without spaces. Each cell: exact accuracy (MAE). \"-\": the model's "
            "weights depend on its input length, so it cannot read that length. A claim of this report holds "
            "inside the box it names; these columns show how far past it each model still calculates.")


def edges_lines(records: list[dict]) -> list[str]:
    """The section, or nothing when no run stored edge scores."""
    from predcalc.report.tables import markdown_table

    frame = edges_frame(records)
    if frame.empty:
        return []
    counts = [score["n"] for _, scores in _stored(records) for by_set in scores.values()
              for score in by_set.values() if score is not None]
    return ["## Edges of the box", "", edges_text(counts), "", markdown_table(frame), ""]


def edges_answer(records: list[dict], labels) -> str:
    """One answer line: the exact accuracy on each edge set of the models labelled ``labels`` (the
    ones that met the goal inside the box), or "" when none of them was scored there."""
    frame = edges_frame(records)
    if frame.empty:
        return ""
    chosen = frame[frame["model"].isin(list(labels))]
    if chosen.empty:
        return ""
    def exact(row):  # "100.0 % (0.0456)" -> "100.0 %"; a set the model was not scored on is skipped
        return ", ".join(f"{column} {row[column].split(' (')[0] if row[column] != '-' else 'too long to read'}"
                         for column in chosen.columns[2:] if isinstance(row[column], str))

    parts = [f"**{row['model']}**: {exact(row)}" for _, row in chosen.iterrows()]
    return ("  - Past the box, one axis at a time (exact accuracy, first seed; see \"Edges of the box\"): "
            + "; ".join(parts) + ".")
