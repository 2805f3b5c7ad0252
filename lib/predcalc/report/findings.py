"""The stored runs as tables: every ``reports/runs/*/metrics.json`` read once, each trained model listed
once; every number from a run's metrics or, in rows marked "published", :mod:`predcalc.report.anchors`."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd

from predcalc.paths import RUNS
from predcalc.record import ModelRecord, SeedRun
from predcalc.report.anchors import REFERENCE_LLM_ROWS, REFERENCE_ROWS
from predcalc.report.records import StoredRecord
from predcalc.report.scoreboard import RANKED
from predcalc.report.studies import shown_label
from predcalc.report.tables import markdown_table  # noqa: F401 (notebooks import it from here)
from predcalc.training import metrics as M
from predcalc.training.experiment import BASELINE


def load_runs(runs: Path = RUNS) -> list[StoredRecord]:
    """Every notebook's stored record in notebook order (not a hidden run still being written)."""
    return [
        StoredRecord.load(path) for path in sorted(runs.glob("*/metrics.json")) if not path.parent.name.startswith(".")
    ]


def typed(records) -> list[StoredRecord]:
    return [StoredRecord.of(record) for record in records]


def baseline_runs(records) -> list[dict] | None:
    for record in typed(records):
        if BASELINE in record.models:
            return [run.metrics for run in record.models[BASELINE].runs]
    return None


def _same_runs(a: list[SeedRun], b: list[SeedRun], rel: float = 1e-5) -> bool:
    if [r.seed for r in a] != [r.seed for r in b]:
        return False
    for x, y in zip(a, b):
        if set(x.metrics) != set(y.metrics):
            return False
        for test_set, metrics in x.metrics.items():
            for key, value in metrics.items():
                other = y.metrics[test_set].get(key)
                if not isinstance(value, (int, float)) or not isinstance(other, (int, float)):
                    if value != other:
                        return False
                elif not math.isclose(value, other, rel_tol=rel, abs_tol=1e-12):
                    return False
    return True


def unique_models(records) -> list[tuple[StoredRecord, str, ModelRecord, list[str]]]:
    """``(record, name, model, repeats)`` per trained model, once; a later equal run is a repeat."""
    out = []
    for record in typed(records):
        for name, model in record.models.items():  # a study record may train none
            earlier = next((entry for entry in out if entry[1] == name and _same_runs(entry[2].runs, model.runs)), None)
            if earlier is not None:
                earlier[3].append(record.notebook)
            else:
                model = dataclasses.replace(model, label=shown_label(name, model.label))  # a construction says so
                out.append((record, name, model, []))
    return out


def _source(record: StoredRecord, repeats: list[str], detail: str) -> str:
    again = f"; {', '.join(repeats)} reproduced it" if repeats else ""
    return f"{record.notebook} ({detail}{again})"


def _profile_of(record: StoredRecord, model: ModelRecord) -> str:
    def short(profile) -> str:  # "full with models=[...], ..." -> "full" (the parameters are in Runs)
        return str(profile).split(" with ")[0]

    if model.extra.get("kept_from"):
        kept = model.extra["kept_from"]
        return f"{short(kept.get('profile'))}, run of {(kept.get('created') or '')[:10]}"
    return short(record.profile)


def _mean(runs, test_set, metric):
    return float(np.mean([r.metrics[test_set][metric] for r in runs]))


def _mean_and_range(runs, test_set, metric, percent: bool = False) -> str:
    values = [r.metrics[test_set][metric] for r in runs]
    scale, unit = (100, " %") if percent else (1, "")
    text = f"{scale * np.mean(values):.2f}{unit}" if percent else f"{np.mean(values):.4g}"
    if len(values) < 2 or min(values) == max(values):
        return text
    low, high = scale * min(values), scale * max(values)
    return f"{text} [{low:.2f}-{high:.2f}]" if percent else f"{text} [{low:.3g}-{high:.3g}]"


