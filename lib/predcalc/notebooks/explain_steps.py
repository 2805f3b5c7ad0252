"""Notebook 23's figures (integrated gradients, attention, gates), drawn from the statistics of
``predcalc.studies.explain``; the notebook's markdown reads them."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

LABELS = {"lstm": "LSTM", "gru": "GRU", "bilstm_attention": "BiLSTM + attention", "min_gru": "minGRU"}


def plot_integrated_gradients(example_ig, labels, expression: str, shares, n_expressions: int):
    """Heat map of one expression's attributions beside the class shares per model.

    ``shares`` has a row per model and ``share_<class>`` columns; a class whose share is 0 for every
    model (the padding: its tokens equal the all-padding baseline, so integrated gradients give it 0
    by construction) gets no bar and is named under the panel instead. The legend sits below the bars.
    """

    shown = example_ig.shape[1]
    tokens = (expression.split() + ["pad"] * shown)[:shown]
    fig, axes = plt.subplots(
        1, 2, figsize=(14, 4.2), gridspec_kw={"width_ratios": [1.3, 1]}, layout="constrained", squeeze=True
    )
    limit = np.abs(example_ig).max()
    image = axes[0].imshow(example_ig, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
    axes[0].set(
        xticks=range(shown),
        xticklabels=tokens,
        yticks=range(len(labels)),
        yticklabels=labels,
        title=f"integrated gradients for {expression!r}",
    )
    for (row, col), value in np.ndenumerate(example_ig):
        axes[0].text(col, row, f"{value:+.2f}", ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=axes[0])
    shares = shares.rename(columns=lambda c: c.removeprefix("share_"))
    zero = [c for c in shares.columns if np.allclose(shares[c].to_numpy(dtype=float), 0.0)]
    shares.drop(columns=zero).plot.bar(ax=axes[1], rot=0, legend=False)
    axes[1].set(
        title=f"share of |attribution| ({n_expressions} expressions)",
        ylabel="share of |attribution|",
        ylim=(0, 1),
        xlabel=f"{' and '.join(zero)}: 0 for every model (the baseline is all padding)" if zero else "",
    )
    axes[1].grid(axis="y", alpha=0.3)
    axes[1].legend(
        loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=max(len(shares.columns) - len(zero), 1), frameon=False
    )
    return fig


def plot_attention(alpha, alpha_example, expression: str):
    length = alpha.shape[1]
    fig, ax = plt.subplots(figsize=(10, 3.2))
    ax.bar(
        range(length),
        alpha.mean(0),
        yerr=alpha.std(0),
        color="tab:blue",
        alpha=0.6,
        label=f"mean over {len(alpha)} expressions (± std)",
    )
    ax.plot(range(length), alpha_example, "ko-", ms=4, label=repr(expression))
    ax.axvspan(4.5, length - 0.5, color="grey", alpha=0.15, label="padding")
    ax.set(xlabel="position", ylabel="attention weight", xticks=range(length), title="BiLSTM additive attention")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_gates(gates: dict, forget_example=None, expression: str = "", columns: int = 2):
    """Mean gate per position for each model; after them the LSTM forget gate of one expression.
    Panels in rows of ``columns`` (two: the figure stays about as tall as wide, legible at page width),
    each legend below its panel."""

    panels = len(gates) + (forget_example is not None)
    rows = -(-panels // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5.5 * columns, 3.6 * rows), squeeze=False, layout="constrained")
    axes = axes.ravel()
    for ax, (model_name, named) in zip(axes, gates.items()):
        for gate_name, values in named.items():
            length = values.shape[1]
            ax.plot(range(length), values.mean(axis=(0, 2)), "o-", ms=3, label=gate_name)
        ax.axvspan(4.5, length - 0.5, color="grey", alpha=0.15)
        ax.set(
            title=f"{model_name}: mean gate per position",
            xlabel="position (grey: padding)",
            ylabel="mean gate value",
            ylim=(0, 1),
        )
        ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=len(named), frameon=False)
    if forget_example is not None:
        ax = axes[len(gates)]
        image = ax.imshow(forget_example.T, aspect="auto", cmap="viridis", vmin=0, vmax=1)
        ax.set(title=f"LSTM forget gate, {expression!r}", xlabel="position", ylabel="unit")
        fig.colorbar(image, ax=ax)
    for ax in axes[panels:]:
        ax.remove()
    return fig
