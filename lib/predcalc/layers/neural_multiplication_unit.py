"""NeuralMultiplicationUnit: the NMU of Madsen and Johansen (ICLR 2020, "Neural Arithmetic Units").

Each output is a product of gated inputs, with weights clamped to [0, 1] and pulled to 0 or 1:

    z_j = prod_i (W_ij x_i + 1 - W_ij)          (W: (features, units), clamped to [0, 1])
    loss += regularization * ramp * mean(min(|W|, 1 - |W|))

``W_ij = 1`` multiplies ``x_i`` into unit ``j``, ``W_ij = 0`` leaves it out (a factor 1), so a
trained unit multiplies a subset of its inputs exactly. ``W`` starts uniform in [0.25, 0.75]
(the paper's initialisation: mean 1/2). The regulariser ramps up between training steps
``ramp_start`` and ``ramp_end`` as the NAU's does. The product runs over the last axis, so a
sequence input ``(batch, steps, features)`` shares one ``W`` across its steps.

Args:
    units: output features (products).
    regularization: the regulariser's strength (0: none).
    ramp_start, ramp_end: the training steps between which the regulariser ramps up.

Example:
    >>> layer = NeuralMultiplicationUnit(2)
    >>> tuple(layer(keras.ops.ones((3, 4))).shape)
    (3, 2)
"""

import keras
from keras import ops

from predcalc.layers._arithmetic_unit import ArithmeticUnit
from predcalc.layers._rounding import Clamp, add_ramped_penalty, add_step_counter


@keras.saving.register_keras_serializable(package="predcalc")
class NeuralMultiplicationUnit(ArithmeticUnit):
    """The NMU: ``z_j = prod_i (W_ij x_i + 1 - W_ij)``, ``W`` clamped to [0, 1] (module docstring)."""

    def build(self, input_shape):
        features = self.features(input_shape)
        self.kernel = self.add_weight(
            name="kernel",
            shape=(features, self.units),
            initializer=keras.initializers.RandomUniform(0.25, 0.75),
            constraint=Clamp(1.0, low=0.0),
        )
        self.training_steps = add_step_counter(self)

    def call(self, inputs, training=False):
        kernel = ops.cast(ops.clip(self.kernel, 0.0, 1.0), self.compute_dtype)  # (features, units)
        x = ops.expand_dims(ops.cast(inputs, self.compute_dtype), -1)  # (..., features, 1)
        outputs = ops.prod(x * kernel + (1.0 - kernel), axis=-2)  # (..., units)
        add_ramped_penalty(self, [self.kernel], training)
        return outputs
