"""The findings' summary figure: exact accuracy against distance from the training box.

Two panels (more digits, more terms), one line per model. The frame is
:func:`reach_frame`'s: rows of model, axis (``digits`` or ``terms``), distance,
label, source (``protocol``: the reference protocol's test sets, which the models were chosen on;
``heldout``: the held-out edge suite), mean, min and max over seeds.

What keeps it honest at a glance:

- the training box is labelled as the box it is (3 integers from -5..4, ``+``/``-``), not by a
  bound it does not have;
- the protocol's test sets (development: the models were chosen on them) are filled markers, the
  held-out suite's sets open markers, with a dashed line between the two;
- models that score the same (two exact models at 100 %) stay apart: each model has its own
  sideways offset, marker and line style.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from predcalc.paths import save_figure
from predcalc.report import answer, prose
from predcalc.report.answer import short_name

# (axis, distance) -> tick label, where the frame's own label is not the box's name: the training
# box of the reference protocol is 3 integers from -5..4; its out-of-range set draws from -8..-5 and 5..8.
TICKS = {
    ("digits", 1): "-5..4\n(training box)",
    ("digits", 1.5): "-8..-5, 5..8",
    ("terms", 3): "3\n(training box)",
}
PANELS = (
    ("digits", "more digits (3 numbers)", "size of the 3 numbers"),
    ("terms", "more terms (numbers from -5..5)", "numbers per expression"),
)
SOURCES = {  # source -> (marker fill, what the legend says of it)
    "protocol": ("full", "filled markers: the protocol's test sets (development: they chose designs)"),
    "heldout": (
        "none",
        "open: held-out sets (the edge suite; the sign scan's own suite), none chose the model drawn on it",
    ),
}
MARKERS = "osD^vP*Xh<>p"
LINESTYLES = ("-", "--", "-.", ":")
OFFSET = 0.07  # sideways step between models, in tick spacings
# line width of the first model, and the step down to each next: a line drawn over an earlier one at the
# same value (two models at 100 %) is thinner, so the earlier one stays visible on both sides of it
WIDEST, WIDTH_STEP = 2.8, 0.25


def tick_label(axis: str, distance: float, label: str) -> str:
    """The tick of one test set: the box's own name where :data:`TICKS` has one, else the frame's."""
    return TICKS.get((axis, distance), label)


def plot_reach(frame: pd.DataFrame, path: Path) -> Path:
    """Draw the summary figure of ``frame`` (rows as :func:`predcalc.report.paper.reach_frame`
    makes them) into ``path`` (a palette PNG, rewritten only if it changed); returns ``path``."""
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
    # every model its own hue: tab10, then black and brown-orange (tab20's pairs of shades read as one colour)
    colours = [plt.get_cmap("tab10")(k) for k in range(10)] + ["black", "#b15928"]
    figure, axes = plt.subplots(1, 2, figsize=(12, 6.2), sharey=True, layout="constrained")
    for axis, (name, title, xlabel) in zip(axes, PANELS):
        part = frame[frame["axis"] == name]
        ticks = part.drop_duplicates("distance").sort_values("distance")
        positions = {d: i for i, d in enumerate(ticks["distance"])}
        for k, model in enumerate(models):
            rows = part[part["model"] == model].sort_values("distance")
            if rows.empty:
                continue
            colour, marker = colours[k % len(colours)], MARKERS[k % len(MARKERS)]
            x = np.array([positions[d] for d in rows["distance"]]) + (k - (len(models) - 1) / 2) * OFFSET
            y = 100 * rows["mean"].to_numpy()
            err = 100 * np.vstack([rows["mean"] - rows["min"], rows["max"] - rows["mean"]])
            axis.errorbar(x, y, yerr=err, fmt="none", ecolor=colour, elinewidth=1, capsize=2, alpha=0.8)
            labelled = False
            for source in SOURCES:  # one line per source: development and held-out points are not joined
                chosen = (rows["source"] == source).to_numpy()
                if not chosen.any():
                    continue
                axis.plot(
                    x[chosen],
                    y[chosen],
                    color=colour,
                    linestyle=LINESTYLES[k % len(LINESTYLES)],
                    linewidth=max(WIDEST - WIDTH_STEP * k, 0.8),
                    label=None if labelled else short_name(model),
                    marker=marker,
                    markersize=6,
                    markevery=[],  # the markers come next, filled by source; the legend shows the first line
                )
                labelled = True
            for source, (fill, _) in SOURCES.items():
                chosen = (rows["source"] == source).to_numpy()
                axis.plot(
                    x[chosen],
                    y[chosen],
                    linestyle="none",
                    marker=marker,
                    markersize=6,
                    color=colour,
                    markerfacecolor=colour if fill == "full" else "white",
                    markeredgewidth=1.3,
                    gid=source,
                )
        held = ticks["source"].to_numpy() == "heldout"
        if held.any() and not held.all():  # the boundary between development and held-out sets
            boundary = np.argmax(held) - 0.5
            axis.axvline(boundary, color="grey", linestyle="--", linewidth=0.9, gid="boundary")
            axis.text(boundary - 0.08, 104, "development", ha="right", va="bottom", fontsize=8, color="dimgrey")
            axis.text(boundary + 0.08, 104, "held-out", ha="left", va="bottom", fontsize=8, color="dimgrey")
        labels = [tick_label(name, d, label) for d, label in zip(ticks["distance"], ticks["label"])]
        axis.set_xticks(range(len(ticks)), labels, fontsize=8)
        axis.set_xlim(-0.5, len(ticks) - 0.5)
        axis.set_title(title, fontsize=10, pad=16)
        axis.set_xlabel(xlabel)
        axis.set_ylim(-3, 110)
        axis.set_yticks(range(0, 101, 20))
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("exact accuracy (%)")
    handles, labels = axes[0].get_legend_handles_labels()
    key = (
        "the Answer's models, each picked within its family on data not shown here (validation loss; the extended\n"
        + "suite); their designs were developed on the prior report's sets (filled markers)\n"
        + "\n".join(text for _, text in SOURCES.values())
        + "; bars from the worst to the best seed"
    )
    figure.legend(
        handles, labels, loc="outside lower center", ncol=4, fontsize=9, frameon=False, title=key, title_fontsize=8
    )
    return figure


def _row(model, axis, distance, label, source, values=None, score=None, scored_in="files") -> dict:
    """One point: ``scored_in`` says whether a held-out score came through exported files or Keras."""
    summary = score or {"mean": float(np.mean(values)), "min": min(values), "max": max(values)}
    point = {"model": model, "axis": axis, "distance": distance, "label": label, "source": source}
    return {**point, **summary, "scored_in": scored_in}


PROTOCOL_POINTS = (
    ("digits", 1, "-5..4", "in"),
    ("digits", 1.5, "|n| 5..8", "out"),
    ("terms", 3, "3", "in"),
    ("terms", 5, "2-8", "long"),
)


def _exact_scan_rows(findings) -> list[dict]:
    """The trained exact scan: the protocol's sets from its own record, and its own held-out suite
    (drawn after its design was frozen, scored through its ONNX files)."""
    record = answer.trained_exact_record(findings)
    if record is None:
        return []
    seeds = sorted(record["seeds"], key=int)
    protocol = answer.protocol_scores(record, seeds)["protocol"]  # the fresh seeds' where they ran
    rows = [
        _row("scan_exact", axis, distance, label, "protocol", protocol[test_set])
        for axis, distance, label, test_set in PROTOCOL_POINTS
    ]
    fresh = ((record.get("fresh") or {}).get("heldout") or {}).get("onnx") or {}
    onnx = fresh or record["heldout"]["onnx"]
    seeds = sorted(onnx, key=int)
    for name, (axis, distance, label) in EXACT_SCAN_SETS.items():
        if all(name in onnx[s] for s in seeds):
            rows.append(_row("scan_exact", axis, distance, label, "heldout", [onnx[s][name] for s in seeds]))
    return rows


def reach_frame(findings) -> pd.DataFrame:
    """Tidy rows (model, axis, distance, label, source, mean, min, max, scored_in) for the summary figure: the
    Answer's models (each family's, chosen on data the figure does not show), on the protocol's
    in-range, out-of-range and long sets, then on the held-out sets. The calculator is left out: the
    protocol's sets lie inside its own training world, and its held-out draw has other boxes."""
    rows = []
    for name, _ in answer.family_rows(findings):
        if name == "scan_exact":
            rows += _exact_scan_rows(findings)
        if name not in findings.models:
            continue
        for axis, distance, label, test_set in PROTOCOL_POINTS:
            rows.append(_row(name, axis, distance, label, "protocol", findings.accuracy(name, test_set)))
        edge_scores = (findings.edges.get("heldout") or {}).get(name) or {}
        for set_name, score in edge_scores.items():
            if set_name in REACH_SETS:
                rows.append(_row(name, *REACH_SETS[set_name], "heldout", score=score))
        if not edge_scores:  # a model whose notebook scored the held-out sets itself (in Keras)
            runs = findings.models[name][1].runs
            for key, point in KERAS_SETS.items():
                if all(key in r.metrics for r in runs):
                    scores = [r.metrics[key]["accuracy"] for r in runs]
                    rows.append(_row(name, *point, "heldout", scores, scored_in="keras"))
    return pd.DataFrame(rows)


