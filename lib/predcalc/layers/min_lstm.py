"""minLSTM: a minimal LSTM whose gates depend on the input only."""

import keras
from keras import ops

from predcalc.layers.scan_kernels import g
from predcalc.layers.scan_kernels import log_g
from predcalc.layers.scan_kernels import log_space_scan
from predcalc.layers.scan_kernels import run_steps


def min_lstm_step(h_prev, forget_logits, input_logits, candidate_logits):
    """One minLSTM step with normalised gates.

    `f_t = sigmoid(Linear_f(x_t))`, `i_t = sigmoid(Linear_i(x_t))`,
    `f'_t = f_t / (f_t + i_t)`, `i'_t = i_t / (f_t + i_t)`,
    `h_t = f'_t * h_{t-1} + i'_t * g(Linear_h(x_t))`.

    Args:
        h_prev: `(batch, units)`, the state `h_{t-1}`.
        forget_logits: `(batch, units)`, `Linear_f(x_t)`.
        input_logits: `(batch, units)`, `Linear_i(x_t)`.
        candidate_logits: `(batch, units)`, `Linear_h(x_t)`.

    Returns:
        `(batch, units)`, the state `h_t`.
    """
    f = ops.sigmoid(forget_logits)  # (batch, units)
    i = ops.sigmoid(input_logits)  # (batch, units)
    f_norm = f / (f + i)  # (batch, units)
    i_norm = i / (f + i)  # (batch, units)
    return f_norm * h_prev + i_norm * g(candidate_logits)  # (batch, units)


def min_lstm_log_coefficients(forget_logits, input_logits, candidate_logits):
    """The log-space scan coefficients of minLSTM.

    With `d_t = log i_t - log f_t = softplus(-k_f) - softplus(-k_i)`:
    `log f'_t = -softplus(d_t)` and `log i'_t = -softplus(-d_t)`, so
    `log a_t = log f'_t` and `log b_t = log i'_t + log g(h~_t)`.

    Args:
        forget_logits: `(batch, time, units)`, `k_f = Linear_f(x_t)`.
        input_logits: `(batch, time, units)`, `k_i = Linear_i(x_t)`.
        candidate_logits: `(batch, time, units)`, `Linear_h(x_t)`.

    Returns:
        `(log_a, log_b)`, each `(batch, time, units)`.
    """
    log_ratio = ops.softplus(-forget_logits) - ops.softplus(
        -input_logits
    )  # (batch, time, units), log(i_t / f_t)
    log_a = -ops.softplus(log_ratio)  # (batch, time, units)
    log_b = -ops.softplus(-log_ratio) + log_g(
        candidate_logits
    )  # (batch, time, units)
    return log_a, log_b


