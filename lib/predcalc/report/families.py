"""The families table from the registry and the stored runs: per family and kind of choice, the trained
model with the lowest mean validation loss or the partly built one with the best extended-suite mean."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from predcalc.readable import percent, share
from predcalc.report.findings import unique_models

PROTOCOL_SETS = (("in", "in range"), ("out", "out of range"), ("long", "long"))
HELD_OUT_SUITE = "third_heldout"  # reports/edges/third_heldout.json: drawn after every choice
HELD_OUT = "held-out suite"
TRAINED, BUILT = "validation loss", "the extended suite"  # what chose among a family's trained / partly built


def registry() -> dict:
    from predcalc.models import MODELS  # Keras: only when a table is built

    return dict(MODELS)


def spread(values) -> str:
    values = [float(v) for v in values]
    low, high = percent(min(values), 1, ""), percent(max(values), 1, "")
    exact = sum(v >= 1.0 for v in values)
    return f"{share(float(np.mean(values)))}, {exact}/{len(values)} exact, {low}-{high}"


def mean_val_loss(model) -> float:
    losses = [r.extra.get("best_val_loss") for r in model.runs]
    losses = [x for x in losses if x is not None and np.isfinite(x)]
    return float(np.mean(losses)) if losses else float("inf")


def extended_means(records) -> dict[str, float]:
    out = {}
    for record in records:
        entry = record.entries.get("extended") or {}
        for name, model in (entry.get("models") or {}).items():
            out[name] = float(
                np.mean([[r["metrics"][f]["accuracy"] for f in entry["families"]] for r in model["runs"]])
            )
    return out


def load_held_out(reports: Path) -> dict:
    path = Path(reports) / "edges" / f"{HELD_OUT_SUITE}.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def held_out_cell(suite: dict, name: str) -> str:
    """A model on the held-out suite: mean, seeds exact on all sets, spread, and how many sets were read."""
    by_seed = (suite.get("models") or {}).get(name)
    if not by_seed:
        return "-"
    scores = [{s: v["accuracy"] for s, v in sets.items() if "accuracy" in v} for sets in by_seed.values()]
    per_seed = [float(np.mean(list(sets.values()))) for sets in scores]
    exact = sum(all(v >= 1.0 for v in sets.values()) for sets in scores)
    low, high = percent(min(per_seed), 1, ""), percent(max(per_seed), 1, "")
    read, total = len(scores[0]), len(next(iter(by_seed.values())))
    return f"{share(float(np.mean(per_seed)))}, {exact}/{len(scores)} exact on all, {low}-{high} ({read} of {total} sets read)"


def candidates(models: dict, specs: dict) -> dict[tuple[str, bool], list[str]]:
    out: dict[tuple[str, bool], list[str]] = {}
    for name in models:
        spec = specs.get(name)
        if spec is not None and spec.findings_family:
            out.setdefault((spec.findings_family, spec.finish is not None), []).append(name)
    return out


def choices(records, specs: dict | None = None) -> list[tuple[str, bool, str, int]]:
    """``(family, partly built, chosen model, candidates)`` per row, in the notebooks' order."""
    specs = registry() if specs is None else specs
    models = {name: model for _, name, model, _ in unique_models(records)}
    scores = extended_means(records)
    out = []
    for (family, built), names in candidates(models, specs).items():
        if built:
            name = max(names, key=lambda n: scores.get(n, -1.0))
        else:
            name = min(names, key=lambda n: mean_val_loss(models[n]))
        out.append((family, built, name, len(names)))
    return out


def family_rows(records, suite: dict | None = None, specs: dict | None = None) -> list[dict]:
    specs = registry() if specs is None else specs
    models = {name: model for _, name, model, _ in unique_models(records)}
    rows = []
    for family, built, name, count in choices(records, specs):
        spec, model = specs[name], models[name]
        chosen = f"{BUILT if built else TRAINED}, best of {count}" if count > 1 else "the only candidate"
        row = {"family": family, "model": spec.shown_name, "kind": spec.shown_kind, "params": f"{model.params:,}"}
        for test_set, column in PROTOCOL_SETS:
            row[column] = spread([r.metrics[test_set]["accuracy"] for r in model.runs])
        row[HELD_OUT] = held_out_cell(suite or {}, name)
        row["chosen by"] = f"design: {spec.designed_on}; then {chosen}" if spec.designed_on else chosen
        rows.append(row)
    return rows


def families_table(records, suite: dict | None = None, specs: dict | None = None) -> pd.DataFrame:
    return pd.DataFrame(family_rows(records, suite, specs))


def models_table(records, specs: dict | None = None) -> pd.DataFrame:
    specs = registry() if specs is None else specs
    rows = [
        {
            "name in the text": spec.shown_name,
            "registry name": f"`{name}`",
            "family": spec.findings_family or spec.family,
            "what it is": model.label,
            "params": f"{model.params:,}",
            "kind": spec.shown_kind,
            "notebook": record.notebook,
        }
        for record, name, model, _ in unique_models(records)
        if (spec := specs.get(name)) is not None and (spec.short_name or spec.findings_family)
    ]
    return pd.DataFrame(rows)
