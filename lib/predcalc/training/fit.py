"""Training and evaluation on the reference protocol with Keras' own fit and callbacks.

A seed fixes initialisation and shuffling (``keras.utils.set_random_seed``, plus op
determinism on TensorFlow); the protocol's own seed fixes the data.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import keras
import numpy as np

from predcalc.data import Protocol, Split, get_tokenizer
from predcalc.models import ModelSpec, get_spec
from predcalc.registry import Registry
from predcalc.training.metrics import regression_metrics


def set_seed(seed: int) -> None:
    """Fix Python, NumPy and backend random state; make TensorFlow ops deterministic."""
    keras.utils.set_random_seed(int(seed))
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_op_determinism()


@dataclasses.dataclass
class TrainedModel:
    """A fitted model with what it needs to predict, and how its training went."""

    spec: ModelSpec
    model: keras.Model
    tokenizer: object
    seed: int
    history: dict
    epochs: int
    seconds: float

    def predict(self, expressions) -> np.ndarray:
        """Predicted values of expressions (strings)."""
        return self.spec.predict_values(self.model, self.tokenizer.encode_batch(list(expressions)))

    @property
    def params(self) -> int:
        return int(self.model.count_params())


def make_tokenizer(spec: ModelSpec):
    return get_tokenizer(spec.tokenizer, **spec.tokenizer_config)


def build(name: str, seed: int = 0, **model_kwargs):
    """Build a registered model (seeded) and its tokeniser."""
    spec = get_spec(name)
    set_seed(seed)
    tokenizer = make_tokenizer(spec)
    return spec, spec.build(tokenizer, **model_kwargs), tokenizer


REFERENCE_PEAK_LEARNING_RATE = 1.42e-3  # the prior report's keras-tuner best trial for its transformers


def reference_schedule(epochs: int, steps_per_epoch: int, peak: float = REFERENCE_PEAK_LEARNING_RATE):
    """The prior report's transformer schedule: linear warm-up over floor(epochs / 10) + 1 epochs from 0
    to ``peak``, then cosine decay to 10 % of the peak over the remaining epochs."""
    warmup = (epochs // 10 + 1) * steps_per_epoch
    return keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0,
        decay_steps=max(epochs * steps_per_epoch - warmup, 1),
        alpha=0.1,
        warmup_target=peak,
        warmup_steps=warmup,
    )


@dataclasses.dataclass(frozen=True)
class Recipe:
    """An optimizer recipe: ``make(learning_rate, steps, epochs, peak) -> keras optimizer``, and the
    peak learning rate of its schedule when nobody names one (None: the recipe has no peak)."""

    make: Callable
    default_peak: float | None = None


OPTIMIZERS = Registry("optimizer")


def optimizer_recipe(name: str, default_peak: float | None = None):
    """Decorator: register ``make(learning_rate, steps, epochs, peak)`` as the optimizer ``name``
    (what a :class:`predcalc.models.Optimizer` names)."""

    def decorate(make):
        OPTIMIZERS.add(name, Recipe(make, default_peak))
        return make

    return decorate


@optimizer_recipe("adam")
def _adam(learning_rate, steps, epochs, peak):
    return keras.optimizers.Adam(learning_rate=learning_rate)


@optimizer_recipe("adam_cosine")
def _adam_cosine(learning_rate, steps, epochs, peak):
    """Adam, its rate decayed along a cosine to 0 over all steps."""
    return keras.optimizers.Adam(learning_rate=keras.optimizers.schedules.CosineDecay(learning_rate, max(steps, 1)))


@optimizer_recipe("adamw_cosine")
def _adamw_cosine(learning_rate, steps, epochs, peak):
    """AdamW, linear warm-up over the first 5 % of steps to ``learning_rate``, then cosine decay to 0."""
    schedule = keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0,
        decay_steps=max(steps, 1),
        warmup_target=learning_rate,
        warmup_steps=max(steps // 20, 1),
    )
    return keras.optimizers.AdamW(learning_rate=schedule)


@optimizer_recipe("adamw_reference", default_peak=REFERENCE_PEAK_LEARNING_RATE)
def _adamw_reference(learning_rate, steps, epochs, peak):
    """The prior report's transformer recipe: AdamW (weight decay 4e-3, beta_1 0.85, clipnorm 1.0) on
    :func:`reference_schedule` peaking at ``peak``, whatever ``learning_rate`` says (the notebook's rate
    is for the other models)."""
    epochs = epochs or 1
    schedule = reference_schedule(epochs, max(steps // epochs, 1), peak=peak)
    return keras.optimizers.AdamW(learning_rate=schedule, weight_decay=4e-3, beta_1=0.85, beta_2=0.999, clipnorm=1.0)


def reference_peak(spec: ModelSpec, override: float | None = None) -> float | None:
    """The peak learning rate ``spec`` trains with: ``override``, else the spec's own, else its
    recipe's default (None for a recipe without a peak)."""
    recipe = OPTIMIZERS[spec.optimizer.name]
    return next(
        (
            float(rate)
            for rate in (override, spec.optimizer.peak_learning_rate, recipe.default_peak)
            if rate is not None
        ),
        None,
    )


