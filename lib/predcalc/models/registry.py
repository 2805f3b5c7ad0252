"""The model registry: every architecture the notebooks train, by name.

A model is registered with the tokeniser it reads and, where the seed published a row for
it, the name of that row in :mod:`predcalc.report.anchors`. Later architectures plug in with the
same decorator; nothing else in the pipeline needs to change.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np


def regression_values(model, inputs, batch_size: int = 256) -> np.ndarray:
    """Predicted values of a regression model: its single output, flattened."""
    return np.asarray(model.predict(inputs, batch_size=batch_size, verbose=0), dtype=np.float64).reshape(-1)


def identity_targets(values, tokenizer) -> np.ndarray:
    """Regression targets: the values themselves."""
    return np.asarray(values, dtype=np.float32)


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """What the pipeline needs to know about an architecture.

    ``encode_targets(values, tokenizer)`` turns true values into what the model is fitted on
    (the values for regression; character ids for a token-output head), and
    ``predict_values(model, inputs)`` turns the model's outputs back into values.
    ``finish(model, x_train, y_train)``, where given, runs after fitting (on the restored best
    weights) and may set weights in closed form, e.g. a least-squares readout.
    """

    name: str
    label: str
    family: str
    tokenizer: str
    build: Callable
    seed_row: str | None = None
    tokenizer_config: dict = dataclasses.field(default_factory=dict)
    predict_values: Callable = regression_values
    encode_targets: Callable = identity_targets
    loss: object = "mse"
    optimizer: str = "adam"
    finish: Callable | None = None
    peak_learning_rate: float | None = None  # adamw_seed models: the seed schedule's peak (None: the seed's)


MODELS: dict[str, ModelSpec] = {}


def register_model(name: str, *, label: str, family: str, tokenizer: str, seed_row: str | None = None,
                   tokenizer_config: dict | None = None, predict_values: Callable = regression_values,
                   encode_targets: Callable = identity_targets, loss="mse", optimizer: str = "adam",
                   finish: Callable | None = None, peak_learning_rate: float | None = None):
    """Decorator: register ``build(tokenizer, **kwargs) -> keras.Model`` under ``name``."""

    def decorate(build):
        if name in MODELS:
            raise ValueError(f"model {name!r} is registered twice")
        MODELS[name] = ModelSpec(name=name, label=label, family=family, tokenizer=tokenizer, build=build,
                                 seed_row=seed_row, tokenizer_config=dict(tokenizer_config or {}),
                                 predict_values=predict_values, encode_targets=encode_targets, loss=loss,
                                 optimizer=optimizer, finish=finish, peak_learning_rate=peak_learning_rate)
        return build

    return decorate


def get_spec(name: str) -> ModelSpec:
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; registered models: {', '.join(sorted(MODELS))}")
    return MODELS[name]
