"""Answer-slot readout: learned slot queries attend over an encoded sequence."""

import keras
from keras import ops

from predcalc.layers._attention_block import AttentionBlock
from predcalc.layers._common import positive_int


@keras.saving.register_keras_serializable(package="predcalc")
class DigitReadout(AttentionBlock):
    """Reads a fixed number of answer slots (sign, digits, end) from a sequence.

    Each of `slots` learned query vectors `q_s` attends over the encoded
    sequence `H` (from a transformer encoder, an LSTM, ...), in the form of a
    transformer decoder layer without self-attention (reference document 002,
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
        key_dim, dropout, activation, layer_norm_epsilon, kernel_initializer,
            bias_initializer: as in `TransformerEncoderBlock` (the same
            attention and FFN sub-block).
        query_initializer: initializer of the slot queries. Defaults to
            `"glorot_uniform"`.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`.

    Call arguments:
        As `TransformerEncoderBlock`'s: `inputs` of shape `(batch, time,
        d_model)`, an optional `mask` (`True` for real steps), `training`
        and `return_attention_scores`.

    Returns:
        `outputs` of shape `(batch, slots, d_model)`, and with
        `return_attention_scores=True` also the attention weights of shape
        `(batch, num_heads, slots, time)`. The output carries no mask.

    Example:
        >>> encoded = np.random.default_rng(0).uniform(size=(2, 15, 32)).astype("float32")
        >>> readout = DigitReadout(slots=5, num_heads=4, ffn_units=64)
        >>> tuple(readout(encoded).shape)
        (2, 5, 32)
    """

    def __init__(self, slots, num_heads, ffn_units, *, query_initializer="glorot_uniform", **kwargs):
        slots = positive_int("slots", slots)
        super().__init__(num_heads, ffn_units, **kwargs)
        self.slots = slots
        self.query_initializer = keras.initializers.get(query_initializer)

    def build(self, input_shape):
        key_dim = self._key_dim(input_shape)
        d_model = input_shape[-1]
        slot_shape = (input_shape[0], self.slots, d_model)
        self.slot_queries = self.add_weight(
            shape=(self.slots, d_model),
            initializer=self.query_initializer,
            name="slot_queries",
        )
        self._build_block("cross_attention", slot_shape, input_shape, key_dim)

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
        return self._attend(
            self.cross_attention, queries, inputs, attention_mask, training, return_attention_scores
        )  # (batch, slots, d_model) [, scores (batch, heads, slots, time)]

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "slots": self.slots,
                "query_initializer": keras.initializers.serialize(self.query_initializer),
            }
        )
        return config
