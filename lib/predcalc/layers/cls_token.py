"""ClsToken: prepend a constant step to a sequence (the prior report's CLS token), as a layer."""

import keras
from keras import ops

from predcalc.layers._common import finite_number


@keras.saving.register_keras_serializable(package="predcalc")
class ClsToken(keras.layers.Layer):
    """Prepend one time step whose every feature is ``value``: ``(b, T, F) -> (b, T + 1, F)``.

    The prior report's transformers (``transformer_transformer4.py``) pad each numeric token sequence
    on the left with the value 15, embed it like any token and read the prediction from that
    first position after the encoder (CLS pooling). Done inside the model so the model reads
    the same 15 numeric tokens as every other one, and saves and exports without a ``Lambda``.

    Args:
        value: float, the CLS token's value. Defaults to ``15.0`` (the prior report's ``pad_value``).
    """

    def __init__(self, value=15.0, **kwargs):
        super().__init__(**kwargs)
        self.value = finite_number("value", value)

    def call(self, inputs):
        first = ops.ones_like(inputs[:, :1]) * ops.cast(self.value, inputs.dtype)
        return ops.concatenate([first, inputs], axis=1)

    def compute_output_shape(self, input_shape):
        steps = None if input_shape[1] is None else input_shape[1] + 1
        return (input_shape[0], steps, *input_shape[2:])

    def get_config(self):
        return {**super().get_config(), "value": self.value}
