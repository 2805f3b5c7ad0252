"""The steps every model notebook shares (01-10, 30-32): the output folder, the data summary,
the comparison and export tables, the metrics file and the texts of a table's row that a
conclusion glues. Each ``show_*`` displays its table (IPython) and returns it."""

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
from predcalc.report.findings import comparison_table, export_table, markdown_table
from predcalc.report.studies import edge_cell, shown_label
from predcalc.studies.edges import edge_scores
from predcalc.training import fit
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


#: The names :func:`row_texts` returns, each after its prefix.
ROW_TEXTS = ("params", "mae_in", "mae_out", "mae_long", "acc_in", "acc_out", "acc_long", "out_ratio")


def row_texts(row, prefix: str = "") -> dict[str, str]:
    """A comparison table's row as the texts a conclusion glues, each named ``prefix`` + one of
    :data:`ROW_TEXTS`: parameters, MAE and exact accuracy in range, out of range and on long
    expressions, and ``out_ratio``, the out-of-range MAE over the in-range MAE."""
    texts = {
        "params": f"{int(row['params']):,}",
        "mae_in": f"{row['MAE in']:.4f}",
        "mae_out": f"{row['MAE out']:.3f}",
        "mae_long": f"{row['MAE long']:.3f}",
        **{f"acc_{test_set}": percent(row[f"acc {test_set}"]) for test_set in ("in", "out", "long")},
        "out_ratio": f"{row['MAE out'] / row['MAE in']:.0f}",
    }
    return {prefix + name: text for name, text in texts.items()}


def term_weight_texts(weights_table, label: str) -> dict[str, str]:
    """The term weights of ``label`` (:func:`show_term_weights`) as the texts a conclusion glues:
    ``weights_in`` (3 terms, in range) and ``weights_long4`` (4-number expressions), each a list
    of two-decimal weights."""
    rows = weights_table[weights_table.model == label].set_index("test set")
    return {
        "weights_in": ", ".join(f"{rows.loc['in', c]:.2f}" for c in ("w1", "w2", "w3")),
        "weights_long4": ", ".join(f"{rows.loc['long4', c]:.2f}" for c in ("w1", "w2", "w3", "w4")),
    }


def best_trained(table) -> str:
    """The label of this run's trained model (not one with a closed-form finish, which is partly
    built) with the best exact accuracy out of range, then on long expressions, then in range."""
    rows = ours(table)
    built = {spec.shown_label for spec in MODELS.values() if spec.finish is not None}
    trained = rows[[label not in built for label in rows.index]]
    return trained.sort_values(["acc out", "acc long", "acc in"], ascending=False).index[0]


def extended_table(record: dict) -> pd.DataFrame:
    """Per model of a 31_extended_suite record (its ``metrics.json``), the mean exact accuracy over
    seeds (%) on 1-, 3- and 6-digit numbers and on the most terms, how many families it gets at
    least 99 % right, its worst family, and its mean relative error with 1- and 6-digit numbers."""
    entry = record["extended"]
    families = entry["families"]
    terms = max(int(f.removeprefix("terms_")) for f in families if f.startswith("terms_"))
    rows = []
    for name, model in entry["models"].items():
        runs = model["runs"]
        by = {f: float(np.mean([r["metrics"][f]["accuracy"] for r in runs])) for f in families}
        worst = min(by, key=by.get)
        rows.append(
            {
                "model": shown_label(name, model["label"]),
                **{f"{d} digits %": 100 * by[f"digits_{d}"] for d in (1, 3, 6)},
                f"{terms} terms %": 100 * by[f"terms_{terms}"],
                "families at least 99 %": f"{sum(a >= 0.99 for a in by.values())} of {len(by)}",
                "worst family": worst,
                "worst %": 100 * by[worst],
                **{
                    f"relative error, {d}-digit numbers": float(
                        np.mean([r["metrics"][f"digits_{d}"]["mre"] for r in runs])
                    )
                    for d in (1, 6)
                },
            }
        )
    return pd.DataFrame(rows)


def failed_exports(results, name: str) -> list[str]:
    """The formats of ``name``'s export that failed to convert or run."""
    return [fmt for fmt, info in (results.exports.get(name) or {}).items() if "error" in info]


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


def glue_all(values: dict) -> None:
    """Glue each value under its name (myst-nb), shown only where the markdown names it."""
    from myst_nb import glue  # the notebooks' kernel has it; the library's tests need not

    for name, value in values.items():
        glue(name, value, display=False)


def to_parallel_form(name: str, trained, split, tolerance: float = 1e-3) -> float:
    """Put a model trained with the step loop into its parallel form (the same function, the
    weights copied) before export; the largest output gap on ``split`` must stay under ``tolerance``."""
    _, parallel_model, _ = fit.build(name, parallel=True)
    parallel_model.set_weights(trained.model.get_weights())
    x = trained.tokenizer.encode_batch(split.expressions)
    gap = float(np.abs(parallel_model.predict(x, verbose=0) - trained.model.predict(x, verbose=0)).max())
    if gap >= tolerance:
        raise ValueError(f"{name}: the parallel form differs from the trained step loop by {gap:.2g} on {split.name}")
    trained.model = parallel_model
    return gap
