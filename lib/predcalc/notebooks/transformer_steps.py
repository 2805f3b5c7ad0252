"""Figures and tables of notebook 06 (transformer encoders, answers written as digits)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from predcalc.data import NumericTokenizer
from predcalc.readable import percent
from predcalc.models import get_spec, regression_values
from predcalc.models.registry import display_label
from predcalc.models.token_heads import PLAIN, REVERSED
from predcalc.models.transformer import attention_maps
from predcalc.notebooks.steps import ours
from predcalc.report.anchors import REFERENCE_ROWS
from predcalc.report.studies import shown_label
from predcalc.training import fit
from predcalc.training import metrics as M
from predcalc.training.experiment import Results, draw_losses

TEST_SETS = ("in", "out", "long")
READOUT_ROWS = ["sign", "slot 2", "slot 3", "slot 4", "slot 5"]


def unseen_share(answer_format, train_values, values) -> float:
    """Share of ``values`` whose encoding needs a (slot, token) pair no training answer has."""
    seen = {(slot, token) for ids in answer_format.encode(train_values) for slot, token in enumerate(ids)}
    return float(
        np.mean(
            [any((slot, token) not in seen for slot, token in enumerate(ids)) for ids in answer_format.encode(values)]
        )
    )


def unseen_shares(protocol) -> dict:
    """``{"plain"|"reversed": {test set: unseen_share}}`` for the in, out and long test sets."""
    splits = (("in", protocol.test_in), ("out", protocol.test_out), ("long", protocol.test_long))
    return {
        fmt_name: {name: unseen_share(fmt, protocol.train.values, split.values) for name, split in splits}
        for fmt_name, fmt in (("plain", PLAIN), ("reversed", REVERSED))
    }


def plot_losses(results, token_models):
    """Loss per epoch of each model's first seed: regression heads left, token heads right (a
    panel only for a kind of head the run trained), each panel's legend below it."""
    panels = {
        "regression heads: MSE": [n for n in results.models if n not in token_models],
        "token heads: cross-entropy per slot": [n for n in results.models if n in token_models],
    }
    panels = {title: names for title, names in panels.items() if names}
    rows = max(len(names) for names in panels.values())
    figure, axes = plt.subplots(
        1, len(panels), figsize=(6 * len(panels), 3.2 + 0.2 * rows), squeeze=False, layout="constrained"
    )
    for axis, (title, names) in zip(axes[0], panels.items()):
        draw_losses(axis, [results.models[name] for name in names])
        axis.set_title(title, fontsize=10)
    return figure


def long_by_terms(results, split) -> pd.DataFrame:
    """Absolute MAE of each model's first seed on ``split`` (the long set) by number of terms:
    one row per model, one column per count. Training expressions have 3 terms (5 tokens), so
    a count above 3 puts tokens at positions no training example filled."""

    counts = sorted(set(int(t) for t in split.terms))
    rows = []
    for result in results.models.values():
        error = np.abs(np.asarray(result.predictions[split.name], dtype=float) - split.values)
        rows.append(
            {
                "model": result.spec.label,
                **{f"{count} terms": round(float(error[split.terms == count].mean()), 3) for count in counts},
            }
        )
    return pd.DataFrame(rows)


def unparseable_shares(models: dict, token_models) -> dict:
    """``{label: {test set: share of unparseable answers over all seeds}}`` of the token heads
    among ``models`` (a ``metrics.json`` record's ``models``: label and runs of each)."""
    return {
        display_label(model["label"]): {
            test_set: sum(run["metrics"][test_set]["unparseable"] for run in model["runs"])
            / sum(run["metrics"][test_set]["n"] for run in model["runs"])
            for test_set in TEST_SETS
        }
        for name, model in models.items()
        if name in token_models
    }


def token_models(names) -> list[str]:
    """The models among ``names`` that write their answer as tokens (not one regression value)."""
    return [name for name in names if get_spec(name).predict_values is not regression_values]


def unparseable_table(unparseable: dict) -> pd.DataFrame:
    """:func:`unparseable_shares` as a table: a row per token head, its share (%) of unparseable
    answers on each test set."""
    return pd.DataFrame(
        [{"model": label, **{f"{k} %": 100 * v for k, v in shares.items()}} for label, shares in unparseable.items()]
    )


def token_labels(encoded_row, tokenizer) -> list[str]:
    return [
        ("pad" if v == tokenizer.pad else "+" if v == tokenizer.plus and i % 2 else "-" if i % 2 else f"{v:g}")
        for i, v in enumerate(encoded_row)
    ]


