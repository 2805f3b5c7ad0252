"""Figures, tables and prose of notebook 06 (transformer encoders, answers written as digits)."""

from __future__ import annotations

import numpy as np

from predcalc.data import NumericTokenizer
from predcalc.models.token_heads import PLAIN, REVERSED
from predcalc.models.transformer import attention_maps

TEST_SETS = ("in", "out", "long")
READOUT_ROWS = ["sign", "slot 2", "slot 3", "slot 4", "slot 5"]


def unseen_share(answer_format, train_values, values) -> float:
    """Share of ``values`` whose encoding needs a (slot, token) pair no training answer has."""
    seen = {(slot, token) for ids in answer_format.encode(train_values) for slot, token in enumerate(ids)}
    return float(np.mean([any((slot, token) not in seen for slot, token in enumerate(ids))
                          for ids in answer_format.encode(values)]))


def unseen_shares(protocol) -> dict:
    """``{"plain"|"reversed": {test set: unseen_share}}`` for the in, out and long test sets."""
    splits = (("in", protocol.test_in), ("out", protocol.test_out), ("long", protocol.test_long))
    return {fmt_name: {name: unseen_share(fmt, protocol.train.values, split.values) for name, split in splits}
            for fmt_name, fmt in (("plain", PLAIN), ("reversed", REVERSED))}


def plot_losses(results, token_models):
    """Loss per epoch of each model's first seed: regression heads left, token heads right (a
    panel only for a kind of head the run trained)."""
    import matplotlib.pyplot as plt

    panels = {"regression heads: MSE": [n for n in results.models if n not in token_models],
              "token heads: cross-entropy per slot": [n for n in results.models if n in token_models]}
    panels = {title: names for title, names in panels.items() if names}
    figure, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 3.6), squeeze=False)
    for axis, (title, names) in zip(axes[0], panels.items()):
        for name in names:
            result = results.models[name]
            line, = axis.plot(result.first.history["loss"], label=f"{result.spec.label} train")
            axis.plot(result.first.history["val_loss"], linestyle="--", color=line.get_color(), label="validation")
        axis.set_yscale("log")
        axis.set_xlabel("epoch")
        axis.set_title(title, fontsize=10)
        axis.legend(fontsize=7)
    figure.tight_layout()
    return figure


def long_by_terms(results, split) -> "pd.DataFrame":
    """Absolute MAE of each model's first seed on ``split`` (the long set) by number of terms:
    one row per model, one column per count. Training expressions have 3 terms (5 tokens), so
    a count above 3 puts tokens at positions no training example filled."""
    import numpy as np
    import pandas as pd

    counts = sorted(set(int(t) for t in split.terms))
    rows = []
    for result in results.models.values():
        error = np.abs(np.asarray(result.predictions[split.name], dtype=float) - split.values)
        rows.append({"model": result.spec.label,
                     **{f"{count} terms": round(float(error[split.terms == count].mean()), 3) for count in counts}})
    return pd.DataFrame(rows)


def unparseable_shares(results, token_models) -> dict:
    """``{label: {test set: share of unparseable answers over all seeds}}`` of the token heads."""
    return {result.spec.label: {test_set: sum(run["metrics"][test_set]["unparseable"] for run in result.runs)
                                / sum(run["metrics"][test_set]["n"] for run in result.runs)
                                for test_set in TEST_SETS}
            for name, result in results.models.items() if name in token_models}


def unparseable_markdown(unparseable: dict) -> str:
    return ("Unparseable answers of the token heads (share of each test set, all seeds):\n\n"
            + "\n".join(f"- {label}: " + ", ".join(f"{k} {100 * v:.1f} %" for k, v in shares.items())
                        for label, shares in unparseable.items()))


def token_labels(encoded_row, tokenizer) -> list[str]:
    return [("pad" if v == tokenizer.pad else "+" if v == tokenizer.plus and i % 2 else "-" if i % 2 else f"{v:g}")
            for i, v in enumerate(encoded_row)]


def attention_panels(results, expression: str) -> list:
    """(model, layer, weights averaged over heads) of the first transformer4/5 and the first token model."""
    encoded = NumericTokenizer().encode_batch([expression])
    attention_models = [name for name in ("transformer4", "transformer5") if name in results.models][:1]
    readout_models = [name for name in ("transformer_tokens_reversed", "transformer_tokens", "lstm_tokens_reversed")
                      if name in results.models][:1]
    panels = []
    for name in attention_models:
        panels += [(name, layer, maps[0].mean(axis=0))
                   for layer, maps in attention_maps(results.models[name].first.model, encoded).items()]
    for name in readout_models:
        maps = attention_maps(results.models[name].first.model, encoded)
        panels.append((name, "digit_readout", maps["digit_readout"][0].mean(axis=0)))
    return panels


def plot_attention(panels, expression: str):
    import matplotlib.pyplot as plt

    tokenizer = NumericTokenizer()
    labels = token_labels(tokenizer.encode_batch([expression])[0], tokenizer)
    figure, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.2), squeeze=False)
    for axis, (name, layer, weights) in zip(axes[0], panels):
        image = axis.imshow(weights, cmap="viridis", vmin=0)
        figure.colorbar(image, ax=axis, fraction=0.046, pad=0.03)
        axis.set_title(f"{name}\n{layer}", fontsize=9)
        axis.set_xticks(range(len(labels)), labels, fontsize=6, rotation=90)
        rows = labels if layer != "digit_readout" else READOUT_ROWS
        axis.set_yticks(range(len(rows)), rows, fontsize=6)
    figure.suptitle(f"attention for {expression!r}", fontsize=10)
    figure.tight_layout()
    return figure


