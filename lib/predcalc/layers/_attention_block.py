"""The attention + point-wise FFN sub-block shared by `TransformerEncoderBlock` and `DigitReadout`.

Seed document 002 equations (15)-(17): multi-head attention, residual and layer normalisation,
`max(0, x W1 + b1) W2 + b2`, residual and layer normalisation. The subclasses choose the queries
(the sequence itself, or learned slots) and the name of the attention layer.
"""

import numbers

import keras

from predcalc.layers._common import fresh_initializers, positive_int, rate


class AttentionBlock(keras.layers.Layer):
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
        num_heads = positive_int("num_heads", num_heads)
        ffn_units = positive_int("ffn_units", ffn_units)
        key_dim = positive_int("key_dim", key_dim, allow_none=True)
        dropout = rate("dropout", dropout)
        if not isinstance(layer_norm_epsilon, numbers.Real) or not layer_norm_epsilon > 0:
            raise ValueError(
                f"layer_norm_epsilon must be a positive number. Received: layer_norm_epsilon={layer_norm_epsilon}"
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
        return fresh_initializers(self, "kernel_initializer", "bias_initializer")

    def _key_dim(self, input_shape):
        """The heads' key size for inputs `(batch, time, d_model)`."""
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise ValueError(
                f"{type(self).__name__} expects inputs of shape "
                "(batch, time, d_model) with a known d_model. "
                f"Received: input_shape={input_shape}"
            )
        d_model = input_shape[-1]
        if self.key_dim is not None:
            return self.key_dim
        if d_model % self.num_heads:
            raise ValueError(
                "With key_dim=None, d_model must be divisible by num_heads. "
                f"Received: d_model={d_model}, num_heads={self.num_heads}"
            )
        return d_model // self.num_heads

    def _build_block(self, attention_name, query_shape, key_shape, key_dim):
        """Creates (as attribute `attention_name`), the attention, norms, dropouts and FFN."""
        d_model = key_shape[-1]
        attention = keras.layers.MultiHeadAttention(
            num_heads=self.num_heads,
            key_dim=key_dim,
            dropout=self.dropout,
            dtype=self.dtype_policy,
            name=attention_name,
            **self._initializers(),
        )
        setattr(self, attention_name, attention)
        attention.build(query_shape, key_shape)
        self.attention_dropout = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy, name="attention_dropout")
        self.attention_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="attention_norm"
        )
        self.attention_norm.build(query_shape)
        self.ffn_inner = keras.layers.Dense(
            self.ffn_units,
            activation=self.activation,
            dtype=self.dtype_policy,
            name="ffn_inner",
            **self._initializers(),
        )
        self.ffn_inner.build(query_shape)
        self.ffn_outer = keras.layers.Dense(d_model, dtype=self.dtype_policy, name="ffn_outer", **self._initializers())
        self.ffn_outer.build((*query_shape[:-1], self.ffn_units))
        self.ffn_dropout = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy, name="ffn_dropout")
        self.ffn_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="ffn_norm"
        )
        self.ffn_norm.build(query_shape)

    def _attend(self, attention, queries, keys, attention_mask, training, return_attention_scores):
        """Equations (15)-(17) for `queries` attending over `keys`."""
        attention_output = attention(
            queries,
            keys,
            attention_mask=attention_mask,
            training=training,
            return_attention_scores=return_attention_scores,
        )  # (15) (batch, queries, d_model)
        if return_attention_scores:
            attention_output, scores = attention_output  # scores: (batch, heads, queries, keys)
        x = self.attention_norm(
            queries + self.attention_dropout(attention_output, training=training)
        )  # (16) (batch, queries, d_model)
        ffn = self.ffn_outer(self.ffn_inner(x))  # (17) (batch, queries, d_model)
        outputs = self.ffn_norm(x + self.ffn_dropout(ffn, training=training))  # (16)
        if return_attention_scores:
            return outputs, scores
        return outputs

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
