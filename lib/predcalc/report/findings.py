"""``predcalc report``: the findings, rebuilt from the stored metrics only.

Reads every ``reports/runs/*/metrics.json`` (and the sweeps and edge suites), builds the findings
as data (:mod:`predcalc.report.paper`, a :class:`~predcalc.report.document.Document`) and renders
``reports/findings.md``, its HTML, the figures in ``reports/figures/`` and the README's first-look
sentence (between the ``first-look:start``/``first-look:end`` markers). No number is typed by hand: each comes from a run's metrics, or,
in the rows marked "published", from :mod:`predcalc.report.anchors`. This module holds the
tables the document is made of.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from predcalc.data.protocol import protocol_record
from predcalc.paths import REPORTS, ROOT, RUNS, write_if_changed, write_json_if_changed
from predcalc.record import ModelRecord, SeedRun
from predcalc.report import first_look, render
from predcalc.report.anchors import REFERENCE_LLM_ROWS, REFERENCE_ROWS
from predcalc.report.prose import count
from predcalc.report.records import StoredRecord
from predcalc.report.studies import FINISHES, shown_label
from predcalc.report.tables import markdown_table  # noqa: F401 (notebooks import it from here)
from predcalc.training import metrics as M
from predcalc.training.experiment import BASELINE


def load_runs(runs: Path = RUNS) -> list[StoredRecord]:
    """Every notebook's stored record, typed, in notebook order (not a run still being written, whose
    folder is hidden: ``.<notebook>.*.partial``)."""
    return [
        StoredRecord.load(path) for path in sorted(runs.glob("*/metrics.json")) if not path.parent.name.startswith(".")
    ]


def typed(records) -> list[StoredRecord]:
    """``records`` as stored records: a notebook passes its own record in its JSON form."""
    return [StoredRecord.of(record) for record in records]


def baseline_runs(records) -> list[dict] | None:
    """The baseline FNN's per-seed metrics (from the notebook that trained it)."""
    for record in typed(records):
        if BASELINE in record.models:
            return [run.metrics for run in record.models[BASELINE].runs]
    return None


def _same_runs(a: list[SeedRun], b: list[SeedRun], rel: float = 1e-5) -> bool:
    """Same seeds and every metric equal to ``rel`` (float32 predictions may differ in the last bits)."""
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
    """``(record, name, model, repeats)`` for every trained model, once: a model that a later
    notebook trained again with the same per-seed metrics (same data, seeds and code: a
    reproduction, equal to 5 significant digits) is listed under the first notebook, with the
    later ones in ``repeats``."""
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
    """The profile a model's runs came from: the record's, or the earlier run's for a kept model."""

    def short(profile) -> str:  # "full with models=[...], ..." -> "full" (the parameters are in Runs)
        return str(profile).split(" with ")[0]

    if model.extra.get("kept_from"):
        kept = model.extra["kept_from"]
        return f"{short(kept.get('profile'))}, run of {(kept.get('created') or '')[:10]}"
    return short(record.profile)


def _mean(runs, test_set, metric):
    return float(np.mean([r.metrics[test_set][metric] for r in runs]))


def _mean_and_range(runs, test_set, metric, percent: bool = False) -> str:
    """ "mean [min-max]" over seeds (accuracies in %), one value alone for one seed or equal seeds."""
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
    """One row per trained model (means over seeds), with its published row beside it.

    With ``ranges``, each metric is written "mean [min-max]" over seeds (text, for the findings).
    With ``score``, the prior report's benchmark score and its p-value are added (a notebook's
    own comparison shows them; the findings keep them to the reference-way table, as the prior
    report's definitions). The score needs the baseline FNN's runs: taken from ``records`` when
    one of them trained it, else from ``reference_runs``; without either it is left out.
    """
    reference_runs = baseline_runs(records) or reference_runs
    reference = M.mean_baseline(reference_runs) if reference_runs and score else None
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
            row[f"MAE {test_set}"] = _mean_and_range(runs, test_set, "mae") if ranges else _mean(runs, test_set, "mae")
            if test_set != "long":
                row[f"MRE {test_set}"] = (
                    _mean_and_range(runs, test_set, "mre") if ranges else _mean(runs, test_set, "mre")
                )
        for test_set in ("in", "out", "long"):
            row[f"acc {test_set}"] = (
                _mean_and_range(runs, test_set, "accuracy", percent=True)
                if ranges
                else _mean(runs, test_set, "accuracy")
            )
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
            rows.append(
                {
                    "model": model.reference_row,
                    "source": "published",
                    "params": published["params"],
                    "MAE in": published["mae_in"],
                    "MRE in": published["mre_in"],
                    "MAE out": published["mae_out"],
                    "MRE out": published["mre_out"],
                }
            )
    columns = [
        "model",
        "source",
        "params",
        "MAE in",
        "MRE in",
        "MAE out",
        "MRE out",
        "MAE long",
        "acc in",
        "acc out",
        "acc long",
        "score",
        "p",
        "epochs",
    ]
    frame = pd.DataFrame(rows)
    return frame.reindex(columns=[c for c in columns if c in frame.columns])


