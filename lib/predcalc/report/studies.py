"""The studies' part of the findings: speed (21), time series (22), explanations (23) and the
extended suite (31, 32).

Each study notebook writes a ``metrics.json`` with ``"kind": "study"``, no trained models
of the protocol and one entry of its own (``speed``, ``timeseries``, ``explain``). This
module turns those entries into the findings' sections; every number comes from them.
"""

from __future__ import annotations

import math

import pandas as pd

from predcalc.models.registry import display_label
from predcalc.models.syntax_gated_scan import coefficient_summary
from predcalc.readable import percent_number, share
from predcalc.report.calculator import section
from predcalc.report.prose import count
from predcalc.report.records import StoredRecord
from predcalc.report.tables import markdown_table, plain_cell


def is_study(record: StoredRecord) -> bool:
    """A side study's record (its kind is stored, or named once by :class:`predcalc.record.RunRecord`)."""
    return record.kind == "study"


def _ratio(value) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.2f}x"


def speed_table(entry: dict) -> pd.DataFrame:
    """Per length: min* parallel (last state), whole-sequence scan and step paths over their Keras
    counterpart, per phase."""
    rows = {}
    for r in entry["speedups"]:
        row = rows.setdefault(r["length"], {"length": r["length"]})
        family = "minGRU / GRU" if r["family"] == "min_gru" else "minLSTM / LSTM"
        phase = "train" if r["phase"] == "train_step" else "infer"
        for path in ("parallel", "scan", "step"):
            if f"{path}_vs_keras" in r:  # runs stored before the scan path was timed have no scan column
                row[f"{phase} {family} {path}"] = _ratio(r[f"{path}_vs_keras"])
    return pd.DataFrame([rows[length] for length in sorted(rows)])


def seed_values(entry: dict) -> dict[tuple[str, str], dict[str, list[float]]]:
    """``{(series, model label): {"mae": [...], "rmse": [...]}}`` per seed, from the stored runs."""
    from predcalc.studies.timeseries import MODELS  # the display names the summary uses

    out: dict = {}
    for run in entry.get("runs") or []:
        key = (run["series"], MODELS.get(run["model"], run["model"]))
        found = out.setdefault(key, {"mae": [], "rmse": []})
        found["mae"].append(run["mae"])
        found["rmse"].append(run["rmse"])
    return out


def _with_range(mean: float, values: list[float] | None) -> str:
    if not values or len(values) < 2:
        return f"{mean:.3f}"
    return f"{mean:.3f} [{min(values):.3f}-{max(values):.3f}]"


def timeseries_table(entry: dict) -> pd.DataFrame:
    """Networks and baselines per series: test MAE and RMSE, mean over seeds [lowest-highest seed]."""
    rows, maes = [], []  # maes: each row's MAE as a number, to sort by
    naive = entry["naive"]
    per_seed = seed_values(entry)
    for r in entry["summary"]:
        seeds = per_seed.get((r["series"], r["model"]), {})
        rows.append(
            {
                "series": r["series"],
                "model": r["model"],
                "params": r.get("params"),
                "MAE": _with_range(r["MAE"], seeds.get("mae")),
                "RMSE": _with_range(r["RMSE"], seeds.get("rmse")),
                "MAE / naive": f"{r['MAE'] / naive[r['series']]['mae']:.2f}",
                "epochs": f"{r.get('epochs', math.nan):.0f}",
            }
        )
        maes.append(r["MAE"])
    baselines = entry.get("baselines") or {series: {"naive (last value)": m} for series, m in naive.items()}
    for series, named in baselines.items():
        for label, metrics in named.items():
            rows.append(
                {
                    "series": series,
                    "model": f"baseline: {label}",
                    "params": 0,
                    "MAE": f"{metrics['mae']:.3f}",
                    "RMSE": f"{metrics['rmse']:.3f}",
                    "MAE / naive": f"{metrics['mae'] / naive[series]['mae']:.2f}",
                    "epochs": "",
                }
            )
            maes.append(metrics["mae"])
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["series"], maes[i]))  # by series, then MAE
    return pd.DataFrame([rows[i] for i in order])


