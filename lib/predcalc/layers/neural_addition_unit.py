"""NeuralAdditionUnit: the NAU of Madsen and Johansen (ICLR 2020, "Neural Arithmetic Units").

A linear map without bias whose weights are clamped to [-1, 1] and pulled to -1, 0 or 1:

    y = x W                                     (W: (features, units), clamped to [-1, 1])
    loss += regularization * ramp * mean(min(|W|, 1 - |W|))

so a trained unit adds and subtracts some of its inputs exactly. ``W`` starts uniform in
``[-r, r]``, ``r = min(0.5, sqrt(3) * sqrt(2 / (features + units)))`` (the paper's initialisation).
The regulariser is off (``ramp`` 0) for the first ``ramp_start`` training steps and reaches full
strength at ``ramp_end`` (the layer counts its training calls). The map acts on the last axis, so a
sequence input ``(batch, steps, features)`` shares one ``W`` across its steps.

Args:
    units: output features.
    regularization: the regulariser's strength (0: none).
    ramp_start, ramp_end: the training steps between which the regulariser ramps up.

Example:
    >>> layer = NeuralAdditionUnit(2)
    >>> tuple(layer(keras.ops.ones((3, 4))).shape)
    (3, 2)
"""

import math

import keras
from keras import ops

from predcalc.layers._common import positive_int
from predcalc.layers._rounding import Clamp, add_ramped_penalty, add_step_counter, checked_ramp, rounding_penalty


@keras.saving.register_keras_serializable(package="predcalc")
class NeuralAdditionUnit(keras.layers.Layer):
    """The NAU: ``y = x W``, ``W`` clamped to [-1, 1] and regularised to -1, 0, 1 (module docstring)."""

    def __init__(self, units, regularization=0.1, ramp_start=1000, ramp_end=4000, **kwargs):
        super().__init__(**kwargs)
        self.units = positive_int("units", units)
        self.regularization, self.ramp_start, self.ramp_end = checked_ramp(regularization, ramp_start, ramp_end)

    def build(self, input_shape):
        if len(input_shape) < 2 or input_shape[-1] is None:
            raise ValueError(f"NeuralAdditionUnit expects inputs of shape (..., features). Received: {input_shape}")
        features = int(input_shape[-1])
        limit = min(0.5, math.sqrt(3.0) * math.sqrt(2.0 / (features + self.units)))
        self.kernel = self.add_weight(
            name="kernel",
            shape=(features, self.units),
            initializer=keras.initializers.RandomUniform(-limit, limit),
            constraint=Clamp(1.0),
        )
        self.training_steps = add_step_counter(self)

    def penalty(self):
        """``mean(min(|W|, 1 - |W|))`` (0 exactly when every weight is -1, 0 or 1)."""
        return rounding_penalty([self.kernel])

    def call(self, inputs, training=False):
        kernel = ops.clip(self.kernel, -1.0, 1.0)  # the clamp in the forward pass too (the paper's)
        outputs = ops.matmul(ops.cast(inputs, self.compute_dtype), ops.cast(kernel, self.compute_dtype))
        add_ramped_penalty(self, [self.kernel], training)
        return outputs

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.units)

    def get_config(self):
        config = super().get_config()
        config.update(
            units=self.units, regularization=self.regularization, ramp_start=self.ramp_start, ramp_end=self.ramp_end
        )
        return config
