"""One step of the plain recurrent network of the findings document (seed 000, 1.1)."""

import keras
from keras import ops

from predcalc.layers._common import config_entries, positive_int


@keras.saving.register_keras_serializable(package="predcalc")
class PReLURNNCell(keras.layers.Layer):
    """Elman recurrent cell with a PReLU activation, one time step.

    The cell computes reference document 000 ("Findings"), section 1.1:

    ```
    h_t = PReLU(W_xh x_t + W_hh h_{t-1} + b_h)
    PReLU(a) = max(0, a) + alpha * min(0, a)
    ```

    with one trainable slope `alpha` per unit (He et al., 2015). Wrap it in
    `keras.layers.RNN` to run a whole sequence; the output of each step is
    `h_t` (the prior report's read-out `y_t = W_hy h_t + b_y` is a `Dense` layer put
    after the RNN).

    Matrices are stored as the prior report writes them, output dimension first:
    `input_kernel` is `W_xh` with shape `(units, input_dim)` and
    `recurrent_kernel` is `W_hh` with shape `(units, units)`; for a batch of
    row vectors the step is `x_t @ W_xh^T + h_{t-1} @ W_hh^T + b_h`. The
    transposes of these two matrices are the `kernel` and `recurrent_kernel`
    of `keras.layers.SimpleRNN`, so with `alpha = 0` the cell equals
    `SimpleRNN(activation="relu")` and with `alpha = 1` it equals
    `SimpleRNN(activation="linear")`.

    Args:
        units: int. Size of the hidden state `h_t`. Must be positive.
        kernel_initializer: initializer for `W_xh`. Defaults to
            `"glorot_uniform"`.
        recurrent_initializer: initializer for `W_hh`. Defaults to
            `"orthogonal"`.
        bias_initializer: initializer for `b_h`. Defaults to `"zeros"`.
        alpha_initializer: initializer for the PReLU slopes. Defaults to
            `keras.initializers.Constant(0.25)`, the value used by He et al.
            (2015). `keras.layers.PReLU` starts from `"zeros"` (a ReLU).
        **kwargs: other keyword arguments passed to `keras.layers.Layer`,
            e.g. `name` and `dtype`.

    Call arguments:
        inputs: float tensor of shape `(batch, input_dim)`, the input `x_t`.
        states: list holding one tensor of shape `(batch, units)`, the
            previous hidden state `h_{t-1}` (or that tensor itself).
        training: unused; accepted for the `keras.layers.RNN` contract.

    Returns:
        `(h_t, [h_t])`: the output and the new state list.

    Example:
        >>> x = np.random.default_rng(0).uniform(size=(2, 5, 3)).astype("float32")
        >>> rnn = keras.layers.RNN(PReLURNNCell(4))
        >>> tuple(rnn(x).shape)
        (2, 4)

    References:
        - Elman, J. L. (1990). Finding structure in time. Cognitive Science,
          14(2), 179-211.
        - He, K., Zhang, X., Ren, S., & Sun, J. (2015). Delving deep into
          rectifiers. https://arxiv.org/abs/1502.01852
    """

    def __init__(
        self,
        units,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        alpha_initializer=None,
        **kwargs,
    ):
        positive_int("units", units)
        super().__init__(**kwargs)
        if alpha_initializer is None:
            alpha_initializer = keras.initializers.Constant(0.25)
        self.units = int(units)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.recurrent_initializer = keras.initializers.get(recurrent_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.alpha_initializer = keras.initializers.get(alpha_initializer)
        self.state_size = self.units
        self.output_size = self.units

    def build(self, input_shape):
        input_dim = input_shape[-1]
        self.input_kernel = self.add_weight(
            shape=(self.units, input_dim),
            initializer=self.kernel_initializer,
            name="input_kernel",
        )
        self.recurrent_kernel = self.add_weight(
            shape=(self.units, self.units),
            initializer=self.recurrent_initializer,
            name="recurrent_kernel",
        )
        self.bias = self.add_weight(
            shape=(self.units,),
            initializer=self.bias_initializer,
            name="bias",
        )
        self.alpha = self.add_weight(
            shape=(self.units,),
            initializer=self.alpha_initializer,
            name="alpha",
        )

    def call(self, inputs, states, training=False):
        nested = isinstance(states, (list, tuple))
        h_previous = states[0] if nested else states  # (batch, units)
        pre_activation = (
            ops.matmul(inputs, ops.transpose(self.input_kernel))
            + ops.matmul(h_previous, ops.transpose(self.recurrent_kernel))
            + self.bias
        )  # (batch, units)
        h = ops.maximum(pre_activation, 0.0) + self.alpha * ops.minimum(pre_activation, 0.0)  # (batch, units)
        return h, ([h] if nested else h)

    def get_config(self):
        config = super().get_config()
        config.update(
            config_entries(
                self,
                ("units",),
                ("kernel_initializer", "recurrent_initializer", "bias_initializer", "alpha_initializer"),
            )
        )
        return config