def readout_answer(trained, name: str, expression: str) -> str:
    """What a token model writes for ``expression``, slot by slot, and the value it decodes to."""
    answer_format = REVERSED if "reversed" in name else PLAIN
    logits = trained.model.predict(NumericTokenizer().encode_batch([expression]), verbose=0)
    return f"{name} writes {answer_format.text(np.argmax(logits, -1)[0])!r} -> {trained.predict([expression])[0]:g}"


def model_sizes(names) -> list[str]:
    """One line per model: its parameter count (beside the seed's, when it has a seed row) and output shape."""
    from predcalc.report.anchors import SEED_ROWS
    from predcalc.training import fit

    lines = []
    for name in names:
        spec, model, _ = fit.build(name)
        seed_row = SEED_ROWS.get(spec.seed_row or "")
        beside = f" (seed: {seed_row['params']:,})" if seed_row else ""
        lines.append(f"{name:<28} {model.count_params():>8,} parameters{beside}  output {tuple(model.outputs[0].shape[1:])}")
    return lines


# trained with the seed's recipe (CLS or gated readout, AdamW seed schedule), scored the seed's way too
SEED_RECIPE_MODELS = ("transformer4_seed", "transformer5_seed", "transformer4_gated", "transformer4_local",
                      "transformer4_local_bounded")


def seed_recipe_lines(results, base_runs, epochs) -> list[str]:
    """The seed recipe's models (SEED_RECIPE_MODELS) scored the seed's way against the
    baseline FNN's runs ``base_runs``, each beside the seed's published row; none without those runs."""
    from predcalc.report.anchors import SEED_ROWS
    from predcalc.training import metrics as M

    seed_recipe = [name for name in SEED_RECIPE_MODELS if name in results.models]
    if not (seed_recipe and base_runs and all(M.has_seed_way(r) for r in base_runs)):
        return []
    baseline = M.seed_baseline(base_runs)
    lines = []
    for name in seed_recipe:
        result = results.models[name]
        published = SEED_ROWS[result.spec.seed_row]
        ours = M.seed_way([run["metrics"] for run in result.runs], baseline, published["long"])
        lines.append(f"{name} ({len(result.runs)} seed(s), {epochs} epochs at most): " + ", ".join(
            f"{key} {value:.4g}" + (f" ({published['long']})" if key == "MAE long" else "")
            for key, value in ours.items()))
        lines.append(f"{'':>{len(name)}}  seed published: MAE in {published['mae_in']}, MRE in {published['mre_in']}, "
                     f"MAE out {published['mae_out']}, MRE out {published['mre_out']}, MAE long "
                     f"{published['mae_long']} ({published['long']}), score {published['score']}, p {published['p']}")
    return lines


def conclusion(table, results, token_models, unparseable: dict, unseen: dict, protocol, seeds, epochs) -> str:
    ours = table[table.source != "published"].set_index("model")
    seed_rows = table[table.source == "published"].set_index("model")
    lines = []
    for name in ("transformer4", "transformer5", *SEED_RECIPE_MODELS):
        if name not in results.models:
            continue
        spec = results.models[name].spec
        row, published = ours.loc[spec.label], seed_rows.loc[spec.seed_row]
        lines.append(
            f"- **{name}** ({row['params']:,} parameters, seed {published['params']:,}; {len(seeds)} seed(s), "
            f"{epochs} epochs at most): "
            f"MAE in range **{row['MAE in']:.4f}** (seed {published['MAE in']}), out of range **{row['MAE out']:.3f}** "
            f"(seed {published['MAE out']}), long **{row['MAE long']:.3f}** (seed {published['MAE long']}); exact "
            f"{100 * row['acc in']:.1f} % / {100 * row['acc out']:.1f} % / {100 * row['acc long']:.1f} % (in / out / long).")
    for name in token_models:
        label = results.models[name].spec.label
        row = ours.loc[label]
        lines.append(
            f"- **{name}**: exact answers {100 * row['acc in']:.1f} % in range, {100 * row['acc out']:.1f} % out of range, "
            f"{100 * row['acc long']:.1f} % long; unparseable {100 * unparseable[label]['out']:.1f} % out of range; "
            f"MAE {row['MAE in']:.3f} / {row['MAE out']:.3f} / {row['MAE long']:.3f}.")
    if "transformer4" in results.models and token_models:
        regression = ours.loc[results.models["transformer4"].spec.label]
        best = max(token_models, key=lambda n: ours.loc[results.models[n].spec.label]["acc out"])
        best_row = ours.loc[results.models[best].spec.label]
        verdict = "more" if best_row["acc out"] > regression["acc out"] else "no more"
        lines.append(
            f"\nOut of range the best token head ({best}) answers {100 * best_row['acc out']:.1f} % exactly against "
            f"{100 * regression['acc out']:.1f} % for transformer4's rounded value: writing digits gives {verdict} exact "
            f"answers out of range in this run. The training answers span {protocol.train.values.min():g} to "
            f"{protocol.train.values.max():g}: {100 * unseen['plain']['out']:.1f} % of the out-of-range answers need a "
            f"token in a slot that never held it in training when written plainly, {100 * unseen['reversed']['out']:.1f} % "
            "reversed, which bounds what a slot-wise head can "
            "write without generalising across slots.")
    return "\n".join(lines) if lines else "_no model of this notebook was trained_"