def reference_way_table(records) -> pd.DataFrame:
    """The prior report's published columns computed the prior report's way (``metrics.reference_way``), one row per
    model whose runs stored the prior report's signed error and MRE, its published row beside it.

    Like for like with the prior report's published rows: MAE out and MRE out over all 2,048 out-of-range expressions,
    the prior report's MRE (divide by |truth|), the signed "MAE long" mean(|y| - prediction) over all 700
    long expressions and the prior report's score (signed long4 term); its t-test of log(score) is left out.
    """
    base_runs = baseline_runs(records)
    if not base_runs or not all(M.has_reference_way(r) for r in base_runs):
        return pd.DataFrame()
    baseline = M.reference_baseline(base_runs)
    rows = []
    for record, _, model, repeats in unique_models(records):
        runs = [r.metrics for r in model.runs]
        if not runs or not all(M.has_reference_way(r) for r in runs):
            continue
        seeds = f"{len(runs)} seed{'s' * (len(runs) > 1)}"
        published = REFERENCE_ROWS.get(model.reference_row or "")
        long = (published or {}).get("long", "signed")
        rows.append(
            {
                "model": model.label,
                "source": _source(record, repeats, f"{_profile_of(record, model)}, {seeds}"),
                **M.reference_way(runs, baseline, long),
                "long": long,
            }
        )
        if published and not any(r["model"] == model.reference_row and r["source"] == "published" for r in rows):
            rows.append(
                {
                    "model": model.reference_row,
                    "source": "published",
                    "MAE in": published["mae_in"],
                    "MRE in": published["mre_in"],
                    "MAE out": published["mae_out"],
                    "MRE out": published["mre_out"],
                    "MAE long": published["mae_long"],
                    "long": long,
                    "score": published["score"],
                }
            )
    frame = pd.DataFrame(rows)
    columns = ["model", "source", "MAE in", "MRE in", "MAE out", "MRE out", "MAE long", "long", "score"]
    return frame.reindex(columns=[c for c in columns if c in frame.columns])


REFERENCE_WAY_TEXT = (
    "The table above uses this project's definitions (MAE long an absolute error, MRE divided by "
    "max(|y|, 1), out-of-range score terms on out22). The prior report's notebooks compute its published "
    "columns differently, so the table below recomputes them the prior report's way from the same runs (the "
    "file names in this paragraph are the prior report's published code, its notebooks exported as Python "
    "scripts, which this project was given as its seed; they are not files of this repository): MAE "
    "and MRE out over all 2,048 out-of-range expressions, MRE divided by |y| (0 by 1), and **MAE long "
    "over the 700 long expressions as the code behind each published row defines it** (column "
    '"long"): *signed*, mean(|y| - prediction), in the prior report\'s `FNN_FNN2.py` (not an error: it can be '
    "negative or near 0 for a bad model), and *absolute*, the per-run mean of |y - prediction|, in the "
    "per-run cell of its transformer notebooks (`transformer_transformer4.py`). The prior report's score (its long4 term defined the same way, its relative term the reference MRE over "
    "all out) is taken against the baseline FNN's runs the "
    "way the prior report's `FNN1_1.py` takes them; the prior report's t-test of log(score) against 0 is "
    "not computed here (an unbounded ratio). Only "
    'these columns compare like for like with a "published" row; runs stored before the '
    "prior report's columns were recorded are not listed. The score's baseline here is this project's baseline FNN runs; "
    "the prior report's baseline came from its own `FNN1_1.py` runs, so scores compare only within a table."
)


def reference_weights_lines(records: list[StoredRecord]) -> list[str]:
    """What the prior report's own FNN2 weights score on the prior report's own in-range test set (the
    record that stores ``reference_weights_check.json``)."""
    for record in records:
        path = Path(record.folder) / "reference_weights_check.json"
        if path.is_file() and "fnn2_reference_weights" in record.models:
            check = json.loads(path.read_text())
            ours = record.models["fnn2_reference_weights"].runs[0].metrics["in"]["mae"]
            return [
                f"The prior report's own FNN2 weights (its `FNN2_weights.weights.h5`, one trained model, scored here) reach "
                f"in-range MAE {ours:.4f} on this project's in-range test set, of which "
                f"{check['project_in_test_in_reference_draw']:,} of {check['project_in_test']:,} expressions were in "
                f"the prior report's own training draw, and {check['reference_in_test']['mae']:.4f} on the prior report's own in-range "
                f"test set ({check['reference_in_test']['n']:,} expressions, replayed from the prior report's `GetXY.py`, "
                "its published data split, not a file of this repository); the published "
                "0.0269 is a mean over 5 runs that its shipped weights do not reach on its own test set.",
                "",
            ]
    return []