def _table(frame: pd.DataFrame) -> str:
    return markdown_table(frame, cell=plain_cell, empty="")


def _opening(title: str, record: StoredRecord, intro: str, table: pd.DataFrame) -> list[str]:
    """A study's heading (with its notebook and profile), its introduction and its table."""
    return [f"### {title} ({record.notebook}, {record.profile})", "", intro, "", _table(table), ""]


SPEED_PATHS = {
    "parallel": "parallel path of a layer returning its last state",
    "scan": "parallel scan of the whole sequence",
}


def _speed_section(record: StoredRecord, folder: str) -> list[str]:
    entry, parameters = record.entries["speed"], record.parameters
    lengths = sorted({r["length"] for r in entry["speedups"]})
    paper = entry.get("paper_speedup_t4_gpu", {})
    scanned = any("scan_vs_keras" in r for r in entry["speedups"])
    lines = _opening(
        "Parallel scan vs step loop vs Keras",
        record,
        f"Median seconds of a training step and of inference, batch {parameters.get('batch')}, "
        f"{parameters.get('units')} units, lengths {lengths[0]} to {lengths[-1]}, {parameters.get('repeats')} "
        f"interleaved repeats, on this project's 2-core CPU ({record.backend} backend). Each cell is the "
        "Keras layer's time over the min* layer's (above 1: the min* layer is faster)."
        + (
            " Paths: *parallel*, the layer as the model uses it (it returns its last state, which the "
            "parallel path computes as one log-sum-exp reduction, no scan); *scan*, the log-space "
            "parallel scan of the whole sequence (what a layer feeding another one computes), its "
            "last step taken; *step*, the step loop."
            if scanned
            else ""
        ),
        speed_table(entry),
    )
    best = []
    for path, what in SPEED_PATHS.items():
        train = [r for r in entry["speedups"] if r["phase"] == "train_step" and r.get(f"{path}_vs_keras")]
        if train:
            top = max(train, key=lambda r: r[f"{path}_vs_keras"])
            best.append(f"**{top[f'{path}_vs_keras']:.2f}x** ({top['family']}, {what}, length {top['length']})")
    if best:
        lines.append(
            "Best training-step speed-up over Keras here: "
            + "; ".join(best)
            + ". The paper reports "
            + ", ".join(f"{family} {', '.join(f'{v}x at {k}' for k, v in d.items())}" for family, d in paper.items())
            + " on a T4 GPU. A parallel scan needs parallel hardware; two CPU cores have none to spare."
        )
    lines += ["", f"![speed]({folder}/speed.png)", ""]
    return lines


def _timeseries_section(record: StoredRecord, folder: str) -> list[str]:
    entry, parameters = record.entries["timeseries"], record.parameters
    lines = _opening(
        "One-step-ahead forecasting of real series",
        record,
        f"Sunspots (yearly) and Mauna Loa CO2 (monthly) from statsmodels, chronological 70/15/15 split, the "
        f"past {parameters.get('k')} values in, {count(len(parameters.get('seeds', [])), 'seed')} each, at most "
        f"{parameters.get('epochs')} epochs with early stopping (patience {parameters.get('patience')}). "
        "Mean over seeds [lowest-highest seed], test segment, in the series' units. A network beats a baseline "
        "only where every seed's MAE is below the baseline's; otherwise the difference is not resolved.",
        timeseries_table(entry),
    )
    if parameters.get("target"):
        lines += [
            f"The networks forecast the **{parameters['target']}** of the series"
            + (
                " (the next value minus the last, scaled on the training changes; the level forecast is the "
                "last value plus it)"
                if parameters["target"] == "change"
                else ""
            )
            + ".",
            "",
        ]
    for series, metrics in entry["naive"].items():
        rows = [r for r in entry["summary"] if r["series"] == series]
        named = (entry.get("baselines") or {}).get(series, {"naive (last value)": metrics})
        strongest = min(named.items(), key=lambda item: item[1]["mae"])
        per_seed = seed_values(entry)
        beat = [
            r["model"]
            for r in rows
            if max(per_seed.get((series, r["model"]), {}).get("mae") or [r["MAE"]]) < strongest[1]["mae"]
        ]
        best = min(rows, key=lambda r: r["MAE"]) if rows else None
        if best:
            lines.append(
                f"- {series}: best network {best['model']} (MAE {best['MAE']:.3f}, "
                f"{best['MAE'] / metrics['mae']:.2f}x the naive forecast); the strongest baseline is "
                f"{strongest[0]} (MAE {strongest[1]['mae']:.3f}); {len(beat)} of {len(rows)} networks beat "
                "every baseline on every seed"
                + (
                    f" ({', '.join(beat)})."
                    if beat
                    else ": the networks do not beat it here (see the notebook's conclusion)."
                )
            )
    lines += ["", f"![forecasts]({folder}/forecasts.png)", ""]
    return lines


