"""What the NAU and the NMU share as layers (private): their arguments, the input check, the rounding
penalty over their kernel, the output shape and the config. Each unit builds its own clamped kernel
and computes its own map (``neural_addition_unit.py``, ``neural_multiplication_unit.py``)."""

import keras

from predcalc.layers._common import positive_int
from predcalc.layers._rounding import checked_ramp, rounding_penalty


class ArithmeticUnit(keras.layers.Layer):
    """A unit with ``units`` outputs on the last axis, its ``kernel`` regularised towards whole values
    along a ramp of training steps (``regularization``, ``ramp_start``, ``ramp_end``)."""

    def __init__(self, units, regularization=0.1, ramp_start=1000, ramp_end=4000, **kwargs):
        super().__init__(**kwargs)
        self.units = positive_int("units", units)
        self.regularization, self.ramp_start, self.ramp_end = checked_ramp(regularization, ramp_start, ramp_end)

    def features(self, input_shape) -> int:
        """The input's last-axis size, or a ValueError naming the layer and the shape it got."""
        if len(input_shape) < 2 or input_shape[-1] is None:
            raise ValueError(f"{type(self).__name__} expects inputs of shape (..., features). Received: {input_shape}")
        return int(input_shape[-1])

    def penalty(self):
        """``mean(min(|W|, 1 - |W|))`` over the kernel (0 exactly when every weight is -1, 0 or 1)."""
        return rounding_penalty([self.kernel])

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.units)

    def get_config(self):
        config = super().get_config()
        config.update(
            units=self.units, regularization=self.regularization, ramp_start=self.ramp_start, ramp_end=self.ramp_end
        )
        return config
