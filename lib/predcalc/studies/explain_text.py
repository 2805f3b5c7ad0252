"""Figures and the prose of notebook 23 (explaining the calculators), built from the statistics
of ``predcalc.studies.explain``. Each ``*_summary`` returns Markdown; each ``plot_*`` a figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from predcalc.readable import share

LABELS = {"lstm": "LSTM", "gru": "GRU", "bilstm_attention": "BiLSTM + attention", "min_gru": "minGRU"}
MIN_GRU_KEEPS = 0.5  # a best unit that keeps at least half of the state carries the expression to the read-out


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


def ig_summary(ig_stats: dict, predictions: dict, expression: str, n: int, target_std: float) -> str:
    lines = [
        f"- **{LABELS[m]}** predicts {predictions[m]:.2f} for {expression!r}; over {n} expressions "
        f"{share(s['share_numbers'], 0)} of the attribution mass is on the numbers, "
        f"{share(s['share_operators'], 0)} on the operators and {share(s['share_padding'], 0)} on the "
        f"padding; the attribution of b correlates with the signed term op·b at r = {s['corr_b']:.2f} "
        f"(c: {s['corr_c']:.2f}, a with a: {s['corr_a']:.2f}); completeness gap at most "
        f"{s['completeness_max_gap']:.2g} (mean |f(x) - f(x')| {s['mean_abs_delta']:.2f})."
        for m, s in ig_stats.items()
    ]
    flat = [LABELS[m] for m, s in ig_stats.items() if s["mean_abs_delta"] < 0.1 * target_std]
    return (
        "**What the picture shows.** Each cell is one token's contribution to the prediction relative to an "
        "all-padding input (red raises, blue lowers it); the pads shown get 0 by construction (see above). A model "
        "that computes `a op b op c` should give each number an attribution that follows its signed term, so the "
        "correlations with op·b and op·c measure whether the operator has been applied:\n\n"
        + "\n".join(lines)
        + (
            f"\n\n{', '.join(flat)}: the output hardly moves between an expression and the all-padding input "
            f"(mean |f(x) - f(x')| below a tenth of the answers' standard deviation {target_std:.2f}), so the model "
            "predicts nearly a constant and its attributions describe noise, not a computation (section 3 shows why)."
            if flat
            else ""
        )
    )


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


def attention_summary(s: dict) -> str:
    return (
        f"**What the picture shows.** On average {share(s['mass_expression'], 0)} of the attention "
        f"falls on the five expression tokens and {share(s['mass_padding'], 0)} on the ten pads "
        f"(a uniform pooling would give 33 % and 67 %). The most attended position is {s['top_position']} "
        f"with mean weight {s['top_weight']:.3f} (uniform {s['uniform_weight']:.3f}). "
        "The BiLSTM states are bidirectional, so a pad state can already carry the whole expression: attention "
        "on padding is not attention on nothing, and attention weights alone do not say which *input* token "
        "mattered - that is what the integrated gradients above measure."
    )


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


def min_gru_keeps(retention: dict) -> bool:
    return "minGRU" in retention and retention["minGRU"]["max_unit"] >= MIN_GRU_KEEPS


def gate_summary(gate_stats: dict, retention: dict, parity: dict) -> str:
    notes = []
    if "LSTM forget f" in gate_stats:
        s, i = gate_stats["LSTM forget f"], gate_stats["LSTM input i"]
        notes.append(
            f"The LSTM's forget gate averages {s['numbers']:.2f} on number tokens, {s['operators']:.2f} on "
            f"operators and {s['padding']:.2f} on padding; its input gate {i['numbers']:.2f} "
            f"/ {i['operators']:.2f} / {i['padding']:.2f}."
        )
    if "GRU update z" in gate_stats:
        s = gate_stats["GRU update z"]
        notes.append(
            f"The GRU's update gate z (the share of the new candidate in h_t, reference eq. (10)) averages "
            f"{s['numbers']:.2f} on numbers, {s['operators']:.2f} on operators and {s['padding']:.2f} on padding."
        )
    if "minGRU update z" in gate_stats:
        s = gate_stats["minGRU update z"]
        notes.append(
            f"minGRU's z, which sees only the current token, averages {s['numbers']:.2f} / {s['operators']:.2f} "
            f"/ {s['padding']:.2f} (numbers / operators / padding): every pad has the same input, so its "
            "gate is one constant per unit - the state decays geometrically over the ten pads by the factor "
            "(1 - z) while being pulled toward the pad's candidate."
        )
    if retention:
        notes.append(
            "Over the ten pads the share of the position-4 state that survives is, for the median / best "
            "unit: "
            + "; ".join(f"{m} {r['median_unit']:.2g} / {r['max_unit']:.2g}" for m, r in retention.items())
            + ". For minGRU this product is the only path across the pads (its candidate sees just the "
            "constant pad token); LSTM and GRU candidates also read h_{t-1} (the GRU through its reset gate), so "
            "for them the product is a lower bound on what is carried."
        )
    if "minGRU" in retention:
        notes.append(
            f"minGRU's best unit keeps {retention['minGRU']['max_unit']:.2g} of its state over the pads: "
            + (
                "the padding does not erase what it read, so its failure lies elsewhere (see the conclusion)."
                if min_gru_keeps(retention)
                else "little of what it read reaches the read-out, which alone would make it predict a near-constant."
            )
        )
    return (
        "**What the picture shows.** Gate values averaged over units and expressions per position; padding shaded. "
        "A gate that stays open (close to 1 for forget, close to 0 for the GRU's update) across the padding keeps the "
        "result computed at position 4 until the read-out at position 14. "
        + " ".join(notes)
        + " The reference cells reproduce the Keras layers (max |h_T difference| "
        + ", ".join(f"{k} {v:.1g}" for k, v in parity.items())
        + "), so these are the trained models' own gates."
    )


def conclusion(quality, ig_stats: dict, attention_stats, retention: dict, epochs: int, ig_steps: int) -> str:
    best_corr = max(ig_stats, key=lambda n: ig_stats[n]["corr_b"])
    numbers_shares = ", ".join(f"{LABELS[n]} {share(s['share_numbers'], 0)}" for n, s in ig_stats.items())
    return (
        f"After {epochs} epochs the in-range MAE ranges from {quality['MAE in'].min():.3f} to "
        f"{quality['MAE in'].max():.3f}. Integrated gradients satisfy completeness to within "
        f"{max(s['completeness_max_gap'] for s in ig_stats.values()):.2g} with {ig_steps} steps. The model whose "
        f"attribution of b best follows the signed term op·b is {LABELS[best_corr]} (r = {ig_stats[best_corr]['corr_b']:.2f}); "
        f"numbers carry {numbers_shares} of the attribution mass (operators the rest; pads 0 by construction). "
        + (
            f"The BiLSTM puts {share(attention_stats['mass_expression'], 0)} of its attention on the five expression "
            "tokens. "
            if attention_stats
            else ""
        )
        + (
            (
                f"minGRU keeps up to {retention['minGRU']['max_unit']:.2g} of its state across the pads, yet its "
                f"attribution of b does not follow op·b (r = {ig_stats['min_gru']['corr_b']:.2f}): the padding is not what "
                "stops it. One minGRU layer has only a narrow path for applying an operator: its gates and candidate read "
                "only the current token, so its last state is sum_t z_t g(W x_t) prod_{s>t} (1 - z_s), a sum of per-token "
                "terms each scaled by the gates of the tokens *after* it. The operator before b reaches b only through the "
                "operator's own term times b's decay factor (1 - z), a positive factor below 1 shared with every later "
                "token; writing a signed ±b that way asks that factor to be linear in b, which this model did not find. "
                "Stacking a second layer (whose gates read the first layer's states, "
                "the `min_gru` model of 08_min_rnn) or a multiplicative read-out of a state that has seen the operator "
                "(30_beyond_reference) supplies the missing interaction. "
                if min_gru_keeps(retention)
                else f"Gate products over the padding leave at most {retention['minGRU']['max_unit']:.2g} of minGRU's "
                "post-expression state, and minGRU has no other path across the pads: removing the padding (reading the "
                "state at the last real token) or masking it is the fix to test. "
            )
            if "minGRU" in retention
            else ""
        )
        + "Attention and gates describe how information flows; integrated gradients say which input values moved "
        "the answer."
        + (
            ""
            if epochs >= 200
            else " These models trained for only a few epochs: run the full profile before reading "
            "these as properties of the architectures."
        )
    )
