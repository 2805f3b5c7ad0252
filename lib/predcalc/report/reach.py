"""The findings' summary figure: exact accuracy on the development sets and on the held-out suite.

Two panels, one line of markers per model: left, the reference protocol's test sets (development:
the models' designs were chosen on them); right, the held-out suite 5151
(:data:`predcalc.report.answer.HELD_OUT_KIND`), the one suite every drawn model is scored on, through
each seed's exported files. The frame is :func:`reach_frame`'s: rows of model, panel
(``development`` or ``heldout``), set, tick label, source (``protocol`` or ``heldout``), mean, min
and max over seeds, and ``read`` (False: a set longer than the model's files read, not drawn).

What keeps it honest at a glance:

- the training box is labelled as the box it is (3 integers from -5..4, ``+``/``-``), not by a
  bound it does not have;
- development and held-out sets sit in separate panels (filled markers left, open markers right),
  never joined by a line;
- models that score the same (two exact models at 100 %) stay apart: each model has its own
  sideways offset, marker and line style.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from predcalc.paths import save_figure
from predcalc.report import answer
from predcalc.report.answer import short_name
from predcalc.report.rounded import rounded_facts, rounded_record
from predcalc.studies import rounded_transformer as rounded_study
from predcalc.studies.edges import THIRD_HELDOUT, THIRD_HELDOUT_SEED

ROUNDED = rounded_study.MODEL

PANELS = (  # panel -> (title, x label)
    ("development", "development: the prior report's test sets", "test set (they chose designs)"),
    ("heldout", f"held-out suite {THIRD_HELDOUT_SEED} (exported files)", "held-out set (chose nothing)"),
)
SOURCES = {  # source -> (marker fill, what the legend says of it)
    "protocol": ("full", "filled markers (left): the protocol's test sets (development: they chose designs)"),
    "heldout": ("none", f"open markers (right): held-out suite {THIRD_HELDOUT_SEED}, none chose a model drawn on it"),
}
MARKERS = "osD^vP*Xh<>pd8"
OFFSET = 0.07  # sideways step between models, in tick spacings


def plot_reach(frame: pd.DataFrame, path: Path) -> Path:
    """Draw the summary figure of ``frame`` (rows as :func:`reach_frame` makes them) into ``path``
    (a palette PNG, rewritten only if it changed); returns ``path``."""
    # plotting only when a figure is drawn; the backend is set before pyplot loads
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after the backend is chosen

    figure = draw_reach(frame)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(figure, path, dpi=110)
    plt.close(figure)
    return path


def draw_reach(frame: pd.DataFrame):
    """The summary figure of ``frame``, not saved (:func:`plot_reach` saves it)."""
    import matplotlib.pyplot as plt  # plotting only when a figure is drawn

    models = list(dict.fromkeys(frame["model"]))
    # every model its own hue: tab10, then black, brown-orange and two darker shades (tab20's pairs of
    # shades read as one colour)
    colours = [plt.get_cmap("tab10")(k) for k in range(10)] + ["black", "#b15928", "#1b4f72", "#6a3d9a"]
    widths = [max(1, frame.loc[frame["panel"] == name, "set"].nunique()) for name, _, _ in PANELS]
    figure, axes = plt.subplots(
        1, 2, figsize=(14, 6.4), sharey=True, layout="constrained", gridspec_kw={"width_ratios": widths}
    )
    for axis, (name, title, xlabel) in zip(axes, PANELS):
        part = frame[frame["panel"] == name]
        ticks = part.drop_duplicates("set").sort_values("order", kind="stable")
        positions = {s: i for i, s in enumerate(ticks["set"])}
        fill = "full" if name == "development" else "none"
        for k, model in enumerate(models):
            every = part[part["model"] == model].sort_values("order", kind="stable")
            rows = every[every["read"]]
            if rows.empty:
                continue
            colour, marker = colours[k % len(colours)], MARKERS[k % len(MARKERS)]
            shift = (k - (len(models) - 1) / 2) * OFFSET
            x = np.array([positions[s] for s in rows["set"]]) + shift
            y = 100 * rows["mean"].to_numpy()
            err = 100 * np.vstack([rows["mean"] - rows["min"], rows["max"] - rows["mean"]])
            axis.errorbar(x, y, yerr=err, fmt="none", ecolor=colour, elinewidth=1, capsize=2, alpha=0.8)
            axis.plot(
                x,
                y,
                linestyle="none",
                marker=marker,
                markersize=6,
                color=colour,
                markerfacecolor=colour if fill == "full" else "white",
                markeredgewidth=1.3,
                gid=rows["source"].iloc[0],
                label=short_name(model),
            )
        axis.set_xticks(range(len(ticks)), list(ticks["label"]), fontsize=8)
        axis.set_xlim(-0.5, max(len(ticks), 1) - 0.5)
        axis.set_title(title, fontsize=10)
        axis.set_xlabel(xlabel)
        axis.set_ylim(-3, 105)
        axis.set_yticks(range(0, 101, 20))
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("exact accuracy (%)")
    handles = {}
    for axis in axes:  # every model once, in order, whichever panel draws it
        for handle, label in zip(*axis.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    key = (
        "the Answer's models, each picked within its family on data not shown here\n"
        + "(validation loss; the extended suite); their designs were developed on the prior report's sets (left)\n"
        + "\n".join(text for _, text in SOURCES.values())
        + "; bars from the worst to the best seed; points are not joined (the sets are kinds, not a scale);\n"
        + "a set a model's files cannot read is not drawn; models at 100 % are set side by side"
    )
    figure.legend(
        list(handles.values()),
        list(handles),
        loc="outside lower center",
        ncol=4,
        fontsize=9,
        frameon=False,
        title=key,
        title_fontsize=9,
    )
    return figure


def _row(model, panel, set_name, label, values=None, score=None, scored_in="files", order=0) -> dict:
    """One point; ``values`` None and no ``score``: a set the model's files cannot read (not drawn).
    ``scored_in`` says whether a held-out score came through exported files or Keras."""
    if score is None and values is None:
        summary = {"mean": np.nan, "min": np.nan, "max": np.nan, "seeds": 0, "read": False}
    else:
        summary = score or {"mean": float(np.mean(values)), "min": min(values), "max": max(values)}
        summary = {**summary, "seeds": len(values) if values is not None else summary.get("seeds", 0), "read": True}
    source = "protocol" if panel == "development" else "heldout"
    point = {"model": model, "panel": panel, "set": set_name, "label": label, "source": source, "order": order}
    return {**point, **summary, "scored_in": scored_in}


# the protocol's test sets (left panel): (set, tick label)
PROTOCOL_POINTS = (
    ("in", "in range\n3 numbers, -5..4\n(training box)"),
    ("out", "out of range\n3 numbers,\n-8..-5, 5..8"),
    ("long", "long\n2-8 numbers\nof -5..5"),
)
# the held-out suite's sets (right panel), in the suite's order: set -> tick label
HELD_LABELS = {
    "digits_3": "3 numbers\n3 digits",
    "digits_4": "3 numbers\n4 digits",
    "digits_6": "3 numbers\n6 digits",
    "terms_40": "40 terms\n1 digit",
    "terms_80": "80 terms\n1 digit",
    "terms_300": "300 terms\n1 digit",
    "terms_10_digits_2": "10 terms\n2 digits",
    "terms_30_digits_3": "30 terms\n3 digits",
    "nines": "3-8 nines\n(carries)",
    "cancellation": "x - y + z\n6 digits",
}
HELD_SETS = tuple(edge.name for edge in THIRD_HELDOUT)


def _protocol_rows(name: str, scores: dict[str, list[float]]) -> list[dict]:
    return [_row(name, "development", t, label, scores[t], order=k) for k, (t, label) in enumerate(PROTOCOL_POINTS)]


def _held_rows(name: str, by_seed: dict, scored_in: str = "files") -> list[dict]:
    """A model's points on the held-out suite from ``{seed: {set: accuracy or None}}`` (None: not read;
    a set no seed holds is not part of the model's record and gets no point)."""
    rows = []
    for k, set_name in enumerate(HELD_SETS):
        values = [sets.get(set_name) for sets in by_seed.values()]
        if not any(set_name in sets for sets in by_seed.values()):
            continue
        if any(v is None for v in values):
            rows.append(_row(name, "heldout", set_name, HELD_LABELS.get(set_name, set_name), order=k))
        else:
            rows.append(
                _row(name, "heldout", set_name, HELD_LABELS.get(set_name, set_name), values, None, scored_in, k)
            )
    return rows


