"""minLSTM: a minimal LSTM whose gates depend on the input only."""

import keras
from keras import ops

from predcalc.layers.input_gated_scan import InputGatedScan
from predcalc.layers.scan_kernels import g, log_g


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
    log_ratio = ops.softplus(-forget_logits) - ops.softplus(-input_logits)  # (batch, time, units), log(i_t / f_t)
    log_a = -ops.softplus(log_ratio)  # (batch, time, units)
    log_b = -ops.softplus(-log_ratio) + log_g(candidate_logits)  # (batch, time, units)
    return log_a, log_b


@keras.saving.register_keras_serializable(package="predcalc")
class MinLSTM(InputGatedScan):
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
    default, its last-state reduction and its speed trade-offs are those of
    `MinGRU` (on JAX on a CPU the step loop is faster).

    XLA: as `MinGRU` (`supports_jit=False` on TensorFlow, JAX compiles both
    paths).

    The layer does not support masking.

    Args:
        units, return_sequences, return_state, parallel: as in `MinGRU`
            (state size; the whole sequence or the last state; also return
            the last state; the parallel scan or the step loop).
        use_bias: bool, whether the three projections have biases. Defaults
            to `True`.
        kernel_initializer: initializer of the projection kernel `(features,
            3 * units)`, laid out `[f | i | h~]`. Defaults to
            `"glorot_uniform"`.
        bias_initializer: initializer of the bias `(3 * units,)`. Defaults to
            `"zeros"`.
        **kwargs: base layer keyword arguments, e.g. `name` and `dtype`.

    Call arguments, returns and the carried state (`return_state=True`,
    then `initial_state=state`) are those of `MinGRU`; use it the same way:
    `MinLSTM(32, return_sequences=True)` stacks, `MinLSTM(32)` ends a stack.

    References: Feng et al., 2024, "Were RNNs All We Needed?"
    (https://arxiv.org/abs/2410.01201), and Heinsen's log-space scan (see
    `MinGRU`).
    """

    gate_count = 3

    def _log_coefficients(self, *logits):
        return min_lstm_log_coefficients(*logits)

    def _step(self, h_prev, *logits_t):
        return min_lstm_step(h_prev, *logits_t)