def _explain_section(record: StoredRecord, folder: str, figures) -> list[str]:
    entry = record.entries["explain"]
    ig = entry["integrated_gradients"]
    quality = {row["model"]: row for row in entry.get("quality", [])}
    rows = []
    for name, s in ig.items():
        label = {"lstm": "LSTM", "gru": "GRU", "bilstm_attention": "BiLSTM + attention", "min_gru": "minGRU"}.get(
            name, name
        )
        q = quality.get(label, {})
        rows.append(
            {
                "model": label,
                "epochs": q.get("epochs", ""),
                "MAE in": f"{q['MAE in']:.3f}" if "MAE in" in q else "",
                "IG share numbers": share(s["share_numbers"], 0),
                "IG share operators": share(s["share_operators"], 0),
                "r(IG b, op·b)": f"{s['corr_b']:.2f}",
                "r(IG c, op·c)": f"{s['corr_c']:.2f}",
                "completeness gap": f"{s['completeness_max_gap']:.2g}",
            }
        )
    lines = _opening(
        "Explanations",
        record,
        "Integrated gradients from an all-padding input over in-range test expressions: the share of the "
        "attribution mass on numbers and operators, and whether the attribution of b and c follows the "
        "signed term they contribute (a model that applies the operator gives r near 1).",
        pd.DataFrame(rows),
    )
    attention = entry.get("attention") or {}
    if attention:
        lines.append(
            f"- BiLSTM attention: {share(attention['mass_expression'], 0)} of the weight on the five "
            f"expression tokens, {share(attention['mass_padding'], 0)} on the ten pads (uniform: 33 / 67 %)."
        )
    for model, r in (entry.get("state_retention_over_padding") or {}).items():
        lines.append(
            f"- {model}: the gates keep {r['median_unit']:.2g} (median unit) and {r['max_unit']:.2g} "
            "(best unit) of the state after the expression across the ten pads."
        )
    lines += [""] + [f"![{name}]({folder}/{name})" for name in figures] + [""]
    return lines


def _mean_range(values: list[float]) -> str:
    """ "mean % [min-max]" of shares over seeds (the range left out for one seed or equal seeds)."""
    mean, low, high = sum(values) / len(values), min(values), max(values)
    if low == high:
        return share(mean, 1)
    return f"{share(mean, 1)} [{percent_number(low, 1)}-{percent_number(high, 1)}]"


def extended_table(entry: dict) -> pd.DataFrame:
    """Exact accuracy per family (rows) and model (columns), mean over seeds [per-seed min-max]."""
    frame = {}
    for model in entry["models"].values():
        runs = model["runs"]
        frame[f"{model['label']} ({len(runs)} seed{'s' * (len(runs) != 1)})"] = [
            _mean_range([r["metrics"][f]["accuracy"] for r in runs]) for f in entry["families"]
        ]
    return pd.DataFrame({"family": entry["families"], **frame})


