"""Additive (Bahdanau) attention pooling, reference document 000 equations (11)-(14)."""

import keras
from keras import ops

from predcalc.layers._common import config_entries, positive_int


@keras.saving.register_keras_serializable(package="predcalc")
class AdditiveAttentionPooling(keras.layers.Layer):
    """Pools a sequence into one vector with additive (Bahdanau) attention.

    For the hidden states `h_1, ..., h_T` of a sequence (reference document 000
    "Findings", section 2.3):

    ```
    v_t     = tanh(W h_t + b)                         (11)
    e_t     = u^T v_t                                 (12)
    alpha_t = exp(e_t) / sum_j exp(e_j)               (13)
    c       = sum_t alpha_t h_t                       (14)
    ```

    `W` has shape `(units, features)` (stored as the prior report writes it, output
    dimension first; the prior report uses `units = features = 128`), `b` and the
    context vector `u` have shape `(units,)`. Masked (padded) time steps get
    an attention weight of exactly zero and the remaining weights sum to one;
    a sequence with every step masked gets all-zero weights and a zero
    context vector. The layer consumes the mask (its output has no time
    axis).

    Args:
        units: int or `None`. Size of `v_t` (rows of `W`). `None` (default)
            uses the feature size of the input, as in the prior report.
        kernel_initializer: initializer for `W`. Defaults to
            `"glorot_uniform"`.
        bias_initializer: initializer for `b`. Defaults to `"zeros"`.
        context_initializer: initializer for `u`. Defaults to
            `"glorot_uniform"`.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`,
            e.g. `name` and `dtype`.

    Call arguments:
        inputs: float tensor of shape `(batch, time, features)`, the hidden
            states `h_t`.
        mask: optional boolean tensor of shape `(batch, time)`, `True` for
            real steps. Passed automatically after a masking layer.
        return_attention_scores: bool. If `True`, return
            `(context, attention_weights)` instead of `context`.

    Returns:
        `context` of shape `(batch, features)`, and with
        `return_attention_scores=True` also the weights `alpha` of shape
        `(batch, time)`.

    Example:
        >>> hidden = np.random.default_rng(0).uniform(size=(2, 6, 8)).astype("float32")
        >>> context, alpha = AdditiveAttentionPooling(units=16)(hidden, return_attention_scores=True)
        >>> tuple(context.shape), tuple(alpha.shape)
        ((2, 8), (2, 6))
        >>> np.allclose(keras.ops.convert_to_numpy(alpha).sum(axis=-1), 1.0)  # a distribution per row
        True

    References:
        - Bahdanau, D., Cho, K., & Bengio, Y. (2016). Neural machine
          translation by jointly learning to align and translate.
          https://arxiv.org/abs/1409.0473
        - Yang, Z., et al. (2016). Hierarchical attention networks for
          document classification. NAACL. (The pooling form with a learned
          context vector `u`.)
    """

    def __init__(
        self,
        units=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        context_initializer="glorot_uniform",
        **kwargs,
    ):
        positive_int("units", units, allow_none=True)
        super().__init__(**kwargs)
        self.units = None if units is None else int(units)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.context_initializer = keras.initializers.get(context_initializer)
        self.supports_masking = True

    def build(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(
                "AdditiveAttentionPooling expects inputs of shape "
                f"(batch, time, features). Received: input_shape={input_shape}"
            )
        features = input_shape[-1]
        units = features if self.units is None else self.units
        self.kernel = self.add_weight(
            shape=(units, features),
            initializer=self.kernel_initializer,
            name="kernel",
        )
        self.bias = self.add_weight(shape=(units,), initializer=self.bias_initializer, name="bias")
        self.context_vector = self.add_weight(
            shape=(units,),
            initializer=self.context_initializer,
            name="context_vector",
        )

    def call(self, inputs, mask=None, return_attention_scores=False):
        v = ops.tanh(ops.matmul(inputs, ops.transpose(self.kernel)) + self.bias)  # (11) (batch, time, units)
        scores = ops.sum(v * self.context_vector, axis=-1)  # (12) (batch, time)
        if mask is not None:
            mask = ops.cast(mask, "bool")  # (batch, time)
            dtype = keras.backend.standardize_dtype(scores.dtype)
            large_negative = -3e4 if dtype == "float16" else -1e9
            scores = ops.where(mask, scores, ops.full_like(scores, large_negative))
        alpha = ops.softmax(scores, axis=-1)  # (13) (batch, time)
        if mask is not None:
            # Rows with every step masked would be uniform; make them zero.
            alpha = alpha * ops.cast(mask, alpha.dtype)
        context = ops.sum(ops.expand_dims(alpha, -1) * inputs, axis=1)  # (14) (batch, features)
        if return_attention_scores:
            return context, alpha
        return context

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        config = super().get_config()
        config.update(
            config_entries(self, ("units",), ("kernel_initializer", "bias_initializer", "context_initializer"))
        )
        return config
