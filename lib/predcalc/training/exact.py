"""Train the exact scan (``scan_exact``) on the protocol's training split, and its ablations.

The recipe (:class:`ExactRecipe`) is full-batch Adam on the mean squared error for ``steps``
steps, its learning rate decayed exponentially from ``learning_rate`` to ``final_learning_rate``,
the weights in float64. Every weight is set by gradient descent (and the clamp, which is part of
the optimizer's update); nothing is set or rounded after training. The elements that make the
result exact are named in :data:`ELEMENTS`; :data:`ABLATIONS` switches each off in turn.

Example:
    >>> trained = train_exact(reference_protocol(0), seed=0, recipe=ExactRecipe(steps=200))
    >>> trained.model.count_params()
    10
"""

from __future__ import annotations

import dataclasses
import time

import keras
import numpy as np

from predcalc.data import Protocol
from predcalc.models import get_spec
from predcalc.training.fit import TrainedModel, make_tokenizer, set_seed

MODEL = "scan_exact"


@dataclasses.dataclass(frozen=True)
class ExactRecipe:
    """How ``scan_exact`` trains: the optimizer's schedule, the number format and the layer's elements."""

    steps: int = 10_000
    learning_rate: float = 0.05
    final_learning_rate: float = 1e-7
    decay: bool = True  # False: the learning rate stays at ``learning_rate``
    dtype: str = "float64"
    straight_through: bool = True
    closed_init: bool = True
    clamp: bool = True
    clamp_limit: float = 1.0
    regularization: float = 0.1
    ramp_start: int = 2_000
    ramp_end: int = 5_000
    candidate_bias: bool = False
    units: int = 1
    # added after the first full run left seeds 3, 6 and 8 stuck in the training box; chosen on
    # development data (the protocol's in and long sets, 10 seeds) before the held-out draw of seed 5151
    soft_write_gradient: bool = True
    learn_offset: bool = False

    def layer_arguments(self) -> dict:
        return {
            "units": self.units,
            "dtype": self.dtype,
            "straight_through": self.straight_through,
            "closed_init": self.closed_init,
            "clamp": self.clamp,
            "clamp_limit": self.clamp_limit,
            "regularization": self.regularization,
            "ramp_start": self.ramp_start,
            "ramp_end": self.ramp_end,
            "candidate_bias": self.candidate_bias,
            "soft_write_gradient": self.soft_write_gradient,
            "learn_offset": self.learn_offset,
        }

    def scaled(self, steps: int) -> ExactRecipe:
        """The same recipe over ``steps`` steps, the ramp at the same fractions of training."""
        factor = steps / self.steps
        return dataclasses.replace(
            self, steps=steps, ramp_start=int(self.ramp_start * factor), ramp_end=int(self.ramp_end * factor)
        )


# element -> what it is, in the Method's words
ELEMENTS = {
    "straight_through": "straight-through gates: exactly 0 or 1 forward, the sigmoid's gradient backward",
    "closed_init": "gates start closed: small gate logits and a negative offset",
    "clamp": "the candidate, initial state and readout clamped to [-1, 1] after every update (NAU)",
    "clamp_at_one": "the clamp's limit is 1, the size of the solution's weights (a design choice)",
    "regularization": "the regulariser mean(min(|W|, 1 - |W|)) toward -1, 0 and 1",
    "ramp": "the regulariser ramped in over steps 2,000-5,000 of 10,000 (full strength from step 0 without it)",
    "decay": "the learning rate decayed exponentially from 0.05 to 1e-7",
    "float64": "weights and arithmetic in float64 while training",
    "no_bias": "no bias on the candidate (a bias is redundant for one-hot types)",
    "soft_write_gradient": "the candidate gets the soft gate's gradient while its straight-through gate is closed",
    "fixed_offset": "the gate's offset fixed at its start, -1 (not learned): a gate opens only through its type's logit",
}