def make_optimizer(
    spec: ModelSpec,
    learning_rate: float,
    steps: int,
    epochs: int | None = None,
    peak_learning_rate: float | None = None,
):
    """The Keras optimizer of ``spec``'s recipe (:data:`OPTIMIZERS`), ``steps`` long; a recipe with a
    peak (``adamw_reference``) peaks at ``peak_learning_rate``, else the spec's, else its default."""
    if spec.optimizer.name not in OPTIMIZERS:
        raise ValueError(
            f"unknown optimizer {spec.optimizer.name!r} of {spec.name}; registered: {', '.join(OPTIMIZERS)}"
        )
    recipe = OPTIMIZERS[spec.optimizer.name]
    if peak_learning_rate is not None and recipe.default_peak is None:
        peaked = ", ".join(name for name, r in OPTIMIZERS.items() if r.default_peak is not None)
        raise ValueError(
            f"peak_learning_rate sets the schedule of {peaked} models; {spec.name} trains with "
            f"{spec.optimizer.name!r}. Received: peak_learning_rate={peak_learning_rate}"
        )
    peak = reference_peak(spec, peak_learning_rate)
    if peak is not None and not peak > 0:
        raise ValueError(f"peak_learning_rate must be positive. Received: {peak_learning_rate}")
    return recipe.make(learning_rate, steps, epochs, peak)


def builder_arguments(model_kwargs: dict | None) -> tuple[dict, float | None]:
    """Split a run's ``model_kwargs`` into the builder's arguments and ``peak_learning_rate``: the
    notebooks' and sweeps' one parameter per model (``model_kwargs``) carries both, and this is
    the one place that separates them (the peak goes to :func:`make_optimizer`)."""
    builder_kwargs = dict(model_kwargs or {})
    return builder_kwargs, builder_kwargs.pop("peak_learning_rate", None)


def train(
    name: str,
    protocol: Protocol,
    seed: int = 0,
    epochs: int = 200,
    batch_size: int = 32,
    patience: int = 20,
    learning_rate: float = 1e-3,
    model_kwargs: dict | None = None,
    verbose: int = 0,
    callbacks=(),
    peak_learning_rate: float | None = None,
) -> TrainedModel:
    """Fit a registered model on the protocol's training split.

    Early stopping watches the validation loss and restores the best weights; a spec's ``finish``
    step (if any) then runs on them, inside the timed training. ``model_kwargs`` go to the model's
    builder; ``peak_learning_rate`` to its optimizer (a run's ``model_kwargs`` may carry it too,
    :func:`builder_arguments`).
    """
    if epochs <= 0:
        raise ValueError(f"epochs must be positive. Received: epochs={epochs}")
    builder_kwargs, peak_from_kwargs = builder_arguments(model_kwargs)
    peak_learning_rate = peak_learning_rate if peak_learning_rate is not None else peak_from_kwargs
    spec, model, tokenizer = build(name, seed=seed, **builder_kwargs)
    x_train = tokenizer.encode_batch(protocol.train.expressions)
    y_train = spec.encode_targets(protocol.train.values, tokenizer)
    x_val = tokenizer.encode_batch(protocol.validation.expressions)
    y_val = spec.encode_targets(protocol.validation.values, tokenizer)
    steps = epochs * int(np.ceil(len(x_train) / batch_size))
    model.compile(
        optimizer=make_optimizer(spec, learning_rate, steps, epochs=epochs, peak_learning_rate=peak_learning_rate),
        loss=spec.loss,
    )
    stopper = keras.callbacks.EarlyStopping(monitor="val_loss", patience=patience, restore_best_weights=True)
    start = time.perf_counter()
    history = model.fit(
        x_train,
        y_train,
        validation_data=(x_val, y_val),
        epochs=epochs,
        batch_size=batch_size,
        shuffle=True,
        verbose=verbose,
        callbacks=[stopper, *callbacks],
    )
    if spec.finish is not None:
        spec.finish(model, x_train, y_train)
    seconds = time.perf_counter() - start
    return TrainedModel(
        spec=spec,
        model=model,
        tokenizer=tokenizer,
        seed=seed,
        history={k: [float(v) for v in vs] for k, vs in history.history.items()},
        epochs=len(history.history["loss"]),
        seconds=seconds,
    )


def evaluate(trained: TrainedModel, test_sets: dict[str, Split]) -> tuple[dict, dict]:
    """Metrics and predictions of a trained model on each test set."""
    metrics, predictions = {}, {}
    for name, split in test_sets.items():
        predictions[name] = trained.predict(split.expressions)
        metrics[name] = regression_metrics(split.values, predictions[name])
    return metrics, predictions


def run_record(trained: TrainedModel, metrics: dict) -> dict:
    """The JSON record of one training run (with the learned weights a spec names, if it names any)."""
    record = {
        "seed": trained.seed,
        "epochs": trained.epochs,
        "train_seconds": round(trained.seconds, 3),
        "best_val_loss": min(trained.history.get("val_loss", [float("nan")])),
        "metrics": metrics,
    }
    if trained.spec.learned_weights is not None:
        record["learned_weights"] = trained.spec.learned_weights(trained.model)
    return record
