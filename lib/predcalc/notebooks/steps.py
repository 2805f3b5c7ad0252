"""The steps every model notebook shares (01-10, 30-32): the output folder, the data summary,
the comparison and export tables, the metrics file and the one-line summaries of a model and
its exports. Each ``show_*`` displays its table (IPython) and returns it."""

from __future__ import annotations

from pathlib import Path

import keras
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from predcalc.data import NumericTokenizer, TypedTokenizer
from predcalc.deploy.export import export_results
from predcalc.models import MODELS
from predcalc.models.recurrent import term_weights
from predcalc.paths import ROOT, write_json_if_changed
from predcalc.readable import percent
from predcalc.record import write_study as write_record
from predcalc.report.anchors import REFERENCE_ROWS
from predcalc.report.edges import edge_cell
from predcalc.report.findings import comparison_table, export_table, markdown_table
from predcalc.report.studies import extended_best, shown_label
from predcalc.studies.edges import edge_scores
from predcalc.training.metrics import exact_accuracy


def output_folder(output_dir) -> Path:
    """The notebook's output folder, created: a relative ``output_dir`` (the notebooks' default,
    ``build/notebooks/NAME``, git-ignored) is read from the repository root, so papermill run from the
    root, nbval (whose kernel starts in notebooks/) and Jupyter all write to the same folder; the
    absolute one ``predcalc run`` passes is kept as given."""
    output = ROOT / output_dir
    output.mkdir(parents=True, exist_ok=True)
    return output


def show_protocol(protocol) -> None:
    """Prints the size of every split and the first training expression as numeric tokens."""

    for name, count in protocol.counts().items():
        print(f"{name:>10}: {count:,}")
    example = protocol.train.expressions[0]
    print(f"\n{example!r} = {protocol.train.values[0]:g} -> {NumericTokenizer().encode(example).tolist()}")


def _display_markdown(text: str) -> None:
    display(Markdown(text))


def show_comparison(results, notebook: str, parameters: dict):
    """The comparison table (ours beside the prior report's published rows), displayed without the
    prior report's benchmark score and its t-test (the findings' Appendix keeps them, labelled), and
    returned whole."""

    table = comparison_table(results.to_json(notebook, parameters))
    _display_markdown(markdown_table(table.drop(columns=list(PRIOR_REPORT_ONLY), errors="ignore")))
    return table


#: Columns a notebook's comparison table does not show: the prior report's benchmark score (an unbounded
#: ratio) and its t-test of log(score), kept only in the findings' table of the prior report's definitions.
PRIOR_REPORT_ONLY = ("score", "p")


def show_export(results, output, notebook: str, parameters: dict, models=None, formats=None, check: int = 0):
    """Exports the first seed of ``models`` (default: every model) under ``output/export`` in
    ``formats`` (default: all), checks every file against Keras (on the first ``check`` expressions
    of each test set; 0: all), and displays and returns the export table."""

    export_results(results, Path(output) / "export", models=models, formats=formats, check=check)
    table = export_table([results.to_json(notebook, parameters)])
    _display_markdown(markdown_table(table))
    if "TF Select" in table and (table["TF Select"] == True).any():  # noqa: E712 (a column of True/False/None)
        select = table[table["TF Select"] == True]  # noqa: E712
        _display_markdown(
            "LiteRT files that needed TF Select: " + ", ".join(f"{m} {f}" for m, f in zip(select.model, select.format))
        )
    return table


def write_metrics(results, output, notebook: str, parameters: dict) -> Path:
    """Writes ``metrics.json`` and says where."""
    path = results.write(output, notebook=notebook, parameters=parameters)
    print(f"wrote {path}")
    return path


def seconds_per_epoch(results) -> dict:
    """Mean training seconds per epoch over seeds (the first epoch's tracing included)."""
    return {
        name: float(np.mean([run["train_seconds"] / run["epochs"] for run in result.runs]))
        for name, result in results.models.items()
    }


def ours(table):
    """This run's rows of a comparison table, indexed by model label."""
    return table[table.source != "published"].set_index("model")


def model_summary(results, rows, name: str, seconds: dict) -> str:
    """One Markdown sentence: parameters, speed, MAE and exact accuracy of ``name``."""
    spec = results.models[name].spec
    row = rows.loc[spec.shown_label]
    return (
        f"**{spec.shown_label}** ({row['params']:,} parameters, {seconds[name]:.2f} s per epoch): MAE "
        f"{row['MAE in']:.3f} in range, {row['MAE out']:.2f} out of range, {row['MAE long']:.2f} long; exact "
        f"{percent(row['acc in'])} / {percent(row['acc out'])} / {percent(row['acc long'])}"
    )