def reach_caption(frame: pd.DataFrame, seeds: int, retrained: dict | None = None, exact_seeds: str = "") -> str:
    """The figure's caption (``templates/reach_caption.md.j2``); ``retrained``: the largest shift of one
    seed between a stored model and its retrained copy (:func:`predcalc.report.answer.retraining_shift`)."""
    held = frame[frame["source"] == "heldout"]
    in_keras = held["scored_in"] == "keras" if "scored_in" in held else pd.Series(False, index=held.index)
    keras = list(dict.fromkeys(held.loc[in_keras, "model"]))
    return " ".join(
        prose.say(
            "reach_caption.md.j2",
            scored=[short_name(m) for m in dict.fromkeys(held["model"]) if m not in ("scan_exact", *keras)],
            keras=[short_name(m) for m in keras],
            exact=short_name("scan_exact") if "scan_exact" in set(held["model"]) else None,
            exact_seeds=exact_seeds,
            seeds=seeds,
            retrained=retrained,
        )
    )


# The held-out edge suite's sets on the summary figure: (axis, distance from the box, tick label).
REACH_SETS = {
    "digits_exactly_2": ("digits", 2, "2 digits"),
    "digits_exactly_3": ("digits", 3, "3 digits"),
    "digits_exactly_4": ("digits", 4, "4 digits"),
    "terms_9_14": ("terms", 11, "9-14"),
    "terms_40": ("terms", 40, "40"),
    "terms_80": ("terms", 80, "80"),
}

# Held-out sets a notebook scored itself, in Keras (its runs' extra test sets): the 3-number digit sets.
KERAS_SETS = {
    "heldout_31/digits_exactly_2": ("digits", 2, "2 digits"),
    "heldout_31/digits_exactly_3": ("digits", 3, "3 digits"),
    "heldout_31/digits_exactly_4": ("digits", 4, "4 digits"),
    "heldout_5151/digits_6": ("digits", 6, "6 digits"),
}

# The trained exact scan's own held-out suite (a separate draw, scored through its ONNX files).
EXACT_SCAN_SETS = {
    "digits_3": ("digits", 3, "3 digits"),
    "digits_4": ("digits", 4, "4 digits"),
    "digits_6": ("digits", 6, "6 digits"),
    "terms_40": ("terms", 40, "40"),
    "terms_80": ("terms", 80, "80"),
    "terms_300": ("terms", 300, "300"),
}