def model_table(
    records, reference_runs: list[dict] | None = None, score: bool = False, ranges: bool = False
) -> pd.DataFrame:
    """One row per trained model (means over seeds, or ``ranges``), its published row beside it; ``score``: the benchmark."""
    reference_runs = baseline_runs(records) or reference_runs
    reference = M.mean_baseline(reference_runs) if reference_runs and score else None

    def cell(runs, test_set, metric, percent=False):
        return _mean_and_range(runs, test_set, metric, percent) if ranges else _mean(runs, test_set, metric)

    rows = []
    for record, _, model, repeats in unique_models(records):
        runs = model.runs
        seeds = f"{len(runs)} seed{'s' * (len(runs) > 1)}"
        row = {
            "model": model.label,
            "params": model.params,
            "source": _source(record, repeats, f"{_profile_of(record, model)}, {seeds}"),
        }
        for test_set in ("in", "out", "long"):
            row[f"MAE {test_set}"] = cell(runs, test_set, "mae")
            if test_set != "long":
                row[f"MRE {test_set}"] = cell(runs, test_set, "mre")
        row.update({f"acc {test_set}": cell(runs, test_set, "accuracy", True) for test_set in ("in", "out", "long")})
        if reference is not None:
            scores = [M.benchmark_score(r.metrics, reference) for r in runs]
            row["score"] = float(np.mean(scores))
            row["p"] = M.log_score_p_value(scores)
        row["epochs"] = float(np.mean([r.epochs for r in runs]))
        rows.append(row)
        published = REFERENCE_ROWS.get(model.reference_row or "")
        if published and not any(r["model"] == model.reference_row and r["source"] == "published" for r in rows):
            # only the columns the prior report defines as this table does; its signed "MAE long", its score
            # and p are in reference_way_table, beside the same quantities computed its way
            shown = {column: published[key] for column, key in RANKED}
            rows.append({"model": model.reference_row, "source": "published", "params": published["params"], **shown})
    columns = ["model", "source", "params", "MAE in", "MRE in", "MAE out", "MRE out", "MAE long"]
    columns += ["acc in", "acc out", "acc long", "score", "p", "epochs"]
    frame = pd.DataFrame(rows)
    return frame.reindex(columns=[c for c in columns if c in frame.columns])


def comparison_table(record, runs: Path = RUNS) -> pd.DataFrame:
    return model_table([record], reference_runs=baseline_runs(load_runs(runs)), score=True)


def export_table(records, test_sets=("in", "out", "long")) -> pd.DataFrame:
    exports = [(name, model.label, model.export) for record in typed(records) for name, model in record.models.items()]
    return export_frame(exports, test_sets)


def export_frame(exports, test_sets=("in", "out", "long")) -> pd.DataFrame:
    """One row per exported artifact of ``(name, label, export entry)``: size, parity and verdict."""
    rows, seen = [], set()
    for name, label, export in exports:
        if (name, label) in seen:  # a model a later notebook reproduced: its export is listed once
            continue
        seen.add((name, label))
        for fmt, info in (export or {}).items():
            if fmt == "saved_model":
                continue
            change = info.get("accuracy_change", {})
            rows.append(
                {
                    "model": shown_label(name, label),
                    "format": fmt,
                    "KB": info.get("bytes", math.nan) / 1024,
                    "TF Select": info.get("tf_select"),
                    "max abs diff": info.get("max_abs_diff"),
                    **{f"acc change {t}": change.get(t) for t in test_sets},
                    "verdict": info.get("verdict", ""),
                    "why": info.get("error", "") or (info.get("reason", "") if info.get("verdict") != "use" else ""),
                }
            )
    return pd.DataFrame(rows)


def llm_table(records) -> pd.DataFrame:
    rows = []
    for record in typed(records):
        entry = record.entries.get("llm")
        for model in ([entry] + ([entry["control"]] if entry.get("control") else [])) if entry else []:
            n, bad = model.get("n", {}), model.get("unparseable", {})
            rank, source = model.get("lora_rank"), f"{record.notebook} ({record.profile})"
            rows.append(
                {
                    "model": model["label"],
                    "source": source,
                    "pre-trained": model.get("pretrained"),
                    "params": model.get("params"),
                    "fine-tuning": f"LoRA rank {rank}" if rank else "all weights",
                    "trainable params": model.get("trainable_params"),
                    **{f"acc {t}": model["accuracy"].get(t) for t in ("in", "out", "long")},
                    "n in/out/long": " / ".join(f"{n[t]:,}" for t in ("in", "out", "long") if t in n),
                    "unparseable": " / ".join(str(bad[t]) for t in ("in", "out", "long") if t in bad),
                }
            )
    for name, published in REFERENCE_LLM_ROWS.items():
        rows.append(
            {
                "model": name,
                "source": "published",
                "pre-trained": True,
                "params": published["params"],
                **{f"acc {t}": published[f"accuracy_{t}"] for t in ("in", "out", "long")},
            }
        )
    return pd.DataFrame(rows)