ATTENTION_MODELS = ("transformer4", "transformer5")
READOUT_MODELS = ("transformer_tokens_reversed", "transformer_tokens", "lstm_tokens_reversed")


def attention_figure(results, expression: str, stored=None):
    """Where the first transformer4/5 looks in each encoder layer for ``expression`` (weights averaged
    over heads) and which tokens the first token model's answer slots read, each trained in
    ``results`` or else (with ``stored``, a run folder) the first seed an earlier run stored there;
    and what that token model writes. Returns (the figure, or None without such a model; lines)."""
    encoded = NumericTokenizer().encode_batch([expression])
    encoders = first_seed_models(results, ATTENTION_MODELS, stored)[:1]
    readouts = first_seed_models(results, READOUT_MODELS, stored)[:1]
    panels = [
        (name, layer, weights[0].mean(axis=0))
        for name, trained in encoders
        for layer, weights in attention_maps(trained.model, encoded).items()
    ]
    panels += [
        (name, "digit_readout", attention_maps(trained.model, encoded)["digit_readout"][0].mean(axis=0))
        for name, trained in readouts
    ]
    answers = [readout_answer(trained, name, expression) for name, trained in readouts]
    return (plot_attention(panels, expression) if panels else None), answers


def first_seed_models(results, names, stored=None) -> list:
    """(name, first-seed TrainedModel) of each of ``names`` that ``results`` trained or, with
    ``stored`` (a run folder), that an earlier run stored there."""
    found = [(name, results.models[name].first) for name in names if name in results.models]
    missing = [name for name in names if name not in results.models]
    if stored is not None and missing:
        reloaded = Results.from_stored(stored, results.protocol, names=missing).models
        found += [(name, reloaded[name].first) for name in missing if name in reloaded]
    return sorted(found, key=lambda item: list(names).index(item[0]))


def plot_attention(panels, expression: str):
    """One heat map per (model, layer, weights) panel: rows attend to columns (the digit readout's
    rows are its answer slots)."""
    tokenizer = NumericTokenizer()
    labels = token_labels(tokenizer.encode_batch([expression])[0], tokenizer)
    figure, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.4), squeeze=False, layout="constrained")
    for axis, (name, layer, weights) in zip(axes[0], panels):
        image = axis.imshow(weights, cmap="viridis", vmin=0)
        figure.colorbar(image, ax=axis, fraction=0.046, pad=0.03)
        axis.set_title(f"{name}\n{layer}", fontsize=9)
        axis.set_xticks(range(len(labels)), labels, fontsize=6, rotation=90)
        rows = labels if layer != "digit_readout" else READOUT_ROWS
        axis.set_yticks(range(len(rows)), rows, fontsize=6)
    figure.suptitle(f"attention for {expression!r} (first seed)", fontsize=10)
    return figure


def readout_answer(trained, name: str, expression: str) -> str:
    """What a token model writes for ``expression``, slot by slot, and the value it decodes to."""
    answer_format = REVERSED if "reversed" in name else PLAIN
    logits = trained.model.predict(NumericTokenizer().encode_batch([expression]), verbose=0)
    return f"{name} writes {answer_format.text(np.argmax(logits, -1)[0])!r} -> {trained.predict([expression])[0]:g}"


def model_sizes(names) -> list[str]:
    """One line per model: its parameter count (beside the prior report's, where it has a row) and output shape."""
    lines = []
    for name in names:
        spec, model, _ = fit.build(name)
        reference_row = REFERENCE_ROWS.get(spec.reference_row or "")
        beside = f" (prior report: {reference_row['params']:,})" if reference_row else ""
        lines.append(
            f"{name:<28} {model.count_params():>8,} parameters{beside}  output {tuple(model.outputs[0].shape[1:])}"
        )
    return lines


# trained with the prior report's recipe (CLS or gated readout, AdamW schedule of the prior report), scored the prior report's way too
REFERENCE_RECIPE_MODELS = (
    "transformer4_reference",
    "transformer5_reference",
    "transformer4_gated",
    "transformer4_local",
    "transformer4_local_bounded",
)


