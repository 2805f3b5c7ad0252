"""What the arithmetic units share (private: no layer here): the clamp of their weights and the
regulariser that pulls each weight to -1, 0 or 1, switched on along a linear ramp of training steps
(Madsen and Johansen 2020, "Neural Arithmetic Units").

The regulariser is ``strength * ramp * mean(min(|W|, 1 - |W|))``; ``ramp`` rises linearly from 0 at
training step ``ramp_start`` to 1 at ``ramp_end``, counted by a non-trainable ``training_steps``
weight of the layer (one count per training call).
"""

import keras
from keras import ops

from predcalc.layers._common import finite_number


@keras.saving.register_keras_serializable(package="predcalc")
class Clamp(keras.constraints.Constraint):
    """Clip a weight to ``[low, limit]`` after each optimizer update (NAU's clamp; ``low`` defaults to
    ``-limit``, the NMU clamps to ``[0, 1]``)."""

    def __init__(self, limit=1.0, low=None):
        self.limit = float(limit)
        self.low = -self.limit if low is None else float(low)

    def __call__(self, w):
        return ops.clip(w, self.low, self.limit)

    def get_config(self):
        config = {"limit": self.limit}
        if self.low != -self.limit:  # a symmetric clamp keeps the config it always had
            config["low"] = self.low
        return config


def rounding_penalty(weights):
    """``mean(min(|W|, |1 - |W||))`` over every entry of ``weights`` (0 exactly at -1, 0 and 1)."""
    parts = [ops.reshape(ops.minimum(ops.abs(w), ops.abs(1.0 - ops.abs(w))), (-1,)) for w in weights]
    return ops.mean(ops.concatenate(parts))


def checked_ramp(regularization, ramp_start, ramp_end):
    """The regulariser's strength and ramp as ``(float, int, int)``, or a ValueError naming the argument."""
    regularization = finite_number("regularization", regularization)
    if regularization < 0:
        raise ValueError(f"regularization must be >= 0. Received: regularization={regularization}")
    start, end = int(ramp_start), int(ramp_end)
    if not 0 <= start <= end:
        raise ValueError(f"need 0 <= ramp_start <= ramp_end. Received: ramp_start={ramp_start}, ramp_end={ramp_end}")
    return regularization, start, end


def add_step_counter(layer):
    """The non-trainable ``training_steps`` weight the ramp counts with."""
    return layer.add_weight(name="training_steps", shape=(), initializer="zeros", trainable=False, dtype="float32")


def ramp_factor(steps_done, ramp_start, ramp_end):
    """0 before ``ramp_start``, 1 after ``ramp_end``, linear between (a tensor like ``steps_done``)."""
    span = max(ramp_end - ramp_start, 1)
    return ops.clip((steps_done - ramp_start) / span, 0.0, 1.0)


def add_ramped_penalty(layer, weights, training):
    """In a training call: add ``layer.regularization * ramp * rounding_penalty(weights)`` to the
    layer's losses (when the strength is above 0) and count the step."""
    if not training:
        return
    if layer.regularization > 0:
        steps_done = ops.cast(layer.training_steps, layer.compute_dtype)
        ramp = ramp_factor(steps_done, layer.ramp_start, layer.ramp_end)
        penalty = rounding_penalty(weights)
        layer.add_loss(ops.cast(layer.regularization * ramp * penalty, keras.config.floatx()))
    layer.training_steps.assign_add(1.0)
