"""One transformer encoder layer, seed document 002 equations (15)-(17)."""

import numbers

import keras
from keras import ops


def _positive_int(name, value, allow_none=False):
    if value is None and allow_none:
        return None
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value <= 0:
        raise ValueError(
            f"`{name}` must be a positive integer{' or None' if allow_none else ''}. "
            f"Received: {name}={value}"
        )
    return int(value)


def _rate(name, value):
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not 0 <= value < 1:
        raise ValueError(f"`{name}` must be a number in [0, 1). Received: {name}={value}")
    return float(value)


@keras.saving.register_keras_serializable(package="predcalc")
class TransformerEncoderBlock(keras.layers.Layer):
    """A transformer encoder layer: self-attention and a point-wise FFN (post-norm).

    For a sequence `X` of `d_model`-dimensional token vectors (seed document
    002 "Findings", section 3, after Vaswani et al.):

    ```
    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V                  (15)
    head_i    = Attention(X W_i^Q, X W_i^K, X W_i^V)
    MultiHead = Concat(head_1, ..., head_h) W^O
    Z         = LayerNorm(X + MultiHead(X, X, X))                      (16)
    FFN(Z)    = max(0, Z W_1 + b_1) W_2 + b_2                          (17)
    output    = LayerNorm(Z + FFN(Z))                                  (16)
    ```

    The projections `W^Q, W^K, W^V, W^O` carry biases, as in
    `keras.layers.MultiHeadAttention`, which computes equation (15) here as
    the named sub-layer `self_attention`. Dropout (off by default) is applied
    to the attention weights and to each sub-layer's output before the
    residual sum.

    Padding: with a mask (`True` for real tokens), a padded token is never
    attended to, and a padded token's own attention row is all zeros (its
    attention output is the output bias of `W^O`). The mask is passed on.

    Args:
        num_heads: int. Number of attention heads `h`.
        ffn_units: int. Width `d_FNN` of the point-wise FFN's hidden layer.
        key_dim: int or `None`. Size `d_k` of each head's queries, keys and
            values. `None` (default) uses `d_model / num_heads`, which must
            then divide evenly.
        dropout: float in [0, 1). Dropout rate. Defaults to `0.0`.
        activation: activation of the FFN's hidden layer. Defaults to
            `"relu"` (equation (17)).
        layer_norm_epsilon: float. Epsilon of both layer normalisations.
            Defaults to `1e-5`.
        kernel_initializer: initializer of every kernel. Defaults to
            `"glorot_uniform"`.
        bias_initializer: initializer of every bias. Defaults to `"zeros"`.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`,
            e.g. `name` and `dtype`.

    Call arguments:
        inputs: float tensor of shape `(batch, time, d_model)`.
        mask: optional boolean tensor of shape `(batch, time)`, `True` for
            real tokens. Passed automatically after a masking layer.
        training: bool, whether dropout is active.
        return_attention_scores: bool. If `True`, return
            `(outputs, attention_scores)`.

    Returns:
        `outputs` of shape `(batch, time, d_model)`, and with
        `return_attention_scores=True` also the softmax weights of equation
        (15), shape `(batch, num_heads, time, time)` (query, then key).

    Example:

    ```python
    x = np.random.uniform(size=(2, 5, 16)).astype("float32")
    block = TransformerEncoderBlock(num_heads=4, ffn_units=32)
    y, scores = block(x, return_attention_scores=True)
    y.shape, scores.shape  # (2, 5, 16), (2, 4, 5, 5)
    ```

    References:
        - Vaswani, A., et al. (2017). Attention is all you need.
          https://arxiv.org/abs/1706.03762
    """

    def __init__(
        self,
        num_heads,
        ffn_units,
        key_dim=None,
        dropout=0.0,
        activation="relu",
        layer_norm_epsilon=1e-5,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        num_heads = _positive_int("num_heads", num_heads)
        ffn_units = _positive_int("ffn_units", ffn_units)
        key_dim = _positive_int("key_dim", key_dim, allow_none=True)
        dropout = _rate("dropout", dropout)
        if not isinstance(layer_norm_epsilon, numbers.Real) or not layer_norm_epsilon > 0:
            raise ValueError(
                "`layer_norm_epsilon` must be a positive number. "
                f"Received: layer_norm_epsilon={layer_norm_epsilon}"
            )
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.ffn_units = ffn_units
        self.key_dim = key_dim
        self.dropout = dropout
        self.activation = keras.activations.get(activation)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def _initializers(self):
        return {
            "kernel_initializer": keras.initializers.get(
                keras.initializers.serialize(self.kernel_initializer)
            ),
            "bias_initializer": keras.initializers.get(
                keras.initializers.serialize(self.bias_initializer)
            ),
        }

    def build(self, input_shape):
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise ValueError(
                "TransformerEncoderBlock expects inputs of shape "
                "(batch, time, d_model) with a known d_model. "
                f"Received: input_shape={input_shape}"
            )
        d_model = input_shape[-1]
        key_dim = self.key_dim
        if key_dim is None:
            if d_model % self.num_heads:
                raise ValueError(
                    "With key_dim=None, d_model must be divisible by num_heads. "
                    f"Received: d_model={d_model}, num_heads={self.num_heads}"
                )
            key_dim = d_model // self.num_heads
        self.self_attention = keras.layers.MultiHeadAttention(
            num_heads=self.num_heads,
            key_dim=key_dim,
            dropout=self.dropout,
            dtype=self.dtype_policy,
            name="self_attention",
            **self._initializers(),
        )
        self.self_attention.build(input_shape, input_shape)
        self.attention_dropout = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="attention_dropout"
        )
        self.attention_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="attention_norm"
        )
        self.attention_norm.build(input_shape)
        self.ffn_inner = keras.layers.Dense(
            self.ffn_units,
            activation=self.activation,
            dtype=self.dtype_policy,
            name="ffn_inner",
            **self._initializers(),
        )
        self.ffn_inner.build(input_shape)
        self.ffn_outer = keras.layers.Dense(
            d_model, dtype=self.dtype_policy, name="ffn_outer", **self._initializers()
        )
        self.ffn_outer.build((*input_shape[:-1], self.ffn_units))
        self.ffn_dropout = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="ffn_dropout"
        )
        self.ffn_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="ffn_norm"
        )
        self.ffn_norm.build(input_shape)

    def call(self, inputs, mask=None, training=None, return_attention_scores=False):
        attention_mask = None
        if mask is not None:
            mask = ops.cast(mask, "bool")  # (batch, time)
            attention_mask = ops.logical_and(
                ops.expand_dims(mask, 1), ops.expand_dims(mask, 2)
            )  # (batch, query time, key time)
        attention = self.self_attention(
            inputs,
            inputs,
            attention_mask=attention_mask,
            training=training,
            return_attention_scores=return_attention_scores,
        )  # (15) (batch, time, d_model)
        if return_attention_scores:
            attention, scores = attention  # scores: (batch, heads, time, time)
        x = self.attention_norm(
            inputs + self.attention_dropout(attention, training=training)
        )  # (16) (batch, time, d_model)
        ffn = self.ffn_outer(self.ffn_inner(x))  # (17) (batch, time, d_model)
        outputs = self.ffn_norm(x + self.ffn_dropout(ffn, training=training))  # (16)
        if return_attention_scores:
            return outputs, scores
        return outputs

    def compute_mask(self, inputs, mask=None):
        return mask

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "ffn_units": self.ffn_units,
                "key_dim": self.key_dim,
                "dropout": self.dropout,
                "activation": keras.activations.serialize(self.activation),
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config