@keras.saving.register_keras_serializable(package="predcalc")
class MinLSTM(keras.layers.Layer):
    """Minimal long short-term memory (minLSTM), parallel over time.

    Implements the minLSTM of seed 003 ("minLSTM"; Feng et al. 2024,
    arXiv 2410.01201, Section 3) with the paper's length-independent
    normalised gates:

        h_t = f'_t * h_{t-1} + i'_t * h~_t
        f_t = sigmoid(Linear_f(x_t)),  i_t = sigmoid(Linear_i(x_t))
        f'_t = f_t / (f_t + i_t),      i'_t = i_t / (f_t + i_t)
        h~_t = g(Linear_h(x_t))

    The gates no longer see `h_{t-1}`, so the recurrence is the linear scan
    `h_t = a_t * h_{t-1} + b_t` with `a_t = f'_t`, `b_t = i'_t * h~_t`. The
    candidate goes through `g(x) = x + 0.5 if x >= 0 else sigmoid(x)` as in
    the paper's log-space version, which keeps `b_t > 0` (seed 003 writes
    `h~_t = Linear_h(x_t)`, the paper's plain form). Both paths of this
    layer use `g`, so they agree.

    With `parallel=True` (the default) the sequence is computed with the
    Heinsen log-space scan over `keras.ops.associative_scan`, with
    `log f'_t = -softplus(d_t)`, `log i'_t = -softplus(-d_t)` and
    `d_t = softplus(-k_f) - softplus(-k_i)`; with `parallel=False` one step
    at a time with `keras.ops.scan`. Both paths give the same numbers. The
    default and its speed trade-offs are those of `MinGRU` (on JAX on a CPU
    the step loop is faster).

    On TensorFlow neither path compiles under XLA (`associative_scan`, and
    the gradient of `keras.ops.scan`), so the layer reports
    `supports_jit=False` there and `jit_compile="auto"` falls back to graph
    mode. JAX compiles both paths.

    The layer does not support masking.

    Args:
        units: int, the size of the hidden state `h_t` and of the output.
        return_sequences: bool, return the whole sequence `(batch, time,
            units)` instead of the last state `(batch, units)`. Defaults to
            `False`.
        return_state: bool, also return the last state, to continue the
            sequence later with `initial_state`. Defaults to `False`.
        parallel: bool, use the log-space parallel scan (`True`, default) or
            the sequential step loop (`False`).
        use_bias: bool, whether the three projections have biases. Defaults
            to `True`.
        kernel_initializer: initializer of the projection kernel `(features,
            3 * units)`, laid out `[f | i | h~]`. Defaults to
            `"glorot_uniform"`.
        bias_initializer: initializer of the bias `(3 * units,)`. Defaults to
            `"zeros"`.
        **kwargs: base layer keyword arguments, e.g. `name` and `dtype`.

    Call arguments:
        inputs: `(batch, time, features)` tensor.
        initial_state: optional `(batch, units)` tensor (or a list holding
            it), the state `h_0`; zeros when omitted. Pass the state returned
            with `return_state=True` to continue a sequence.

    Returns:
        `(batch, time, units)` if `return_sequences` else `(batch, units)`;
        with `return_state=True`, a list `[output, last_state]`.

    Example:

    ```python
    inputs = keras.Input((15, 1))
    x = MinLSTM(32, return_sequences=True)(inputs)
    x = MinLSTM(32)(x)
    outputs = keras.layers.Dense(1)(x)
    model = keras.Model(inputs, outputs)

    # Continue a sequence from a carried state.
    layer = MinLSTM(8, return_sequences=True, return_state=True)
    sequence = np.random.normal(size=(2, 20, 3))
    first, state = layer(sequence[:, :10])
    second, state = layer(sequence[:, 10:], initial_state=state)
    # second == layer(sequence)[0][:, 10:]
    ```

    References:
        - [Feng et al., 2024. Were RNNs All We Needed?](
          https://arxiv.org/abs/2410.01201)
        - [Heinsen, 2023. Efficient Parallelization of a Ubiquitous Sequential
          Computation](https://arxiv.org/abs/2311.06281)
    """

    def __init__(
        self,
        units,
        return_sequences=False,
        return_state=False,
        parallel=True,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if isinstance(units, bool) or not isinstance(units, int) or units <= 0:
            raise ValueError(
                f"units must be a positive integer. Received: units={units}"
            )
        for arg_name, value in (
            ("return_sequences", return_sequences),
            ("return_state", return_state),
            ("parallel", parallel),
            ("use_bias", use_bias),
        ):
            if not isinstance(value, bool):
                raise ValueError(
                    f"{arg_name} must be a bool. Received: {arg_name}={value}"
                )
        self.units = units
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.parallel = parallel
        self.use_bias = use_bias
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        if keras.backend.backend() == "tensorflow":
            # Neither TF path compiles under XLA (see `scan_kernels`).
            self.supports_jit = False

    def build(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(
                "MinLSTM expects inputs of shape (batch, time, features). "
                f"Received: input_shape={input_shape}"
            )
        input_dim = input_shape[-1]
        if input_dim is None:
            raise ValueError(
                "The last dimension of the inputs must be defined. "
                f"Received: input_shape={input_shape}"
            )
        self.kernel = self.add_weight(
            name="kernel",
            shape=(input_dim, 3 * self.units),
            initializer=self.kernel_initializer,
        )
        if self.use_bias:
            self.bias = self.add_weight(
                name="bias",
                shape=(3 * self.units,),
                initializer=self.bias_initializer,
            )
        else:
            self.bias = None

    def call(self, inputs, initial_state=None):
        if isinstance(initial_state, (list, tuple)):
            (initial_state,) = initial_state
        projected = ops.matmul(inputs, self.kernel)  # (batch, time, 3*units)
        if self.bias is not None:
            projected = projected + self.bias  # (batch, time, 3*units)
        units = self.units
        forget_logits = projected[..., :units]  # (batch, time, units)
        input_logits = projected[..., units : 2 * units]  # (batch, time, units)
        candidate_logits = projected[..., 2 * units :]  # (batch, time, units)

        if self.parallel:
            log_a, log_b = min_lstm_log_coefficients(
                forget_logits, input_logits, candidate_logits
            )  # (batch, time, units) each
            sequence, last_state = log_space_scan(
                log_a, log_b, initial_state
            )  # (batch, time, units), (batch, units)
        else:
            sequence, last_state = self._step_path(
                forget_logits, input_logits, candidate_logits, initial_state
            )

        output = sequence if self.return_sequences else last_state
        if self.return_state:
            return [output, last_state]
        return output

    def _step_path(
        self, forget_logits, input_logits, candidate_logits, initial_state
    ):
        step_inputs = tuple(
            ops.moveaxis(logits, 1, 0)
            for logits in (forget_logits, input_logits, candidate_logits)
        )  # 3 x (time, batch, units)
        if initial_state is None:
            initial_state = ops.zeros_like(step_inputs[0][0])  # (batch, units)

        def step(h_prev, logits_t):
            h_t = min_lstm_step(h_prev, *logits_t)  # (batch, units)
            return h_t, h_t

        last_state, sequence = run_steps(
            step, initial_state, step_inputs
        )  # (batch, units), (time, batch, units)
        return ops.moveaxis(sequence, 0, 1), last_state

    def compute_output_shape(self, input_shape):
        batch_size, time_steps = input_shape[0], input_shape[1]
        state_shape = (batch_size, self.units)
        if self.return_sequences:
            output_shape = (batch_size, time_steps, self.units)
        else:
            output_shape = state_shape
        if self.return_state:
            return [output_shape, state_shape]
        return output_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "return_sequences": self.return_sequences,
                "return_state": self.return_state,
                "parallel": self.parallel,
                "use_bias": self.use_bias,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
            }
        )
        return config