def reference_recipe_lines(results, base_runs, epochs) -> list[str]:
    """The reference recipe's models (REFERENCE_RECIPE_MODELS) scored the prior report's way against the
    baseline FNN's runs ``base_runs``, each beside the prior report's published row; none without those runs."""

    reference_recipe = [name for name in REFERENCE_RECIPE_MODELS if name in results.models]
    if not (reference_recipe and base_runs and all(M.has_reference_way(r) for r in base_runs)):
        return []
    baseline = M.reference_baseline(base_runs)
    lines = []
    for name in reference_recipe:
        result = results.models[name]
        published = REFERENCE_ROWS[result.spec.reference_row]
        ours = M.reference_way([run["metrics"] for run in result.runs], baseline, published["long"])
        lines.append(
            f"{name} ({len(result.runs)} seed(s), {epochs} epochs at most): "
            + ", ".join(
                f"{key} {value:.4g}" + (f" ({published['long']})" if key == "MAE long" else "")
                for key, value in ours.items()
            )
        )
        lines.append(
            f"{'':>{len(name)}}  prior report: MAE in {published['mae_in']}, MRE in {published['mre_in']}, "
            f"MAE out {published['mae_out']}, MRE out {published['mre_out']}, MAE long "
            f"{published['mae_long']} ({published['long']}), score {published['score']}, p {published['p']}"
        )
    return lines


def conclusion_table(table, record: dict) -> pd.DataFrame:
    """The notebook's models from its comparison ``table`` and ``metrics.json`` ``record``, one row
    each (the regression models, then the token heads): parameters, seeds, the epoch budget and the
    run it comes from (this run, or one kept from an earlier run, by date), MAE and exact accuracy
    (%) in range, out of range and long, the prior report's published row beside it where it has
    one (its long MAE only where that is an absolute error), and a token head's unparseable share
    (%) out of range."""
    rows, models = ours(table), record["models"]
    tokens = token_models(models)
    unparseable = unparseable_shares(models, tokens)
    regression = [name for name in ("transformer4", "transformer5", *REFERENCE_RECIPE_MODELS) if name in models]
    out = []
    for name in regression + tokens:
        model, label = models[name], shown_label(name, models[name]["label"])
        row = rows.loc[label]
        published = REFERENCE_ROWS.get(model.get("reference_row") or "") if name in regression else None
        kept = model.get("kept_from")
        out.append(
            {
                "model": name,
                "params": int(row["params"]),
                "seeds": len(model["runs"]),
                "epochs at most": (kept or record)["parameters"]["epochs"],
                "run": f"kept from {kept['created'][:10]}" if kept else "this run",
                **{f"MAE {t}": row[f"MAE {t}"] for t in TEST_SETS},
                **{f"exact {t} %": 100 * row[f"acc {t}"] for t in TEST_SETS},
                "unparseable out %": 100 * unparseable[label]["out"] if label in unparseable else None,
                "prior report params": published["params"] if published else None,
                "prior report MAE in": published["mae_in"] if published else None,
                "prior report MAE out": published["mae_out"] if published else None,
                "prior report MAE long": published["mae_long"]
                if published and published.get("long") == "absolute"
                else None,
            }
        )
    return pd.DataFrame(out)


def digit_texts(table, record: dict, unseen: dict, train_values) -> dict[str, str]:
    """The texts the conclusion glues on writing digits: the best token head (:func:`best_token_head`)
    and its exact share out of range beside transformer4's (``best_head``, ``best_head_out``,
    ``transformer4_out``), the verdict ``digits_verdict`` ("more" where the head's share is higher,
    else "no more"), the training answers' span (``train_min``, ``train_max``) and the out-of-range
    answers that need a token a slot never held in training, written plainly and reversed
    (``unseen_plain``, ``unseen_reversed``)."""
    rows, models = ours(table), record["models"]
    best = best_token_head(table, record)
    best_out = rows.loc[shown_label(best, models[best]["label"])]["acc out"]
    regression_out = rows.loc[shown_label("transformer4", models["transformer4"]["label"])]["acc out"]
    return {
        "best_head": best,
        "best_head_out": percent(best_out),
        "transformer4_out": percent(regression_out),
        "digits_verdict": "more" if best_out > regression_out else "no more",
        "train_min": f"{np.min(train_values):g}",
        "train_max": f"{np.max(train_values):g}",
        "unseen_plain": percent(unseen["plain"]["out"]),
        "unseen_reversed": percent(unseen["reversed"]["out"]),
    }


def best_token_head(table, record: dict) -> str:
    """The token head of ``record`` with the most exact answers out of range in ``table``."""
    rows, models = ours(table), record["models"]
    return max(token_models(models), key=lambda n: rows.loc[shown_label(n, models[n]["label"])]["acc out"])
