"""Figures and tables of notebook 05 (bidirectional LSTM with additive attention): where
the attention looks, by example and by kind of token."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from predcalc.data import evaluate
from predcalc.data.tokenizers import signed_terms
from predcalc.models.recurrent import attention_weights

KINDS = ("number", "operator", "pad")


def token_labels(text: str, length: int) -> list[str]:
    """The signed terms and operators of ``text`` as the numeric tokens hold them, then "pad"."""
    items = signed_terms(text)
    return items + ["pad"] * (length - len(items))


def token_kind(label: str) -> str:
    return "pad" if label == "pad" else "operator" if label in ("+", "-") else "number"


def plot_attention_examples(trained, examples):
    """The attention weights over the tokens of each of ``examples`` (rows), each cell labelled with
    its token, each row with the expression, its value and the prediction."""
    length = trained.tokenizer.length
    alpha = attention_weights(trained.model, trained.tokenizer.encode_batch(examples))  # (examples, length)
    figure, axis = plt.subplots(figsize=(11, 0.7 * len(examples) + 1.2), layout="constrained")
    image = axis.imshow(alpha, cmap="viridis", aspect="auto", vmin=0)
    for row, text in enumerate(examples):
        for column, label in enumerate(token_labels(text, length)):
            axis.text(
                column,
                row,
                label,
                ha="center",
                va="center",
                fontsize=8,
                color="white" if alpha[row, column] < 0.6 * alpha.max() else "black",
            )
    predicted = trained.predict(examples)
    axis.set_yticks(
        range(len(examples)),
        [f"{t} = {float(evaluate(t)):g} (pred {p:.2f})" for t, p in zip(examples, predicted)],
        fontsize=8,
    )
    axis.set_xticks(range(length), [str(i) for i in range(1, length + 1)], fontsize=8)
    axis.set_xlabel("token position")
    figure.colorbar(image, ax=axis, label="attention weight")
    axis.set_title("BiLSTM + attention: attention weights over the tokens (first seed)")
    return figure


def attention_by_kind(trained, test_sets: dict, names=("in", "out", "long")):
    """Mean attention mass on numbers, operators and padding per test set, and the share of tokens
    that are padding."""
    rows = []
    for name in names:
        split = test_sets[name]
        weights = attention_weights(trained.model, trained.tokenizer.encode_batch(split.expressions))
        kinds = np.array(
            [
                [token_kind(label) for label in token_labels(text, trained.tokenizer.length)]
                for text in split.expressions
            ]
        )
        rows.append(
            {
                "test set": name,
                **{f"on {kind}s": float((weights * (kinds == kind)).sum(1).mean()) for kind in KINDS},
                "share of tokens that are pad": float((kinds == "pad").mean()),
            }
        )
    return pd.DataFrame(rows)
