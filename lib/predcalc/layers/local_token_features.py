"""LocalTokenFeatures: each token with its predecessor and the parity of its position."""

import math

import keras
from keras import ops

from predcalc.layers._common import finite_number


@keras.saving.register_keras_serializable(package="predcalc")
class LocalTokenFeatures(keras.layers.Layer):
    """Describe each step by itself, the step before it and the parity of its position:

        y_t = [x_t, x_{t-1}, (-1)^t],        x_{-1} = fill

    In the prior report's numeric tokens a number and an operator can share a value (``1`` and ``+``
    are both 1.0), and they alternate, so the parity of the position tells them apart and the
    previous step holds a number's operator. Unlike an absolute positional encoding, both
    features mean the same at every position, so a model reading them meets nothing new on a
    longer expression. The mask, if any, is passed on.

    Args:
        fill: the value of the step before the first. Defaults to ``0.5`` (the prior report's padding).

    Call arguments:
        inputs: ``(batch, steps, 1)``.

    Returns:
        ``(batch, steps, 3)``.
    """

    def __init__(self, fill=0.5, **kwargs):
        super().__init__(**kwargs)
        self.fill = finite_number("fill", fill)
        self.supports_masking = True

    def build(self, input_shape):
        if len(input_shape) != 3 or input_shape[-1] != 1:
            raise ValueError(f"LocalTokenFeatures takes (batch, steps, 1). Received: {input_shape}")

    def call(self, inputs):
        previous = ops.concatenate([ops.full_like(inputs[:, :1], self.fill), inputs[:, :-1]], axis=1)
        steps = ops.shape(inputs)[1]
        parity = ops.cos(math.pi * ops.cast(ops.arange(steps), inputs.dtype))
        parity = ops.round(parity)[None, :, None] * ops.ones_like(inputs)
        return ops.concatenate([inputs, previous, parity], axis=-1)

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], 3)

    def get_config(self):
        return {**super().get_config(), "fill": self.fill}