# The scan's closed-form finishes (models/syntax_gated_scan.py: the models whose ModelSpec has a
# ``finish``) and what each sets by hand or solves: partly built, so the answer never names them as a
# trained result (a test keeps this in step with the registry).
FINISHES = {
    "scan_typed_solved": "operators overwrite the sign state and the readout is solved by least squares",
    "scan_typed_readout_solved": "only the readout is solved, the operator gates stay as fitted",
}


def shown_label(name: str, label: str) -> str:
    """A model's label as the report shows it: a closed-form finish is marked partly built, and
    "seed" keeps its one meaning, a random seed (the prior report is named as such)."""
    return display_label(label, partly_built=name in FINISHES)


def extended_best(entry: dict, built: bool = False) -> dict | None:
    """The model of an extended-suite study with the highest exact accuracy averaged over its families:
    its label, parameters, seeds, that mean, its accuracy per family (mean over seeds), the families it
    gets at least 99 % right and its worst family. Trained models only, or with ``built`` only the
    partly built ones (:data:`FINISHES`); None where there is none. ``entry``: the study's
    ``"extended"`` entry."""
    best = None
    for name, model in entry["models"].items():
        if (name in FINISHES) != built:
            continue
        runs = model["runs"]
        by_family = {f: sum(r["metrics"][f]["accuracy"] for r in runs) / len(runs) for f in entry["families"]}
        mean = sum(by_family.values()) / len(by_family)
        if best is None or mean > best["mean"]:
            worst = min(by_family, key=by_family.get)
            best = {
                "name": name,
                "label": shown_label(name, model["label"]),
                "params": model["params"],
                "seeds": len(runs),
                "mean": mean,
                "by_family": by_family,
                "exact": [f for f, a in by_family.items() if a >= 0.99],
                "worst": (worst, by_family[worst]),
                "per_seed": [
                    sum(r["metrics"][f]["accuracy"] for f in entry["families"]) / len(by_family) for r in runs
                ],
                "worst_seeds": [r["metrics"][worst]["accuracy"] for r in runs],
            }
    return best


def _scope(record: StoredRecord) -> dict:
    default = {"trained_on": "protocol", "operators": "+-", "parentheses": False}
    return record.entries["extended"].get("scope", default)


def extended_title(record: StoredRecord) -> str:
    """ "The extended suite, additive part" (trained on the protocol) or "..., all four operators"."""
    if _scope(record).get("trained_on") == "extended suite":
        return "The extended suite, all four operators and parentheses"
    return "The extended suite, additive part"


def _extended_section(record: StoredRecord, folder: str) -> list[str]:
    entry, parameters = record.entries["extended"], record.parameters
    scope, title = _scope(record), extended_title(record)
    if scope.get("trained_on") == "extended suite":
        intro = (
            "Trained on the extended suite's training distribution "
            f"({parameters.get('train_size', 0):,} expressions: 1-2 digit numbers, 2-4 terms, `{scope['operators']}` "
            "with precedence, nesting depth 0-1), scored on held-out expressions of it (`iid`) and on its "
            f"difficulty families ({parameters.get('test_size')} expressions each, suite seed "
            f"{parameters.get('suite_seed')}): numbers of exactly d digits (3 terms), n terms, nesting depth k. "
            "Exact accuracy of the decoded answer, mean over seeds."
        )
    else:
        intro = (
            "Trained on the protocol only (three numbers from -5..4), scored on the extended suite's "
            f"`+`/`-` families ({parameters.get('test_size')} expressions each, suite seed "
            f"{parameters.get('suite_seed')}): numbers of exactly d digits (3 terms) and n terms of 1-2 digit "
            "numbers. Exact accuracy, mean over seeds. `*`, `/` and parentheses are not covered: the typed "
            "tokens these models read cannot encode them."
        )
        if "scan_typed_solved" in entry["models"]:
            intro += (
                " The solved scan is the fitted scan finished in closed form: the update gate is set to 1 on "
                "`+` and `-` (operators overwrite the sign state, so a number's coefficient depends only on "
                "the operator before it), then the readout is solved by least squares on the prior report's training "
                "split; its ablation solves the readout with the operator gates as fitted."
            )
    lines = _opening(title, record, intro, extended_table(entry))
    for model in entry["models"].values():
        runs = model["runs"]
        mre = {
            f: sum(r["metrics"][f]["mre"] for r in runs) / len(runs)
            for f in ("digits_1", "digits_6")
            if f in runs[0]["metrics"]
        }
        if len(mre) == 2:
            lines.append(
                f"- {model['label']} ({model['params']:,} parameters): mean relative error "
                f"{mre['digits_1']:.2g} with 1-digit numbers, {mre['digits_6']:.2g} with 6-digit numbers."
            )
    lines += _coefficient_lines(entry)
    lines += _control_lines(entry)
    lines += (
        [""]
        + [
            f"![{name}]({folder}/{name})"
            for name in ("accuracy_by_difficulty.png", "error_kinds.png")
            if record.folder is None or (record.folder / name).exists()
        ]
        + [""]
    )
    return lines


