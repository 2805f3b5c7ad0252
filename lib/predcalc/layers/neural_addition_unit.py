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

from predcalc.layers._arithmetic_unit import ArithmeticUnit
from predcalc.layers._rounding import Clamp, add_ramped_penalty, add_step_counter


@keras.saving.register_keras_serializable(package="predcalc")
class NeuralAdditionUnit(ArithmeticUnit):
    """The NAU: ``y = x W``, ``W`` clamped to [-1, 1] and regularised to -1, 0, 1 (module docstring)."""

    def build(self, input_shape):
        features = self.features(input_shape)
        limit = min(0.5, math.sqrt(3.0) * math.sqrt(2.0 / (features + self.units)))
        self.kernel = self.add_weight(
            name="kernel",
            shape=(features, self.units),
            initializer=keras.initializers.RandomUniform(-limit, limit),
            constraint=Clamp(1.0),
        )
        self.training_steps = add_step_counter(self)

    def call(self, inputs, training=False):
        kernel = ops.clip(self.kernel, -1.0, 1.0)  # the clamp in the forward pass too (the paper's)
        outputs = ops.matmul(ops.cast(inputs, self.compute_dtype), ops.cast(kernel, self.compute_dtype))
        add_ramped_penalty(self, [self.kernel], training)
        return outputs
