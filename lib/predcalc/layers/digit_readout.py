"""Answer-slot readout: learned slot queries attend over an encoded sequence."""

import numbers

import keras
from keras import ops

from predcalc.layers.transformer_encoder_block import _positive_int, _rate


@keras.saving.register_keras_serializable(package="predcalc")
class DigitReadout(keras.layers.Layer):
    """Reads a fixed number of answer slots (sign, digits, end) from a sequence.

    Each of `slots` learned query vectors `q_s` attends over the encoded
    sequence `H` (from a transformer encoder, an LSTM, ...), in the form of a
    transformer decoder layer without self-attention (seed document 002,
    equations (15)-(17), with the queries taken from the learned slots):

    ```
    A = MultiHead(Q_slots, H, H)                         (15)
    Z = LayerNorm(Q_slots + A)                           (16)
    Y = LayerNorm(Z + max(0, Z W_1 + b_1) W_2 + b_2)     (16), (17)
    ```

    `Y` has one `d_model` vector per slot; a `Dense(vocabulary)` on top gives
    each slot's logits, decoded independently by argmax (no slot sees
    another slot's answer). Padded input steps (mask `False`) are never
    attended to; a sequence with every step padded gets all-zero attention.

    Args:
        slots: int. Number of answer slots.
        num_heads: int. Number of attention heads.
        ffn_units: int. Hidden width of the point-wise FFN.
        key_dim: int or `None`. Size of each head; `None` (default) uses
            `d_model / num_heads`, which must divide evenly.
        dropout: float in [0, 1). Dropout rate. Defaults to `0.0`.
        activation: activation of the FFN's hidden layer. Defaults to
            `"relu"`.
        layer_norm_epsilon: float. Defaults to `1e-5`.
        query_initializer: initializer of the slot queries. Defaults to
            `"glorot_uniform"`.
        kernel_initializer: initializer of every kernel. Defaults to
            `"glorot_uniform"`.
        bias_initializer: initializer of every bias. Defaults to `"zeros"`.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`.

    Call arguments:
        inputs: float tensor of shape `(batch, time, d_model)`.
        mask: optional boolean tensor of shape `(batch, time)`, `True` for
            real steps. Passed automatically after a masking layer.
        training: bool, whether dropout is active.
        return_attention_scores: bool. If `True`, return
            `(outputs, attention_scores)`.

    Returns:
        `outputs` of shape `(batch, slots, d_model)`, and with
        `return_attention_scores=True` also the attention weights of shape
        `(batch, num_heads, slots, time)`. The output carries no mask.

    Example:

    ```python
    encoded = np.random.uniform(size=(2, 15, 32)).astype("float32")
    readout = DigitReadout(slots=5, num_heads=4, ffn_units=64)
    readout(encoded).shape  # (2, 5, 32)
    ```
    """

    def __init__(
        self,
        slots,
        num_heads,
        ffn_units,
        key_dim=None,
        dropout=0.0,
        activation="relu",
        layer_norm_epsilon=1e-5,
        query_initializer="glorot_uniform",
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        slots = _positive_int("slots", slots)
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
        self.slots = slots
        self.num_heads = num_heads
        self.ffn_units = ffn_units
        self.key_dim = key_dim
        self.dropout = dropout
        self.activation = keras.activations.get(activation)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        self.query_initializer = keras.initializers.get(query_initializer)
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
                "DigitReadout expects inputs of shape (batch, time, d_model) "
                f"with a known d_model. Received: input_shape={input_shape}"
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
        slot_shape = (input_shape[0], self.slots, d_model)
        self.slot_queries = self.add_weight(
            shape=(self.slots, d_model),
            initializer=self.query_initializer,
            name="slot_queries",
        )
        self.cross_attention = keras.layers.MultiHeadAttention(
            num_heads=self.num_heads,
            key_dim=key_dim,
            dropout=self.dropout,
            dtype=self.dtype_policy,
            name="cross_attention",
            **self._initializers(),
        )
        self.cross_attention.build(slot_shape, input_shape)
        self.attention_dropout = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="attention_dropout"
        )
        self.attention_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="attention_norm"
        )
        self.attention_norm.build(slot_shape)
        self.ffn_inner = keras.layers.Dense(
            self.ffn_units,
            activation=self.activation,
            dtype=self.dtype_policy,
            name="ffn_inner",
            **self._initializers(),
        )
        self.ffn_inner.build(slot_shape)
        self.ffn_outer = keras.layers.Dense(
            d_model, dtype=self.dtype_policy, name="ffn_outer", **self._initializers()
        )
        self.ffn_outer.build((*slot_shape[:-1], self.ffn_units))
        self.ffn_dropout = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="ffn_dropout"
        )
        self.ffn_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="ffn_norm"
        )
        self.ffn_norm.build(slot_shape)

    def call(self, inputs, mask=None, training=None, return_attention_scores=False):
        batch = ops.shape(inputs)[0]
        d_model = inputs.shape[-1]
        queries = ops.broadcast_to(
            ops.expand_dims(ops.cast(self.slot_queries, inputs.dtype), 0),
            (batch, self.slots, d_model),
        )  # (batch, slots, d_model)
        attention_mask = None
        if mask is not None:
            key_mask = ops.expand_dims(ops.cast(mask, "bool"), 1)  # (batch, 1, time)
            attention_mask = ops.logical_and(
                key_mask, ops.ones((1, self.slots, 1), dtype="bool")
            )  # (batch, slots, time)
        attention = self.cross_attention(
            queries,
            inputs,
            attention_mask=attention_mask,
            training=training,
            return_attention_scores=return_attention_scores,
        )  # (15) (batch, slots, d_model)
        if return_attention_scores:
            attention, scores = attention  # scores: (batch, heads, slots, time)
        x = self.attention_norm(
            queries + self.attention_dropout(attention, training=training)
        )  # (16) (batch, slots, d_model)
        ffn = self.ffn_outer(self.ffn_inner(x))  # (17)
        outputs = self.ffn_norm(x + self.ffn_dropout(ffn, training=training))  # (16)
        if return_attention_scores:
            return outputs, scores
        return outputs

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "slots": self.slots,
                "num_heads": self.num_heads,
                "ffn_units": self.ffn_units,
                "key_dim": self.key_dim,
                "dropout": self.dropout,
                "activation": keras.activations.serialize(self.activation),
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "query_initializer": keras.initializers.serialize(self.query_initializer),
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config