STABILISED = (("mlstm", "mlstm_stable"), ("mamba", "mamba_bounded"))  # (as published in 09/10, stabilised)


def stability_table(records, pairs=STABILISED) -> pd.DataFrame:
    """Each seed of the layers that failed on some seeds beside their stabilised version: exact
    accuracy in range and MAE out of range per seed (in seed order), and the worst seed's; empty
    unless a stabilised model was trained."""
    found = {name: (record, model) for record, name, model, _ in unique_models(records)}
    if not any(stable in found for _, stable in pairs):
        return pd.DataFrame()
    rows = []
    for pair in pairs:
        for name in pair:
            if name not in found:
                continue
            record, model = found[name]
            runs = sorted(model.runs, key=lambda r: r.seed)
            exact = [100 * r.metrics["in"]["accuracy"] for r in runs]
            out = [r.metrics["out"]["mae"] for r in runs]
            rows.append(
                {
                    "model": model.label,
                    "source": _source(record, [], _profile_of(record, model)),
                    "seeds": " ".join(str(r.seed) for r in runs),
                    "exact in per seed (%)": " / ".join(f"{v:.1f}" for v in exact),
                    "worst exact in": f"{min(exact):.1f} %",
                    "MAE out per seed": " / ".join(f"{v:.3g}" for v in out),
                    "worst MAE out": max(out),
                }
            )
    return pd.DataFrame(rows)


STABILITY_TEXT = (
    "Two layers of the library failed on some seeds in their first full runs: mLSTM (some seeds stop "
    "learning early) and Mamba (its state grows without bound on numbers outside the training range). "
    "`mlstm_stable` adds the xLSTM paper's gate initialisation and per-head normalisation to the max-state "
    "stabiliser; `mamba_bounded` uses the exact zero-order hold and RMS-normalised B and C, which keep the "
    "state a convex combination of bounded terms however large the input. Same protocol, seeds and "
    "training settings as the first runs; every seed is listed."
)


def comparison_table(record, runs: Path = RUNS) -> pd.DataFrame:
    """A notebook's own table, scored against the stored baseline if it did not train one."""
    return model_table([record], reference_runs=baseline_runs(load_runs(runs)), score=True)


def seed_range(values) -> str:
    """Per-seed spread of accuracies as "min-max %" ("all n" when every seed agrees; "" for one seed)."""
    values = [100 * v for v in values]
    if len(values) < 2:
        return ""
    low, high = min(values), max(values)
    return f"all {len(values)}" if low == high else f"{low:.1f}-{high:.1f} %"


def generalisation_table(records) -> pd.DataFrame:
    """Exact accuracy per test set (mean over seeds) with the per-seed minimum and maximum, best
    first (ties: fewer parameters, then less training time)."""
    rows = []
    for record, name, model, repeats in unique_models(records):
        runs = model.runs
        row = {
            "name": name,
            "model": model.label,
            "source": _source(record, repeats, f"{len(runs)} seeds"),
            "params": model.params,
        }
        for test_set in ("in", "out", "long"):
            values = [r.metrics[test_set]["accuracy"] for r in runs]
            row[f"acc {test_set}"] = float(np.mean(values))
            row[f"seeds {test_set}"] = seed_range(values)
        row["train s (max)"] = max(math.nan if r.train_seconds is None else r.train_seconds for r in runs)
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    return frame.sort_values(
        ["acc out", "acc long", "acc in", "params", "train s (max)"], ascending=[False, False, False, True, True]
    ).reset_index(drop=True)


# What each ablation of the syntax-gated scan removes (the typed scan's notebook); the numbers come from the runs.
ABLATIONS = {
    "scan_typed_value_gates": "the gates also read the token's value, so the sign state can depend on the numbers",
    "scan_numeric": "the prior report's numeric tokens, where `+`/`-` are the numbers 1.0/0.0 and only position tells them "
    "apart",
    "scan_typed_additive": "the state is concatenated with the value instead of multiplying it",
    "lstm_typed": "a Keras LSTM(32) reads the same typed tokens",
}


def _exact_in_out_long(model: ModelRecord) -> str:
    """'in / out / long' mean exact accuracy over the model's seeds, in percent to one decimal, each with
    its per-seed [min-max] where the seeds differ."""
    parts = []
    for test_set in ("in", "out", "long"):
        values = [100 * r.metrics[test_set]["accuracy"] for r in model.runs]
        spread = f" [{min(values):.1f}-{max(values):.1f}]" if len(values) > 1 and min(values) != max(values) else ""
        parts.append(f"{np.mean(values):.1f}{spread}")
    return " / ".join(parts)


