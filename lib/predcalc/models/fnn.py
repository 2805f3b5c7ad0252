"""Feed-forward networks of the prior report: the baseline FNN and FNN2."""

from __future__ import annotations

from pathlib import Path

import h5py
import keras
import numpy as np

from predcalc.models.registry import register_model, register_preset

FEED_FORWARD = "feed-forward network"  # the families table's row


def dense_prelu_stack(tokenizer, hidden_units, name: str) -> keras.Model:
    """Dense layers each followed by a per-unit PReLU, and a linear output neuron."""
    inputs = keras.Input((tokenizer.length,), name="tokens")
    x = inputs
    for index, units in enumerate(hidden_units, start=1):
        x = keras.layers.Dense(units, name=f"dense_{index}")(x)
        x = keras.layers.PReLU(name=f"prelu_{index}")(x)
    outputs = keras.layers.Dense(1, name="value")(x)
    return keras.Model(inputs, outputs, name=name)


@register_model(
    "fnn_baseline",
    label="FNN baseline (2 x 30 PReLU)",
    family="FNN",
    tokenizer="numeric",
    findings_family=FEED_FORWARD,
    short_name="FNN 2 x 30 (baseline)",
)
def fnn_baseline(tokenizer, units: int = 30) -> keras.Model:
    """The prior report's baseline: two Dense layers of 30 units with PReLU (score 1 by definition)."""
    return dense_prelu_stack(tokenizer, (units, units), name="fnn_baseline")


@register_model(
    "fnn2",
    label="FNN2 (1 x 345 PReLU)",
    family="FNN",
    tokenizer="numeric",
    reference_row="FNN2 (1 x 345 PReLU)",
    findings_family=FEED_FORWARD,
    short_name="FNN 1 x 345 (prior report's FNN2)",
)
def fnn2(tokenizer, units: int = 345, name: str = "fnn2") -> keras.Model:
    """The prior report's FNN2: one hidden layer of 345 units with PReLU (6,211 parameters)."""
    return dense_prelu_stack(tokenizer, (units,), name=name)


# FNN2 as the prior report built it, trained with Adam whose rate decays along a cosine,
# lr_t = lr_0 (1 + cos(pi t / T)) / 2 over all T steps of the run, instead of a constant 1e-3.
register_preset(
    "fnn2_cosine",
    "fnn2",
    label="FNN2, Adam with cosine decay (1 x 345 PReLU)",
    optimizer="adam_cosine",
    arguments={"name": "fnn2_cosine"},
    findings_family=FEED_FORWARD,
    short_name="FNN 1 x 345, cosine schedule",
)


REFERENCE_FNN2_WEIGHTS = Path(__file__).parent / "reference_weights" / "FNN2_weights.weights.h5"


def load_reference_fnn2_weights(model: keras.Model, path=REFERENCE_FNN2_WEIGHTS) -> keras.Model:
    """Set an FNN2's weights from the prior report's ``FNN2_weights.weights.h5`` (a Keras 3 Sequential of
    Flatten, Dense(345), PReLU, Dense(1)), mapping its layer names onto this model's."""

    with h5py.File(path, "r") as file:

        def read(layer):
            group = file["layers"][layer]["vars"]
            return [np.asarray(group[str(i)]) for i in range(len(group))]

        model.get_layer("dense_1").set_weights(read("dense"))
        model.get_layer("prelu_1").set_weights(read("p_re_lu"))
        model.get_layer("value").set_weights(read("dense_1"))
    return model


@register_model(
    "fnn2_reference_weights",
    label="FNN2, the prior report's own weights",
    family="FNN",
    tokenizer="numeric",
    reference_row="FNN2 (1 x 345 PReLU)",
)
def fnn2_reference_weights(tokenizer, path: str | None = None) -> keras.Model:
    """The prior report's trained FNN2 (its weights file, not trained here): score it, do not fit it."""
    model = dense_prelu_stack(tokenizer, (345,), name="fnn2_reference_weights")
    return load_reference_fnn2_weights(model, path or REFERENCE_FNN2_WEIGHTS)