# ablation name -> the recipe's fields changed (each switches one element of ELEMENTS off)
ABLATIONS = {
    "full": {},
    "no_straight_through": {"straight_through": False},
    "no_closed_init": {"closed_init": False},
    "no_clamp": {"clamp": False},
    "wide_clamp": {"clamp_limit": 2.0},
    "no_regularization": {"regularization": 0.0},
    "no_ramp": {"ramp_start": 0, "ramp_end": 0},
    "no_decay": {"decay": False},
    "float32": {"dtype": "float32"},
    "candidate_bias": {"candidate_bias": True},
    "no_soft_write_gradient": {"soft_write_gradient": False},
    "learned_offset": {"learn_offset": True},
}


def ablated(recipe: ExactRecipe, name: str) -> ExactRecipe:
    """``recipe`` with the element of ablation ``name`` switched off (:data:`ABLATIONS`)."""
    if name not in ABLATIONS:
        raise ValueError(f"unknown ablation {name!r}; choose one of {', '.join(ABLATIONS)}")
    changes = dict(ABLATIONS[name])
    if "ramp_start" in changes and recipe.steps != ExactRecipe.steps:
        changes = {"ramp_start": 0, "ramp_end": 0}
    return dataclasses.replace(recipe, **changes)


class _FullBatch(keras.utils.PyDataset):
    """The same full batch, ``steps`` times per epoch."""

    def __init__(self, x, y, steps: int):
        super().__init__()
        self.x, self.y, self.steps = x, y, steps

    def __len__(self):
        return self.steps

    def __getitem__(self, index):
        return self.x, self.y


TRAINING_TOKENS = 5  # a op b op c
LOG_EVERY = 100  # steps per logged loss (and per compiled execution)


def train_exact(
    protocol: Protocol, seed: int = 0, recipe: ExactRecipe = ExactRecipe(), callbacks=(), log_every: int = LOG_EVERY
) -> TrainedModel:
    """Train ``scan_exact`` on ``protocol.train`` (full batch) with ``recipe``; the validation split
    is not used (nothing is chosen by it). Returns a :class:`predcalc.training.fit.TrainedModel`
    whose ``history`` holds the training loss every ``log_every`` steps; ``callbacks``: Keras
    callbacks, called every ``log_every`` steps (an epoch here), that only read the model (or stop
    it: the same steps, fewer of them)."""
    if recipe.steps < log_every or recipe.steps % log_every:
        raise ValueError(f"steps must be a positive multiple of {log_every}. Received: steps={recipe.steps}")
    spec = get_spec(MODEL)
    set_seed(seed)
    tokenizer = make_tokenizer(spec)
    model = spec.build(tokenizer, **recipe.layer_arguments())
    # the training split's own length (3 numbers, 5 tokens): the model reads any length, and a short
    # input keeps each unrolled training step short
    train_tokens = type(tokenizer)(**{**tokenizer.get_config(), "length": TRAINING_TOKENS})
    x = train_tokens.encode_batch(protocol.train.expressions)
    y = np.asarray(protocol.train.values, dtype=np.float32).reshape(-1, 1)
    if recipe.decay:
        rate = keras.optimizers.schedules.ExponentialDecay(
            recipe.learning_rate, recipe.steps, recipe.final_learning_rate / recipe.learning_rate
        )
    else:
        rate = recipe.learning_rate
    # XLA: the same weights as without it here (seed 2, 10,000 steps), in about 60 % of the time
    jit = keras.backend.backend() == "tensorflow"
    model.compile(optimizer=keras.optimizers.Adam(rate), loss="mse", steps_per_execution=log_every, jit_compile=jit)
    epochs = recipe.steps // log_every
    start = time.perf_counter()
    history = model.fit(_FullBatch(x, y, log_every), epochs=epochs, verbose=0, callbacks=list(callbacks))
    seconds = time.perf_counter() - start
    return TrainedModel(
        spec=spec,
        model=model,
        tokenizer=tokenizer,
        seed=seed,
        history={k: [float(v) for v in vs] for k, vs in history.history.items()},
        epochs=epochs,
        seconds=seconds,
    )


def signed_sum_weights(model) -> dict:
    """The learned weights of ``scan_exact``'s layer, by name, as float64 lists."""
    layer = model.get_layer("signed_sum")
    return {
        w.name: np.asarray(keras.ops.convert_to_numpy(w), dtype=np.float64).reshape(-1).tolist()
        for w in layer.trainable_weights
    }