def ablation_lines(records, reference: str = "scan_typed") -> list[str]:
    """Why the best model generalises: each ablation's exact accuracy beside the full model's."""
    for record in typed(records):
        models = record.models
        if reference not in models:
            continue
        full = models[reference]
        lines = [
            f"Why: the ablations of **{full.label}** ({record.notebook}, {count(len(full.runs), 'seed')}; exact "
            f"accuracy in / out / long, the full model {_exact_in_out_long(full)} %) each remove one design "
            "choice:",
            "",
        ]
        for name, change in ABLATIONS.items():
            if name in models:
                lines.append(f"- {change}: {_exact_in_out_long(models[name])} % ({models[name].params:,} parameters).")
        lines += _finish_lines(models, reference)
        lines += [
            "",
            "The sign of the next number is syntax, not arithmetic: a linear recurrence that reads only the "
            "token types carries it exactly over any length, and the value enters once, multiplied by that "
            "state, so the output is a signed sum whatever the numbers, up to the precision of the learned "
            "coefficients. Each ablation breaks one of the two, and out of range is where it shows. The "
            "extended-suite study below measures how far the fitted coefficients carry (their error comes "
            "from operator gates that leak the history into the sign state), and how far a closed-form "
            "finish carries them: operators overwrite the state, and the readout is solved by least "
            "squares.",
            "",
        ]
        return lines
    return []


def _finish_lines(models: dict[str, ModelRecord], reference: str) -> list[str]:
    """The scan's closed-form finishes beside the fitted scan: exact accuracy and the mean absolute error out of
    range, which a finish can shrink while exact accuracy is already 100 %."""

    def mae(name):
        return _mean(models[name].runs, "out", "mae")

    present = [name for name in FINISHES if name in models]
    if not present:
        return []
    lines = [
        "",
        f"Finished in closed form after the same training (exact in / out / long, and the mean absolute "
        f"error out of range, {mae(reference):.3g} for the fitted scan):",
        "",
    ]
    for name in present:
        lines.append(f"- {FINISHES[name]}: {_exact_in_out_long(models[name])} %, MAE out {mae(name):.3g}.")
    return lines


def export_table(records, test_sets=("in", "out", "long")) -> pd.DataFrame:
    """One row per exported artifact of the records' models (:func:`export_frame`)."""
    exports = [(name, model.label, model.export) for record in typed(records) for name, model in record.models.items()]
    return export_frame(exports, test_sets)


def export_frame(exports, test_sets=("in", "out", "long")) -> pd.DataFrame:
    """One row per exported artifact of ``exports`` (``(name, label, export entry)`` per model): size,
    TF Select, largest difference from Keras, the change of exact accuracy on each of ``test_sets``,
    and its verdict (use / unsuitable, and why)."""
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
    """Fine-tuned language models (a notebook's ``"llm"`` entry) beside the prior report's LLM rows.

    The "pre-trained" column tells a tiny model trained from random weights here (a pipeline
    check) from a pre-trained Gemma; the prior report's rows are its published single runs.
    """
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


def update_readme(block: str, readme: Path, start: str, end: str) -> bool:
    """Replace the README's block between the markers ``start`` and ``end``; False if they are missing."""
    if not readme.is_file():
        return False
    text = readme.read_text()
    if start not in text or end not in text:
        return False
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    write_if_changed(readme, f"{head}{start}\n{block}\n{end}{tail}")
    return True


def build(runs: Path = RUNS, reports: Path = REPORTS, readme: Path | None = ROOT / "README.md") -> dict:
    """Rebuild the findings from stored metrics: ``findings.md`` and ``findings.html`` in ``reports``
    and the README's first-look sentence (``readme=None``: leave the README alone, as a quick run's
    page in build/ does). Returns the paths written and the document's size."""
    # paper builds the document from this module's tables: imported here, not at the top, to avoid a cycle
    from predcalc.report.paper import build_document

    doc = build_document(runs, reports, figures=True)
    reports = Path(reports)
    reports.mkdir(parents=True, exist_ok=True)
    text = render.markdown(doc, reports)
    write_if_changed(reports / "findings.md", text)
    write_if_changed(reports / "findings.html", render.html(text))
    write_json_if_changed(reports / "protocol.json", protocol_record())
    figure = reports / "figures" / "reach.png"
    return {
        "findings": reports / "findings.md",
        "html": reports / "findings.html",
        "figure": figure if figure.is_file() else None,
        "document": doc,
        "first_look": (
            update_readme(first_look.sentence(first_look.read()), readme, first_look.START, first_look.END)
            if readme is not None
            else False
        ),
        "models": doc.facts["table_rows"],
    }
