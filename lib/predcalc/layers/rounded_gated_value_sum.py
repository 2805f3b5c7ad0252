"""RoundedGatedValueSum: GatedValueSum with its gates clipped to [-1, 1] and rounded straight through."""

import keras
from keras import ops

from predcalc.layers._common import check_bools
from predcalc.layers.gated_value_sum import GatedValueSum


@keras.saving.register_keras_serializable(package="predcalc")
class RoundedGatedValueSum(GatedValueSum):
    """The trained exact scan's elements carried to the transformer's gated readout:

        g_t = clip(w^T h_t + c, -1, 1),   forward round(g_t) in {-1, 0, 1}, backward the clipped g_t,
        y   = sum_t round(g_t) * v_t (+ b, only with ``use_bias``)

    The rounding is a straight-through estimator (Bengio et al. 2013): each number's coefficient is
    exactly -1, 0 or 1 in the forward pass, so a readout that picks the right coefficient is exact
    at any magnitude; the clip is the analogue of NAU's clamp for a gate that is an activation, not
    a weight. ``use_bias=False`` drops the output bias (a bias of a few 1e-6 breaks large sums).

    Example:
        >>> layer = RoundedGatedValueSum()
        >>> tuple(layer([keras.ops.ones((2, 5, 8)), keras.ops.ones((2, 5, 1))]).shape)
        (2, 1)
    """

    def __init__(self, use_bias=False, **kwargs):
        super().__init__(**kwargs)
        check_bools(use_bias=use_bias)
        self.use_bias = use_bias

    def build(self, input_shape):
        super().build(input_shape)
        if not self.use_bias:
            self.bias.assign(ops.zeros(self.bias.shape, dtype=self.bias.dtype))
            self.bias.trainable = False

    def gates(self, features):
        clipped = ops.clip(super().gates(features), -1.0, 1.0)
        return clipped + ops.stop_gradient(ops.round(clipped) - clipped)

    def get_config(self):
        return {**super().get_config(), "use_bias": self.use_bias}
