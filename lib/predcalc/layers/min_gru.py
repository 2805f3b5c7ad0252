"""minGRU: a minimal GRU whose gates depend on the input only."""

import keras
from keras import ops

from predcalc.layers.input_gated_scan import InputGatedScan
from predcalc.layers.scan_kernels import g, log_g


def min_gru_step(h_prev, gate_logits, candidate_logits):
    """One minGRU step: `h_t = (1 - z_t) * h_{t-1} + z_t * g(h~_t)`.

    Args:
        h_prev: `(batch, units)`, the state `h_{t-1}`.
        gate_logits: `(batch, units)`, `Linear_z(x_t)`.
        candidate_logits: `(batch, units)`, `Linear_h(x_t)`.

    Returns:
        `(batch, units)`, the state `h_t`.
    """
    z = ops.sigmoid(gate_logits)  # (batch, units)
    return (1.0 - z) * h_prev + z * g(candidate_logits)  # (batch, units)


def min_gru_log_coefficients(gate_logits, candidate_logits):
    """The log-space scan coefficients of minGRU.

    `log a_t = log(1 - z_t) = -softplus(k_t)`,
    `log b_t = log z_t + log g(h~_t) = -softplus(-k_t) + log_g(h~_t)`.

    Args:
        gate_logits: `(batch, time, units)`, `k_t = Linear_z(x_t)`.
        candidate_logits: `(batch, time, units)`, `Linear_h(x_t)`.

    Returns:
        `(log_a, log_b)`, each `(batch, time, units)`.
    """
    log_a = -ops.softplus(gate_logits)  # (batch, time, units)
    log_b = -ops.softplus(-gate_logits) + log_g(candidate_logits)  # (batch, time, units)
    return log_a, log_b


@keras.saving.register_keras_serializable(package="predcalc")
class MinGRU(InputGatedScan):
    """Minimal gated recurrent unit (minGRU), parallel over time.

    Implements the minGRU of seed 003 ("GRU and min-GRU"; Feng et al.
    2024, arXiv 2410.01201, Section 3):

        h_t = (1 - z_t) * h_{t-1} + z_t * h~_t
        z_t = sigmoid(Linear_z(x_t))
        h~_t = g(Linear_h(x_t))

    The gates no longer see `h_{t-1}`, so the recurrence is the linear scan
    `h_t = a_t * h_{t-1} + b_t` with `a_t = 1 - z_t` and `b_t = z_t * h~_t`.
    As in the paper's log-space version, the candidate goes through
    `g(x) = x + 0.5 if x >= 0 else sigmoid(x)`, which keeps `b_t > 0` so that
    the scan runs in log space (seed 003 writes `h~_t = Linear_h(x_t)`, the
    paper's plain form). Both paths of this layer use `g`, so they agree.

    With `parallel=True` (the default) the sequence is computed with the
    Heinsen log-space scan over `keras.ops.associative_scan`
    (`log a_t = -softplus(k_t)`, `log b_t = -softplus(-k_t) + log g(.)`);
    with `parallel=False` it is computed one step at a time with
    `keras.ops.scan`. Both give the same numbers: at length 4096 (batch 2,
    16 units, float32) each is within 5e-7 of a float64 loop. A layer
    returning only its last state (`return_sequences=False`) skips the scan on
    the parallel path: `h_T` is one log-sum-exp reduction
    (`scan_kernels.log_space_last_state`). The parallel
    path is the default because its depth is `O(log T)` instead of `O(T)`,
    which is what makes minGRU fast on a GPU, and because on a 2-core CPU it
    trained 5-100x faster than the step loop on TensorFlow and PyTorch
    (length 4096). On JAX on a CPU the XLA-compiled step loop was the faster
    one (about 3x in training, 7-9x forward): use `parallel=False` there.
    Heinsen's cumsum form (`scan_kernels.log_space_scan_cumsum`) is not an
    option: `keras.ops` has no `logcumsumexp`, and with one shift per
    sequence it lost ~4000 of 4096 steps to underflow.

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
        use_bias: bool, whether the two projections have biases. Defaults to
            `True`.
        kernel_initializer: initializer of the projection kernel `(features,
            2 * units)`, laid out `[z | h~]`. Defaults to `"glorot_uniform"`.
        bias_initializer: initializer of the bias `(2 * units,)`. Defaults to
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
        >>> inputs = keras.Input((15, 1))
        >>> x = MinGRU(32, return_sequences=True)(inputs)
        >>> x = MinGRU(32)(x)
        >>> model = keras.Model(inputs, keras.layers.Dense(1)(x))
        >>> model.output_shape
        (None, 1)

        Continue a sequence from a carried state:

        >>> layer = MinGRU(8, return_sequences=True, return_state=True)
        >>> sequence = np.random.default_rng(0).normal(size=(2, 20, 3)).astype("float32")
        >>> first, state = layer(sequence[:, :10])
        >>> second, state = layer(sequence[:, 10:], initial_state=state)
        >>> whole, _ = layer(sequence)
        >>> np.allclose(keras.ops.convert_to_numpy(second), keras.ops.convert_to_numpy(whole)[:, 10:], atol=1e-5)
        True

    References:
        - [Feng et al., 2024. Were RNNs All We Needed?](
          https://arxiv.org/abs/2410.01201)
        - [Heinsen, 2023. Efficient Parallelization of a Ubiquitous Sequential
          Computation](https://arxiv.org/abs/2311.06281)
    """

    gate_count = 2

    def _log_coefficients(self, *logits):
        return min_gru_log_coefficients(*logits)

    def _step(self, h_prev, *logits_t):
        return min_gru_step(h_prev, *logits_t)
