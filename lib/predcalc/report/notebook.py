"""The steps every model notebook shares (01-10, 30-32): the output folder, the data summary,
the comparison and export tables, the metrics file and the one-line summaries of a model and
its exports. Each ``show_*`` displays its table (IPython) and returns it."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def output_folder(output_dir) -> Path:
    """The notebook's output folder, created."""
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    return output


def show_protocol(protocol) -> None:
    """Prints the size of every split and the first training expression as numeric tokens."""
    from predcalc.data import NumericTokenizer

    for name, count in protocol.counts().items():
        print(f"{name:>10}: {count:,}")
    example = protocol.train.expressions[0]
    print(f"\n{example!r} = {protocol.train.values[0]:g} -> {NumericTokenizer().encode(example).tolist()}")


def _display_markdown(text: str) -> None:
    from IPython.display import Markdown, display

    display(Markdown(text))


def show_comparison(results, notebook: str, parameters: dict):
    """The comparison table (ours beside the seed's published rows), displayed and returned."""
    from predcalc.report.findings import comparison_table, markdown_table

    table = comparison_table(results.to_json(notebook, parameters))
    _display_markdown(markdown_table(table))
    return table


def show_export(results, output, notebook: str, parameters: dict, models=None, formats=None):
    """Exports the first seed of ``models`` (default: every model) under ``output/export`` in
    ``formats`` (default: all), checks every file against Keras, and displays and returns the
    export table."""
    from predcalc.report.findings import export_table, markdown_table
    from predcalc.training.experiment import Results

    names = list(results.models) if models is None else [n for n in models if n in results.models]
    exported = Results(protocol=results.protocol, models={name: results.models[name] for name in names})
    results.exports.update(exported.export(Path(output) / "export", formats=formats))
    table = export_table([results.to_json(notebook, parameters)])
    _display_markdown(markdown_table(table))
    return table


def write_metrics(results, output, notebook: str, parameters: dict) -> Path:
    """Writes ``metrics.json`` and says where."""
    path = results.write(output, notebook=notebook, parameters=parameters)
    print(f"wrote {path}")
    return path


def seconds_per_epoch(results) -> dict:
    """Mean training seconds per epoch over seeds (the first epoch's tracing included)."""
    return {name: float(np.mean([run["train_seconds"] / run["epochs"] for run in result.runs]))
            for name, result in results.models.items()}


def ours(table):
    """This run's rows of a comparison table, indexed by model label."""
    return table[table.source != "published"].set_index("model")


def model_summary(results, rows, name: str, seconds: dict) -> str:
    """One Markdown sentence: parameters, speed, MAE and exact accuracy of ``name``."""
    spec = results.models[name].spec
    row = rows.loc[spec.label]
    return (f"**{spec.label}** ({row['params']:,} parameters, {seconds[name]:.2f} s per epoch): MAE "
            f"{row['MAE in']:.3f} in range, {row['MAE out']:.2f} out of range, {row['MAE long']:.2f} long; exact "
            f"{100 * row['acc in']:.1f} % / {100 * row['acc out']:.1f} % / {100 * row['acc long']:.1f} %")


def export_summary(results, name: str) -> str:
    """One sentence on the exported files of ``name``: the formats that match Keras and those that failed."""
    report = results.exports.get(name) or {}
    fine = [fmt for fmt, info in report.items() if "max_abs_diff" in info]
    failed = [fmt for fmt, info in report.items() if "error" in info]
    if not report:
        return ""
    text = f" Export of {name}: " + (", ".join(f"{fmt} (max diff {report[fmt]['max_abs_diff']:.1g})" for fmt in fine)
                                     or "no converted format")
    return text + (f"; failed: {', '.join(failed)}." if failed else ".")


def show_speed(results) -> None:
    """Prints each model's mean seconds per epoch and mean number of epochs over seeds."""
    for result in results.models.values():
        runs = result.runs
        print(f"{result.spec.label}: {np.mean([r['train_seconds'] / r['epochs'] for r in runs]):.2f} s per epoch, "
              f"{np.mean([r['epochs'] for r in runs]):.0f} epochs")


def show_term_weights(results, protocol, test_sets=("in", "long4")):
    """The least-squares weights of the signed terms (and intercept) that each model's predictions
    follow on ``test_sets`` (``models.recurrent.term_weights``), displayed and returned."""
    import pandas as pd

    from predcalc.models.recurrent import term_weights
    from predcalc.report.findings import markdown_table

    sets = protocol.test_sets()
    rows = []
    for result in results.models.values():
        for test_set in test_sets:
            weights, intercept = term_weights(sets[test_set].expressions, result.predictions[test_set])
            rows.append({"model": result.spec.label, "test set": test_set,
                         **{f"w{i}": w for i, w in enumerate(weights, start=1)}, "b": intercept})
    table = pd.DataFrame(rows)
    table = table[["model", "test set", *sorted(c for c in table if c.startswith("w")), "b"]]
    _display_markdown(markdown_table(table))
    return table