def export_summary(results, name: str) -> str:
    """One sentence on the exported files of ``name``: the formats that match Keras and those that failed."""
    report = results.exports.get(name) or {}
    fine = [fmt for fmt, info in report.items() if "max_abs_diff" in info]
    failed = [fmt for fmt, info in report.items() if "error" in info]
    if not report:
        return ""
    text = f" Export of {name}: " + (
        ", ".join(f"{fmt} (max diff {report[fmt]['max_abs_diff']:.1g})" for fmt in fine) or "no converted format"
    )
    return text + (f"; failed: {', '.join(failed)}." if failed else ".")


def show_speed(results) -> None:
    """Prints each model's mean seconds per epoch and mean number of epochs over seeds."""
    for result in results.models.values():
        runs = result.runs
        print(
            f"{result.spec.label}: {np.mean([r['train_seconds'] / r['epochs'] for r in runs]):.2f} s per epoch, "
            f"{np.mean([r['epochs'] for r in runs]):.0f} epochs"
        )


def show_term_weights(results, protocol, test_sets=("in", "long4")):
    """The least-squares weights of the signed terms (and intercept) that each model's predictions
    follow on ``test_sets`` (``models.recurrent.term_weights``), displayed and returned."""

    sets = protocol.test_sets()
    rows = []
    for result in results.models.values():
        for test_set in test_sets:
            weights, intercept = term_weights(sets[test_set].expressions, result.predictions[test_set])
            rows.append(
                {
                    "model": result.spec.label,
                    "test set": test_set,
                    **{f"w{i}": w for i, w in enumerate(weights, start=1)},
                    "b": intercept,
                }
            )
    table = pd.DataFrame(rows)
    table = table[["model", "test set", *sorted(c for c in table if c.startswith("w")), "b"]]
    _display_markdown(markdown_table(table))
    return table


def prior_long(published: dict) -> str:
    """The prior report's long-expression MAE where it is an absolute error, as this project's is;
    otherwise why it is not compared."""
    if published.get("long") == "absolute":
        return f"{published['mae_long']:g}"
    if published.get("long") == "signed":
        return "not compared: the prior report's long figure is a signed mean(|y| - prediction), not an error"
    return "not compared: the code behind the prior report's long figure is not published"


def recurrent_summary(results, table, weights_table, name: str, seeds) -> str:
    """The conclusion of a recurrent model notebook (02-05): errors and accuracy beside the prior
    report's published row, the term weights in range and on 4-number expressions, and the
    out-of-range ratio."""
    result = results.models[name]
    label = result.spec.label
    ours_row = table[(table.model == result.spec.shown_label) & (table.source != "published")].iloc[0]
    published = REFERENCE_ROWS.get(result.spec.reference_row or "")
    in_weights = weights_table[(weights_table.model == label) & (weights_table["test set"] == "in")].iloc[0]
    long_weights = weights_table[(weights_table.model == label) & (weights_table["test set"] == "long4")].iloc[0]
    text = (
        f"{result.spec.shown_label} ({result.first.params:,} parameters) over {len(seeds)} seed(s): in-range MAE "
        f"**{ours_row['MAE in']:.4f}**, out-of-range MAE **{ours_row['MAE out']:.3f}**, long MAE "
        f"**{ours_row['MAE long']:.3f}**; exact accuracy {percent(ours_row['acc in'])} in range, "
        f"{percent(ours_row['acc out'])} out of range, {percent(ours_row['acc long'])} on long expressions. "
    )
    if published:
        text += (
            f"The prior report published {published['params']:,} parameters, in-range MAE {published['mae_in']}, "
            f"out-of-range {published['mae_out']}, long {prior_long(published)}. "
        )
    return text + (
        f"Weights of the signed terms in range: "
        f"{', '.join(f'{in_weights[c]:.2f}' for c in ('w1', 'w2', 'w3'))} (the rule: 1, 1, 1); on 4-number "
        f"expressions {', '.join(f'{long_weights[c]:.2f}' for c in ('w1', 'w2', 'w3', 'w4'))}. "
        f"Out of range the error is {ours_row['MAE out'] / ours_row['MAE in']:.0f} times the in-range error."
    )


