"""Feed-forward networks of the seed: the baseline FNN and FNN2."""

from __future__ import annotations

import keras

from predcalc.models.registry import register_model


def dense_prelu_stack(tokenizer, hidden_units, name: str) -> keras.Model:
    """Dense layers each followed by a per-unit PReLU, and a linear output neuron."""
    inputs = keras.Input((tokenizer.length,), name="tokens")
    x = inputs
    for index, units in enumerate(hidden_units, start=1):
        x = keras.layers.Dense(units, name=f"dense_{index}")(x)
        x = keras.layers.PReLU(name=f"prelu_{index}")(x)
    outputs = keras.layers.Dense(1, name="value")(x)
    return keras.Model(inputs, outputs, name=name)


@register_model("fnn_baseline", label="FNN baseline (2 x 30 PReLU)", family="FNN", tokenizer="numeric")
def fnn_baseline(tokenizer, units: int = 30) -> keras.Model:
    """The seed's baseline: two Dense layers of 30 units with PReLU (score 1 by definition)."""
    return dense_prelu_stack(tokenizer, (units, units), name="fnn_baseline")


@register_model("fnn2", label="FNN2 (1 x 345 PReLU)", family="FNN", tokenizer="numeric",
                seed_row="FNN2 (1 x 345 PReLU)")
def fnn2(tokenizer, units: int = 345) -> keras.Model:
    """The seed's FNN2: one hidden layer of 345 units with PReLU (6,211 parameters)."""
    return dense_prelu_stack(tokenizer, (units,), name="fnn2")
