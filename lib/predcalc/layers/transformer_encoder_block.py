"""One transformer encoder layer, reference document 002 equations (15)-(17)."""

import keras
from keras import ops

from predcalc.layers._attention_block import AttentionBlock


@keras.saving.register_keras_serializable(package="predcalc")
class TransformerEncoderBlock(AttentionBlock):
    """A transformer encoder layer: self-attention and a point-wise FFN (post-norm).

    For a sequence `X` of `d_model`-dimensional token vectors (reference document
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
        >>> x = np.random.default_rng(0).uniform(size=(2, 5, 16)).astype("float32")
        >>> block = TransformerEncoderBlock(num_heads=4, ffn_units=32)
        >>> y, scores = block(x, return_attention_scores=True)
        >>> tuple(y.shape), tuple(scores.shape)
        ((2, 5, 16), (2, 4, 5, 5))

    References:
        - Vaswani, A., et al. (2017). Attention is all you need.
          https://arxiv.org/abs/1706.03762
    """

    def build(self, input_shape):
        key_dim = self._key_dim(input_shape)
        self._build_block("self_attention", input_shape, input_shape, key_dim)

    def call(self, inputs, mask=None, training=None, return_attention_scores=False):
        attention_mask = None
        if mask is not None:
            mask = ops.cast(mask, "bool")  # (batch, time)
            attention_mask = ops.logical_and(
                ops.expand_dims(mask, 1), ops.expand_dims(mask, 2)
            )  # (batch, query time, key time)
        return self._attend(self.self_attention, inputs, inputs, attention_mask, training, return_attention_scores)

    def compute_mask(self, inputs, mask=None):
        return mask
