"""GatedValueSum: a regression readout that weighs each token's raw value by a learned gate."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="predcalc")
class GatedValueSum(keras.layers.Layer):
    """Sum the raw token values, each weighted by a gate read from its encoded features.

        g_t = w^T h_t + c,        y = sum_t g_t * v_t + b

    ``h_t`` is an encoder's feature vector at step ``t`` and ``v_t`` the token's own value
    (for the prior report's numeric tokens, the number itself). The value of ``a +- b +- c`` is such a
    sum with gates +1 or -1 on numbers and 0 on operators and padding, so the readout is
    linear in the numbers wherever the gates do not change with a number's size; only the gates
    have to be learned from context (which operator precedes a number). A pooled linear head instead reads the value
    through the encoder's normalisations and saturates outside the training range.

    Call arguments:
        inputs: ``[features, values]``: ``(batch, steps, d)`` and ``(batch, steps, 1)``.
        mask: optional, ``True`` for real steps; a masked step adds nothing to the sum.

    Returns:
        ``(batch, 1)``.

    Example:
        >>> layer = GatedValueSum()
        >>> tuple(layer([keras.ops.ones((2, 5, 8)), keras.ops.ones((2, 5, 1))]).shape)
        (2, 1)
    """

    def build(self, input_shape):
        features, values = input_shape
        if len(features) != 3 or len(values) != 3 or values[-1] != 1:
            raise ValueError(
                "GatedValueSum takes [features (batch, steps, d), values (batch, steps, 1)]. "
                f"Received: {features} and {values}"
            )
        if features[1] is not None and values[1] is not None and features[1] != values[1]:
            raise ValueError(f"features and values need the same steps. Received: {features[1]} and {values[1]}")
        self.gate_kernel = self.add_weight(shape=(features[-1], 1), initializer="glorot_uniform", name="gate_kernel")
        self.gate_bias = self.add_weight(shape=(1,), initializer="zeros", name="gate_bias")
        self.bias = self.add_weight(shape=(1,), initializer="zeros", name="bias")

    def call(self, inputs, mask=None):
        features, values = inputs
        gates = self.gates(features)
        terms = gates * ops.cast(values, gates.dtype)
        step_mask = None if mask is None else (mask[1] if mask[1] is not None else mask[0])
        if step_mask is not None:
            terms = terms * ops.cast(step_mask, terms.dtype)[..., None]
        return ops.sum(terms, axis=1) + self.bias

    def compute_mask(self, inputs, mask=None):
        return None

    def gates(self, features):
        """The gates ``g_t``, ``(batch, steps, 1)``, for plotting what the readout learned."""
        return ops.matmul(features, self.gate_kernel) + self.gate_bias

    def compute_output_shape(self, input_shape):
        return (input_shape[0][0], 1)
