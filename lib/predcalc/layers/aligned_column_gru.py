"""A recurrence over digit columns aligned by significance: the digit models' recurrent baseline.

Example:
    >>> import numpy as np
    >>> layer = AlignedColumnGRU(units=8)
    >>> digits, sign = layer(np.zeros((2, 5, 42), "float32"))
    >>> tuple(digits.shape), tuple(sign.shape)
    ((2, 5, 10), (2, 2))
"""

from __future__ import annotations

import keras
from keras import ops

from predcalc.layers._common import positive_int


@keras.saving.register_keras_serializable(package="predcalc")
class AlignedColumnGRU(keras.layers.Layer):
    """Three GRU passes over columns of digits of equal significance, least significant first:
    forward, backward, forward, each reading the one before (a signed sum's digits need the carry
    from below and its sign from above). A dense map reads each column's features first.

    Input: ``(batch, columns, features)``, the column's features (in the digit models: each term's
    operator, sign and digit, one-hot). Outputs: ``digits`` logits ``(batch, columns, 10)``, one
    answer digit a column, and ``sign`` logits ``(batch, 2)`` (``+``, ``-``) from the first
    column's last pass. Every weight is learned; nothing adds or carries.
    """

    def __init__(self, units: int = 64, **kwargs):
        super().__init__(**kwargs)
        self.units = positive_int("units", units)
        self.read = keras.layers.Dense(self.units, activation="gelu", name="read")
        self.up = keras.layers.GRU(self.units, return_sequences=True, name="up")
        self.down = keras.layers.GRU(self.units, return_sequences=True, go_backwards=True, name="down")
        self.again = keras.layers.GRU(self.units, return_sequences=True, name="again")
        self.digit_head = keras.layers.Dense(10, name="digit_head")
        self.sign_head = keras.layers.Dense(2, name="sign_head")

    def build(self, input_shape):
        # the input's check here, where Keras passes a ValueError on as it is (from call it adds lines)
        if len(input_shape) != 3:
            raise ValueError(
                f"AlignedColumnGRU expects (batch, columns, features). Received: input_shape={input_shape}"
            )
        batch, columns, _ = input_shape
        self.read.build(input_shape)
        hidden = (batch, columns, self.units)
        self.up.build(hidden)
        self.down.build(hidden)
        self.again.build((batch, columns, 2 * self.units))
        self.digit_head.build((batch, columns, self.units))
        self.sign_head.build((batch, self.units))
        super().build(input_shape)

    def call(self, columns):
        if len(columns.shape) != 3:
            raise ValueError(f"AlignedColumnGRU expects (batch, columns, features), got {tuple(columns.shape)}")
        x = self.read(columns)
        up = self.up(x)
        down = ops.flip(self.down(up), axis=1)
        again = self.again(ops.concatenate([up, down], axis=-1))
        return self.digit_head(again), self.sign_head(again[:, 0, :])

    def compute_output_shape(self, input_shape):
        batch, columns, _ = input_shape
        return (batch, columns, 10), (batch, 2)

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units)
        return config