def fnn_summary(table, seeds) -> str:
    """The conclusion of 01_fnn: FNN2 beside the prior report's row, and FNN2 with a cosine-decayed rate."""
    label = "FNN2 (1 x 345 PReLU)"
    rows, published = ours(table), REFERENCE_ROWS[label]
    if label not in rows.index:
        return ""
    row = rows.loc[label]
    text = (
        f"FNN2 over {len(seeds)} seed(s): in-range MAE **{row['MAE in']:.4f}** (prior report {published['mae_in']}), "
        f"out-of-range MAE **{row['MAE out']:.3f}** (prior report {published['mae_out']}), long MAE "
        f"**{row['MAE long']:.3f}** ({prior_long(published)}; the findings' table in the prior report's own "
        "definitions compares it like for like); "
        f"exact accuracy {percent(row['acc in'])} in range, {percent(row['acc out'])} out of range, "
        f"{percent(row['acc long'])} on long expressions. Out of range its error is "
        f"{row['MAE out'] / row['MAE in']:.0f} times the in-range error: the network interpolates between the "
        "numbers it was trained on and does not extrapolate the rule."
    )
    cosine = "FNN2, Adam with cosine decay (1 x 345 PReLU)"
    if cosine in rows.index:
        text += (
            f"\n\nThe same network with Adam's rate decayed along a cosine over the epochs: in-range MAE "
            f"**{rows.loc[cosine, 'MAE in']:.4f}** against the constant rate's {row['MAE in']:.4f} and the prior "
            f"report's {published['mae_in']}; out of range {rows.loc[cosine, 'MAE out']:.3f} against "
            f"{row['MAE out']:.3f}."
        )
    return text


def beyond_summary(table, seeds) -> str:
    """The conclusion of 30_beyond_reference: the trained model with the best exact accuracy out of range
    (then long, then in range) beside the prior report's best regression row (FNN2), then every other
    model (a closed-form finish tagged partly built, as the comparison table labels it)."""
    rows = ours(table)
    built = {spec.shown_label for spec in MODELS.values() if spec.finish is not None}
    trained = rows[[label not in built for label in rows.index]]
    best = trained.sort_values(["acc out", "acc long", "acc in"], ascending=False).iloc[0]
    published = REFERENCE_ROWS["FNN2 (1 x 345 PReLU)"]
    lines = [
        f"Best trained model here: **{best.name}** ({int(best['params'])} parameters, {len(seeds)} seed(s)): exact accuracy "
        f"{percent(best['acc in'], 2)} in range, {percent(best['acc out'], 2)} out of range, "
        f"{percent(best['acc long'], 2)} on long expressions; MAE out {best['MAE out']:.3f} against "
        f"{published['mae_out']} for the prior report's best regression model (FNN2), long {best['MAE long']:.3f} "
        f"({prior_long(published)})."
    ]
    lines += [
        f"- {label}: {percent(row['acc in'])} / {percent(row['acc out'])} / {percent(row['acc long'])} "
        "(in / out / long)"
        for label, row in rows.iterrows()
        if label != best.name
    ]
    return "\n".join(lines)


def extended_summary(record: dict) -> str:
    """The conclusion of 31_extended_suite from its ``metrics.json`` record: per model the exact
    accuracy on 1-, 3- and 6-digit numbers and the most terms, the families at least 99 % right,
    the worst one and the relative error; then the best trained and the best partly built model."""
    entry = record["extended"]
    families = entry["families"]
    terms = max(int(f.removeprefix("terms_")) for f in families if f.startswith("terms_"))
    lines = []
    for name, model in entry["models"].items():
        runs = model["runs"]
        by = {f: float(np.mean([r["metrics"][f]["accuracy"] for r in runs])) for f in families}
        mre = {f: float(np.mean([r["metrics"][f]["mre"] for r in runs])) for f in ("digits_1", "digits_6")}
        worst = min(by, key=by.get)
        digits = ", ".join(f"{d} digits {100 * by[f'digits_{d}']:.1f} %" for d in (1, 3, 6))
        lines.append(
            f"- **{shown_label(name, model['label'])}**: {digits}; {terms} terms "
            f"{100 * by[f'terms_{terms}']:.1f} %; at least 99 % on {sum(a >= 0.99 for a in by.values())} of "
            f"{len(by)} families (worst: {worst} {percent(by[worst])}); relative error "
            f"{mre['digits_1']:.2g} with 1-digit and {mre['digits_6']:.2g} with 6-digit numbers."
        )
    trained, built = extended_best(entry), extended_best(entry, built=True)
    seeds = max(len(model["runs"]) for model in entry["models"].values())
    text = f"\n\nMean over {seeds} seed(s), at most {record['parameters']['epochs']} epochs."
    if trained:
        text += (
            f" The trained model with the highest mean accuracy over the {len(families)} families is "
            f"**{trained['label']}** ({percent(trained['mean'])})."
        )
    if built:
        text += f" Partly built, **{built['label']}** reaches {percent(built['mean'])}."
    return (
        "\n".join(lines)
        + text
        + (
            " Trained on one-digit numbers and three terms only, a model that computes the signed sum should stay "
            "exact as numbers grow to six digits, with float32 as its only limit (integers up to 2^24 are exact); a "
            "model that interpolates should fall off as soon as the numbers leave the training range."
        )
    )


