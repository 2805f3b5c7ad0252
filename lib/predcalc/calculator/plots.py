"""The calculator study's figure: exact accuracy against digits, operators and depth."""

from __future__ import annotations

import textwrap

import numpy as np

from predcalc.calculator import tables
from predcalc.paths import save_figure


def plot_axes(results: dict, boxes: dict, path=None, labels: dict | None = None):
    """Exact accuracy against digits, operators and depth: one panel per axis, a grid of cells with
    one row per model and one column per family of that axis (ordered by the largest value it holds).

    ``results`` maps a model to its per-family summary (mean and worst seed). Each cell is coloured
    by the mean over seeds and prints it with the worst seed below, so models that share a score
    (many sit at 100 % or at 0 %) each keep a cell of their own instead of lines drawn on top of each
    other. Columns inside the training box are marked ``(in)``. ``labels`` name the rows (default
    :data:`~predcalc.calculator.tables.ABLATION_LABELS`)."""
    import matplotlib  # plotting only when a figure is drawn
    import matplotlib.pyplot as plt

    labels = {**tables.ABLATION_LABELS, **(labels or {})}
    models = list(results)
    figure, panels = plt.subplots(
        1, 3, figsize=(12.5, 1.4 + 0.62 * len(models)), sharey=True, gridspec_kw={"wspace": 0.06}
    )
    colours = matplotlib.colormaps["RdYlGn"]
    for panel, (axis, names) in zip(panels, tables.AXIS_FAMILIES.items()):
        names = sorted(names, key=lambda n: boxes[n][axis][1])
        mean = np.array([[100 * results[m][n]["mean"] for n in names] for m in models])
        worst = np.array([[100 * results[m][n]["min"] for n in names] for m in models])
        panel.imshow(mean, cmap=colours, vmin=0, vmax=100, aspect="auto")
        for i in range(len(models)):
            for j in range(len(names)):
                text = f"{mean[i, j]:.1f}" if mean[i, j] < 100 else "100"
                low = f"\n(min {worst[i, j]:.0f})" if worst[i, j] < mean[i, j] else ""
                dark = mean[i, j] < 20 or mean[i, j] > 85  # the colour map's dark ends
                panel.text(j, i, text + low, ha="center", va="center", fontsize=7, color="white" if dark else "black")
        inside = [boxes[n][axis][1] <= tables.TRAINING_BOX[axis] for n in names]
        panel.set_xticks(
            range(len(names)),
            [f"{boxes[n][axis][0]}-{boxes[n][axis][1]}" + (" (in)" if k else "") for n, k in zip(names, inside)],
            fontsize=7.5,
        )
        panel.set_xlabel(f"{axis} in the family")
        panel.set_yticks(range(len(models)), [textwrap.fill(labels.get(m, m), 48) for m in models], fontsize=7.5)
    figure.suptitle(
        "Exact answers (%), mean of seeds and the worst seed where lower; (in): inside the training box",
        fontsize=9.5,
    )
    figure.subplots_adjust(left=0.27, right=0.99, bottom=0.14, top=0.92)
    if path is not None:
        save_figure(figure, path)
    return figure