def _coefficient_lines(entry: dict) -> list[str]:
    """The first seed's learned coefficients where the study read them (a model affine in the numbers)."""
    lines = []
    for name, rows in (entry.get("coefficients") or {}).items():
        summary = coefficient_summary(rows)
        label = entry["models"].get(name, {}).get("label", name)
        if summary["nonlinearity"] > 1e-2:
            lines.append(
                f"- {label}, first seed: not affine in the numbers (nonlinearity {summary['nonlinearity']:.3g} "
                "at 1000), so it has no coefficients to read."
            )
        else:
            settled = summary["settled"]
            lines.append(
                f"- {label}, first seed: prediction = bias + sum of coefficient x number; at position "
                f"{summary['position']} the coefficient after `+` is off by {settled.get('+', 0.0):+.1e}, "
                f"after `-` by {settled.get('-', 0.0):+.1e}, so answers stop being exact once the numbers "
                f"reach about {summary['exact_below']:,.0f}"
                + (
                    ": errors at float32's own precision (2^-23, about 1.2e-7), the limit of a float32 model."
                    if summary["exact_below"] > 1e6
                    else "."
                )
            )
    return [""] + lines if lines else []


def _control_lines(entry: dict) -> list[str]:
    """The control of 31: the solved scan finished after a few epochs of fitting instead of a full fit."""
    control = entry.get("control") or {}
    if not control.get("accuracy"):
        return []
    accuracy, worst = control["accuracy"], control.get("worst_seed", control["accuracy"])
    label = entry["models"].get("scan_typed_solved", {}).get("label", "scan_typed_solved")
    lowest = min(worst, key=worst.get)
    return [
        "",
        f"- Control: {label} fitted for {control['epochs']} epoch(s) only, then finished the same way "
        f"({control['seeds']} seeds): mean exact accuracy {share(sum(accuracy.values()) / len(accuracy), 1)} "
        f"over the {len(accuracy)} families; worst seed on its worst family ({lowest}) "
        f"{share(worst[lowest], 1)}.",
    ]


def _explain(record: StoredRecord, folder: str) -> list[str]:
    return _explain_section(record, folder, sorted(p.name for p in record.folder.glob("*.png")))


def _calculator(record: StoredRecord, folder: str) -> list[str]:
    return section(record.to_json(), folder)  # the calculator study's stored payload, which its templates read


# The section that renders each study (a study record's kind, :attr:`predcalc.record.RunRecord.study`);
# a study with none here (the vanishing gradients') is linked from the Runs list only.
SECTIONS = {
    "speed": _speed_section,
    "timeseries": _timeseries_section,
    "explain": _explain,
    "extended": _extended_section,
    "calculator": _calculator,
}


def studies_markdown(records: list[StoredRecord], relative_dirs: dict) -> list[str]:
    """The findings' "Studies" section; ``relative_dirs`` maps a notebook to its folder from the report."""
    studies = [r for r in records if is_study(r)]
    if not studies:
        return []
    lines = ["## Studies", ""]
    for record in studies:
        render = SECTIONS.get(record.study)
        if render is not None:
            lines += render(record, relative_dirs[record.notebook])
    return lines