MARKERS = "osD^vPX*<>"


def plot_accuracy_by_length(results, protocol, lengths=range(2, 9), training_length: int = 3):
    """Exact accuracy (%) of each model's first seed on the long test set, by number of terms. Each
    model has its own marker and a small sideways offset, so models with the same accuracy stay
    visible side by side; the first model (the headline) is drawn on top; the legend sits below."""
    lengths = np.asarray(list(lengths))
    long = protocol.test_long
    count = len(results.models)
    offsets = np.linspace(-0.27, 0.27, count) if count > 1 else np.zeros(1)
    figure, axis = plt.subplots(figsize=(7, 3.4 + 0.2 * count), layout="constrained")
    for index, (result, offset) in enumerate(zip(results.models.values(), offsets)):
        by_length = [
            100 * exact_accuracy(long.values[long.terms == n], result.predictions["long"][long.terms == n])
            for n in lengths
        ]
        axis.plot(
            lengths + offset,
            by_length,
            marker=MARKERS[index % len(MARKERS)],
            markersize=5,
            linewidth=1.8 if index == 0 else 1,
            zorder=3 if index == 0 else 2,
            label=result.spec.shown_label,
        )
    axis.axvspan(training_length - 0.4, training_length + 0.4, color="grey", alpha=0.15, label="training length")
    axis.set_xticks(lengths)
    axis.set_xlabel("numbers in the expression (models offset sideways)")
    axis.set_ylabel("exact accuracy, % (first seed)")
    axis.set_ylim(-3, 103)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    return figure


def plot_sign_state(model, expression: str):
    """The ``sign_state`` layer's state (units by tokens) of a syntax-gated scan along ``expression``."""
    tokens = expression.split(" ")
    probe = keras.Model(model.inputs, model.get_layer("sign_state").output)
    states = probe.predict(TypedTokenizer().encode_batch([expression]), verbose=0)[0][: len(tokens)]
    figure, axis = plt.subplots(figsize=(7, 2.6), layout="constrained")
    image = axis.imshow(states.T, aspect="auto", cmap="viridis")
    axis.set_xticks(range(len(tokens)), tokens)
    axis.set_ylabel("state unit")
    figure.colorbar(image, ax=axis)
    axis.set_title(f"MinGRU state along {expression!r} (first seed)")
    return figure


def write_study(output, notebook: str, protocol, parameters: dict, **study) -> Path:
    """Writes a study notebook's ``metrics.json`` (no model rows for the findings table) through the
    typed record, and says where. ``study`` holds its one named entry (e.g. ``explain=...``)."""

    ((entry, value),) = study.items()
    return write_record(
        output, notebook, entry, value, parameters, data={"seed": protocol.seed, "counts": protocol.counts()}
    )


def edge_table(results, sets: dict, path=None) -> pd.DataFrame:
    """Each model's first seed on the edge sets (:func:`predcalc.studies.edges.edge_sets`): one
    row per model, one column per set, "exact % (MAE)", "-" where the model cannot take the set's
    length. With ``path``, every score is also written there as JSON (``{model: {set: metrics}}``)."""

    scores = {name: edge_scores(result.first, sets) for name, result in results.models.items()}
    if path is not None:
        write_json_if_changed(path, scores)
    return pd.DataFrame(
        [
            {
                "model": results.models[name].spec.label,
                **{set_name: edge_cell(score) for set_name, score in by_set.items()},
            }
            for name, by_set in scores.items()
        ]
    )