def _exact_scan_rows(findings) -> list[dict]:
    """The trained exact scan: the protocol's sets from its own record, and the held-out suite
    (drawn after its design was frozen, scored through its ONNX files) where its record scored it."""
    record = answer.trained_exact_record(findings)
    if record is None:
        return []
    seeds = sorted(record["seeds"], key=int)
    rows = _protocol_rows("scan_exact", answer.protocol_scores(record, seeds)["protocol"])  # fresh seeds' where run
    if record["data"]["heldout"].get("seed") != THIRD_HELDOUT_SEED:
        return rows
    fresh = ((record.get("fresh") or {}).get("heldout") or {}).get("onnx") or {}
    onnx = fresh or record["heldout"]["onnx"]
    return rows + _held_rows("scan_exact", {s: onnx[s] for s in sorted(onnx, key=int)})


def _rounded_rows(findings) -> list[dict]:
    """The gated-sum transformer with rounded gates's fresh seeds: the protocol's sets (Keras) and the held-out
    suite through their ONNX files."""
    record, facts = rounded_record(findings.notebooks), rounded_facts(findings.notebooks)
    if facts is None:
        return []
    by_seed = rounded_study.accuracies(record["heldout"]["fresh"])
    return _protocol_rows(ROUNDED, facts["protocol"]) + _held_rows(
        ROUNDED, {s: by_seed[s] for s in sorted(by_seed, key=int)}
    )