def recurrent_summary(results, table, weights_table, name: str, seeds) -> str:
    """The conclusion of a recurrent model notebook (02-05): errors and accuracy beside the seed's
    published row, the term weights in range and on 4-number expressions, and the out-of-range ratio."""
    result = results.models[name]
    label = result.spec.label
    ours_row = table[(table.model == label) & (table.source != "published")].iloc[0]
    published = table[(table.model == result.spec.seed_row) & (table.source == "published")]
    in_weights = weights_table[(weights_table.model == label) & (weights_table["test set"] == "in")].iloc[0]
    long_weights = weights_table[(weights_table.model == label) & (weights_table["test set"] == "long4")].iloc[0]
    text = (f"{label} ({result.first.params:,} parameters) over {len(seeds)} seed(s): in-range MAE "
            f"**{ours_row['MAE in']:.4f}**, out-of-range MAE **{ours_row['MAE out']:.3f}**, long MAE "
            f"**{ours_row['MAE long']:.3f}**; exact accuracy {100 * ours_row['acc in']:.1f} % in range, "
            f"{100 * ours_row['acc out']:.1f} % out of range, {100 * ours_row['acc long']:.1f} % on long expressions. ")
    if len(published):
        seed = published.iloc[0]
        text += (f"The seed published {seed['params']:,} parameters, in-range MAE {seed['MAE in']}, out-of-range "
                 f"{seed['MAE out']}, long {seed['MAE long']}. ")
    return text + (f"Weights of the signed terms in range: "
                   f"{', '.join(f'{in_weights[c]:.2f}' for c in ('w1', 'w2', 'w3'))} (the rule: 1, 1, 1); on 4-number "
                   f"expressions {', '.join(f'{long_weights[c]:.2f}' for c in ('w1', 'w2', 'w3', 'w4'))}. "
                   f"Out of range the error is {ours_row['MAE out'] / ours_row['MAE in']:.0f} times the in-range error.")


def plot_accuracy_by_length(results, protocol, lengths=range(2, 9), training_length: int = 3):
    """Exact accuracy of each model's first seed on the long test set, by number of terms."""
    import matplotlib.pyplot as plt

    from predcalc.training.metrics import exact_accuracy

    lengths = np.asarray(list(lengths))
    long = protocol.test_long
    figure, axis = plt.subplots(figsize=(7, 3.5))
    for result in results.models.values():
        by_length = [exact_accuracy(long.values[long.terms == n], result.predictions["long"][long.terms == n])
                     for n in lengths]
        axis.plot(lengths, by_length, marker="o", label=result.spec.label)
    axis.axvline(training_length, color="grey", linestyle=":", label="training length")
    axis.set_xlabel("numbers in the expression")
    axis.set_ylabel("exact accuracy (first seed)")
    axis.set_ylim(-0.02, 1.02)
    axis.legend(fontsize=7)
    figure.tight_layout()
    return figure


def write_study(output, notebook: str, protocol, parameters: dict, **study) -> Path:
    """Writes a study notebook's ``metrics.json`` (no model rows for the findings table) through the
    typed record, and says where. ``study`` holds its one named entry (e.g. ``explain=...``)."""
    from predcalc.record import write_study as write_record

    (entry, value), = study.items()
    return write_record(output, notebook, entry, value, parameters,
                        data={"seed": protocol.seed, "counts": protocol.counts()})


def edge_table(results, sets: dict, path=None) -> "pd.DataFrame":
    """Each model's first seed on the edge sets (:func:`predcalc.studies.edges.edge_sets`): one
    row per model, one column per set, "exact % (MAE)", "-" where the model cannot take the set's
    length. With ``path``, every score is also written there as JSON (``{model: {set: metrics}}``)."""
    import json

    import pandas as pd

    from predcalc.report.edges import edge_cell
    from predcalc.studies.edges import edge_scores

    scores = {name: edge_scores(result.first, sets) for name, result in results.models.items()}
    if path is not None:
        Path(path).write_text(json.dumps(scores, indent=1))
    return pd.DataFrame([{"model": results.models[name].spec.label,
                          **{set_name: edge_cell(score) for set_name, score in by_set.items()}}
                         for name, by_set in scores.items()])
