"""Bidirectional LSTM followed by additive attention pooling (seed 000, 2.3)."""

import numbers

import keras

from predcalc.layers._common import config_entries, positive_int, rate
from predcalc.layers.additive_attention_pooling import AdditiveAttentionPooling


@keras.saving.register_keras_serializable(package="predcalc")
class BidirectionalLSTMAttention(keras.layers.Layer):
    """Bidirectional LSTM encoder pooled by additive attention into one vector.

    The architecture of reference document 000 ("Findings"), section 2.3: a
    forward and a backward LSTM read the sequence, their hidden states are
    concatenated, `h_t = [h_t(forward), h_t(backward)]` of size `2 * units`,
    and attention pooling (equations (11)-(14), see
    `AdditiveAttentionPooling`) turns them into the context vector

    ```
    v_t = tanh(W h_t + b),  e_t = u^T v_t,  alpha = softmax(e),  c = sum_t alpha_t h_t
    ```

    The prior report uses `units = 64` (so `h_t` has 128 features) and
    `attention_units = 128`. The two sub-layers, `bidirectional_lstm`
    (`keras.layers.Bidirectional(keras.layers.LSTM(units,
    return_sequences=True))`) and `attention_pooling`
    (`AdditiveAttentionPooling`), are created and built in `build()`. A mask
    (e.g. from `Embedding(mask_zero=True)`) is passed to both: the LSTMs skip
    padded steps and the attention gives them zero weight.

    Args:
        units: int. Units of each LSTM direction; the context vector has
            `2 * units` features. Must be positive.
        attention_units: int or `None`. Rows of the attention matrix `W`.
            `None` (default) uses `2 * units`.
        dropout: float in `[0, 1)`. Input dropout of the LSTMs. Defaults to 0.
        recurrent_dropout: float in `[0, 1)`. Recurrent dropout of the LSTMs.
            Defaults to 0.
        kernel_initializer: initializer for the LSTM input kernels and the
            attention matrix `W`. Defaults to `"glorot_uniform"`.
        recurrent_initializer: initializer for the LSTM recurrent kernels.
            Defaults to `"orthogonal"`.
        bias_initializer: initializer for the LSTM and attention biases
            (the LSTM forget-gate bias still starts at one). Defaults to
            `"zeros"`.
        seed: int or `None`. Random seed for dropout.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`,
            e.g. `name` and `dtype`.

    Call arguments:
        inputs: float tensor of shape `(batch, time, features)`.
        mask: optional boolean tensor of shape `(batch, time)`, `True` for
            real steps. Passed automatically after a masking layer.
        training: bool. Whether dropout is active.
        return_attention_scores: bool. If `True`, return
            `(context, attention_weights)` instead of `context`.

    Returns:
        `context` of shape `(batch, 2 * units)`, and with
        `return_attention_scores=True` also the weights of shape
        `(batch, time)`.

    Example:
        >>> tokens = keras.Input(shape=(None,), dtype="int32")
        >>> embedded = keras.layers.Embedding(20, 8, mask_zero=True)(tokens)
        >>> context = BidirectionalLSTMAttention(16)(embedded)
        >>> tuple(context.shape)  # both directions' 16 units
        (None, 32)
        >>> model = keras.Model(tokens, keras.layers.Dense(1)(context))
        >>> tuple(model(np.array([[3, 1, 4, 0, 0]])).shape)  # the padding (0) is masked
        (1, 1)

    References:
        - Hochreiter, S., & Schmidhuber, J. (1997). Long short-term memory.
          Neural Computation, 9(8), 1735-1780.
        - Schuster, M., & Paliwal, K. K. (1997). Bidirectional recurrent
          neural networks. IEEE Transactions on Signal Processing, 45(11).
        - Bahdanau, D., Cho, K., & Bengio, Y. (2016). Neural machine
          translation by jointly learning to align and translate.
          https://arxiv.org/abs/1409.0473
    """

    def __init__(
        self,
        units,
        attention_units=None,
        dropout=0.0,
        recurrent_dropout=0.0,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = positive_int("units", units)
        self.attention_units = positive_int("attention_units", attention_units, allow_none=True)
        self.dropout = rate("dropout", dropout)
        self.recurrent_dropout = rate("recurrent_dropout", recurrent_dropout)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.recurrent_initializer = keras.initializers.get(recurrent_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.seed = int(seed) if isinstance(seed, numbers.Integral) else seed
        self.supports_masking = True

    def build(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(
                "BidirectionalLSTMAttention expects inputs of shape "
                f"(batch, time, features). Received: input_shape={input_shape}"
            )
        self.bidirectional_lstm = keras.layers.Bidirectional(
            keras.layers.LSTM(
                self.units,
                return_sequences=True,
                dropout=self.dropout,
                recurrent_dropout=self.recurrent_dropout,
                kernel_initializer=self.kernel_initializer,
                recurrent_initializer=self.recurrent_initializer,
                bias_initializer=self.bias_initializer,
                seed=self.seed,
                dtype=self.dtype_policy,
            ),
            merge_mode="concat",
            dtype=self.dtype_policy,
            name="bidirectional_lstm",
        )
        self.bidirectional_lstm.build(input_shape)
        self.attention_pooling = AdditiveAttentionPooling(
            units=self.attention_units or 2 * self.units,
            kernel_initializer=self.kernel_initializer,
            bias_initializer=self.bias_initializer,
            dtype=self.dtype_policy,
            name="attention_pooling",
        )
        self.attention_pooling.build((input_shape[0], input_shape[1], 2 * self.units))

    def call(self, inputs, mask=None, training=None, return_attention_scores=False):
        hidden = self.bidirectional_lstm(inputs, mask=mask, training=training)  # (batch, time, 2 * units)
        return self.attention_pooling(
            hidden, mask=mask, return_attention_scores=return_attention_scores
        )  # (batch, 2 * units) [, (batch, time)]

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        config = super().get_config()
        config.update(
            config_entries(
                self,
                ("units", "attention_units", "dropout", "recurrent_dropout", "seed"),
                ("kernel_initializer", "recurrent_initializer", "bias_initializer"),
            )
        )
        return config