def _suite_seeds(findings, name: str) -> dict | None:
    """``{seed: {set: accuracy or None}}`` of ``name`` on the held-out suite's stored record, or None."""
    record = findings.edges.get(f"{answer.HELD_OUT_KIND}_record") or {}
    by_seed = (record.get("models") or {}).get(name)
    if not by_seed:
        return None
    return {seed: {s: score.get("accuracy") for s, score in sets.items()} for seed, sets in by_seed.items()}


def reach_frame(findings) -> pd.DataFrame:
    """Tidy rows (model, panel, set, label, source, order, mean, min, max, seeds, read, scored_in) for the
    summary figure: the Answer's models (each family's, chosen on data the figure does not show), on the
    protocol's in-range, out-of-range and long sets, then on the held-out suite. The calculator is left
    out: the protocol's sets lie inside its own training world, and its held-out draw has other boxes."""
    rows = []
    for name, _ in answer.family_rows(findings):
        if name == "scan_exact":
            rows += _exact_scan_rows(findings)
        if name == ROUNDED:
            rows += _rounded_rows(findings)
        if name not in findings.models:
            continue
        rows += _protocol_rows(name, {t: findings.accuracy(name, t) for t, _ in PROTOCOL_POINTS})
        seeds = _suite_seeds(findings, name)
        if seeds:
            rows += _held_rows(name, seeds)
            continue
        runs = findings.models[name][1].runs  # a model whose notebook scored the suite's sets itself (in Keras)
        keras = {
            r.seed: {
                s: r.metrics[f"{KERAS_PREFIX}/{s}"]["accuracy"] for s in HELD_SETS if f"{KERAS_PREFIX}/{s}" in r.metrics
            }
            for r in runs
        }
        if any(keras.values()):
            rows += [r for r in _held_rows(name, keras, scored_in="keras") if r["read"]]
    return pd.DataFrame(rows)


KERAS_PREFIX = f"heldout_{THIRD_HELDOUT_SEED}"
