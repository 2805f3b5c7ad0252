"""Pure scan kernels for the linear recurrence `h_t = a_t * h_{t-1} + b_t`.

The efficient gated RNNs of seed 003 (minGRU, minLSTM, the Mamba selective
SSM) all reduce their sequence mixing to this first-order linear recurrence,
element-wise over the feature axes:

    h_t = a_t * h_{t-1} + b_t,    t = 1..T,    h_0 given.        (scan)

Unrolled, `h_t = A_t * h_0 + sum_{s<=t} (A_t / A_s) * b_s` with
`A_t = prod_{r<=t} a_r`, which makes it computable in parallel over time.

Three ways to evaluate it live here, all written with `keras.ops` only so the
same code runs on the TensorFlow, JAX and PyTorch backends:

- `log_space_scan`: Heinsen's log-space scan (arXiv 2311.06281, used by
  minGRU/minLSTM, arXiv 2410.01201, log-space version) with
  `keras.ops.associative_scan` and the combine
  `(la1, lb1), (la2, lb2) -> (la1 + la2, logaddexp(lb1 + la2, lb2))`.
  Needs `a_t > 0` and `b_t > 0` (pass their logarithms). This is the default
  parallel path of `MinGRU` and `MinLSTM`.
- `log_space_scan_cumsum`: Heinsen's closed form
  `log h_t = a*_t + logcumsumexp(log b - a*)_t`, `a* = cumsum(log a)`.
  `keras.ops` has `cumsum` but no `logcumsumexp`, so the log-cumsum-exp is
  evaluated as `M + log(cumsum(exp(x - M)))` with one shift `M` per sequence
  (the maximum over time). It is exact while the spread of `x` over the
  sequence stays inside the float range (about 87 nats in float32) and loses
  the early steps (they underflow to `h = 0`) beyond that: a reference and a
  benchmark, not a layer path. On minGRU at length 4096 (batch 2, 16 units,
  random weights) it was wrong on ~4000 of the 4096 steps, while
  `log_space_scan` stayed within 5e-7 of a float64 step loop.
- `log_space_last_state`: only the last state, as one reduction,
  `log h_T = logsumexp_s(log b_s + sum_{r > s} log a_r)`, with the suffix
  sums accumulated from the end (the terms that matter, the recent ones, get
  the smallest, most exact sums). `O(T)` work and no scan at all: what a
  layer returning its last state needs.
- `linear_scan`: the same recurrence in linear space with
  `keras.ops.associative_scan` and the combine
  `(a1, b1), (a2, b2) -> (a1 * a2, a2 * b1 + b2)`; any sign of `b`. Stable
  when `|a_t| <= 1` (Mamba: `a_t = exp(delta_t * A)` with `A < 0`).

and the sequential tools:

- `sequential_scan`: a step loop with `keras.ops.scan` (the "step path").
- `run_steps`: `keras.ops.scan` for any step function, with a workaround
  for the TensorFlow backend (below); the layers' step paths use it.

Shapes: every kernel takes `(batch, time, ...)` tensors (time on axis 1) and
an optional initial state `(batch, ...)`, and returns `(outputs, last_state)`
with outputs `(batch, time, ...)` and last state `(batch, ...)`.

The initial state enters the parallel kernels by linearity,
`h_t = A_t * h_0 + h_t|_{h_0 = 0}`, where `A_t = exp(cumsum(log a))_t`
comes out of the same associative scan; `h_0` may have any sign (in the
log-space kernels too).

Backend notes (measured with keras 3.15, TensorFlow 2.21):

- On TensorFlow, `keras.ops.associative_scan` loses the static rank of its
  result when the batch size is unknown (a functional model with
  `keras.Input((T, F))`). The kernels reshape the result back to the input's
  shape, which restores it.
- `keras.ops.scan` on TensorFlow requires the per-step outputs to have the
  structure and shapes of the carry (keras-team/keras#19681); JAX and
  PyTorch do not. `run_steps` carries the output along on TensorFlow when
  they differ (the sLSTM, mLSTM and Mamba steps), at the cost of also
  stacking the states over time there.
- Neither `keras.ops.associative_scan` nor the gradient of `keras.ops.scan`
  compiles under XLA on TensorFlow (`jit_compile=True`): the first branches
  with `tf.cond` on the parity of the length and XLA compiles both branches
  with static shapes; the second is a `tf.while_loop` without
  `maximum_iterations`, whose gradient accumulators XLA cannot size. The
  layers using either set `supports_jit = False` on the TensorFlow backend,
  so `jit_compile="auto"` (XLA on a GPU) falls back to graph mode and
  `jit_compile=True` warns and does the same. JAX compiles both.
"""

import keras
from keras import ops

# --------------------------------------------------------------------------
# minGRU / minLSTM candidate activation (arXiv 2410.01201, log-space version).
# --------------------------------------------------------------------------


def g(x):
    """Positive candidate activation of minGRU/minLSTM.

    `g(x) = x + 0.5` for `x >= 0` and `sigmoid(x)` otherwise: continuous,
    strictly positive and linear for large inputs, so that `h~ = g(.)` can
    enter the log-space scan.
    """
    return ops.where(x >= 0, x + 0.5, ops.sigmoid(x))


def log_g(x):
    """`log(g(x))`, evaluated without forming `g(x)` for negative `x`.

    `log(x + 0.5)` for `x >= 0` and `log(sigmoid(x)) = -softplus(-x)`
    otherwise. The `relu` keeps the unselected branch finite, so gradients
    stay finite for every `x`.
    """
    return ops.where(x >= 0, ops.log(ops.relu(x) + 0.5), -ops.softplus(-x))


# --------------------------------------------------------------------------
# Helpers.
# --------------------------------------------------------------------------


def log_forget_gate(forget_logits, forget_gate):
    """`log f_t` for `f_t = sigmoid(f~_t)` or `f_t = exp(f~_t)`: the xLSTM forget gate in log space
    (sLSTM eq. 13, mLSTM eq. 26)."""
    if forget_gate == "sigmoid":
        return -ops.softplus(-forget_logits)  # log(sigmoid(f~))
    return forget_logits


def _restore_shape(x, reference):
    # `associative_scan` on TensorFlow returns a tensor of unknown rank when
    # the batch size is unknown; a reshape to the input's shape restores it.
    if keras.backend.backend() == "tensorflow":
        return ops.reshape(x, ops.shape(reference))
    return x


def _log_combine(left, right):
    log_a_left, log_b_left = left
    log_a_right, log_b_right = right
    return (
        log_a_left + log_a_right,
        ops.logaddexp(log_b_left + log_a_right, log_b_right),
    )


def _linear_combine(left, right):
    a_left, b_left = left
    a_right, b_right = right
    return a_left * a_right, a_right * b_left + b_right


def _add_initial_state(h_zero, decay, initial_state):
    # h_t = A_t * h_0 + h_t|_{h_0 = 0}, with `decay` = A_t.
    if initial_state is None:
        return h_zero
    return h_zero + decay * ops.expand_dims(initial_state, 1)


# --------------------------------------------------------------------------
# Parallel kernels.
# --------------------------------------------------------------------------


def log_space_scan(log_a, log_b, initial_state=None):
    """Heinsen log-space parallel scan with `keras.ops.associative_scan`.

    Computes `h_t = a_t * h_{t-1} + b_t` from `log a` and `log b`.

    Args:
        log_a: `(batch, time, ...)`, the log decay `log a_t` (`a_t > 0`).
        log_b: `(batch, time, ...)`, the log input `log b_t` (`b_t > 0`).
        initial_state: optional `(batch, ...)` state `h_0` in linear space,
            any sign; `None` means zeros.

    Returns:
        `(h, h_last)`: `h` is `(batch, time, ...)`, `h_last` is
        `(batch, ...)`.
    """
    log_a, log_b = ops.convert_to_tensor(log_a), ops.convert_to_tensor(log_b)
    log_a_cum, log_h = ops.associative_scan(_log_combine, (log_a, log_b), axis=1)  # (batch, time, ...) each
    log_h = _restore_shape(log_h, log_b)  # (batch, time, ...)
    h = ops.exp(log_h)  # (batch, time, ...), h_t with h_0 = 0
    if initial_state is not None:
        decay = ops.exp(_restore_shape(log_a_cum, log_a))  # (batch, time, ...)
        h = _add_initial_state(h, decay, initial_state)
    return h, h[:, -1]


def log_space_scan_cumsum(log_a, log_b, initial_state=None):
    """Heinsen's closed form `a* + logcumsumexp(log b - a*)` with cumsums.

    `keras.ops` has no `logcumsumexp`; it is evaluated with one shift per
    sequence, `M = max_t x_t`: `logcumsumexp(x) = M + log(cumsum(exp(x - M)))`.
    Exact while `max_t x_t - x_s` stays below about 87 (float32) for the
    early steps `s`; beyond that those steps underflow to `h = 0`. Use it as
    a reference or for short sequences, not for long ones.

    Args and returns as for `log_space_scan`.
    """
    log_a, log_b = ops.convert_to_tensor(log_a), ops.convert_to_tensor(log_b)
    log_a_cum = ops.cumsum(log_a, axis=1)  # (batch, time, ...), a*_t
    x = log_b - log_a_cum  # (batch, time, ...)
    shift = ops.stop_gradient(ops.max(x, axis=1, keepdims=True))  # (batch, 1, ...)
    log_cum = shift + ops.log(ops.cumsum(ops.exp(x - shift), axis=1))  # (batch, time, ...)
    h = ops.exp(log_a_cum + log_cum)  # (batch, time, ...)
    h = _add_initial_state(h, ops.exp(log_a_cum), initial_state)
    return h, h[:, -1]


def log_space_last_state(log_a, log_b, initial_state=None):
    """The last state `h_T` of `h_t = a_t * h_{t-1} + b_t`, without the others.

    Unrolled, `h_T = A_T h_0 + sum_s b_s prod_{r > s} a_r`, so

        log h_T|_{h_0 = 0} = logsumexp_s(log b_s + S_s),   S_s = sum_{r > s} log a_r,

    with `S` an exclusive cumsum taken from the end of the sequence. The
    initial state enters as `exp(S_0 + log a_1) * h_0` (any sign).

    Args:
        log_a: `(batch, time, ...)`, the log decay `log a_t` (`a_t > 0`).
        log_b: `(batch, time, ...)`, the log input `log b_t` (`b_t > 0`).
        initial_state: optional `(batch, ...)` state `h_0` in linear space;
            `None` means zeros.

    Returns:
        `h_last`, `(batch, ...)`: the last step of `log_space_scan`'s `h`.
    """
    log_a, log_b = ops.convert_to_tensor(log_a), ops.convert_to_tensor(log_b)
    reversed_log_a = ops.flip(log_a, axis=1)  # (batch, time, ...), a_T first
    suffix = ops.flip(ops.cumsum(reversed_log_a, axis=1), axis=1)  # sum_{r >= s} log a_r
    h_last = ops.exp(ops.logsumexp(log_b + suffix - log_a, axis=1))  # (batch, ...)
    if initial_state is not None:
        h_last = h_last + ops.exp(suffix[:, 0]) * initial_state
    return h_last


def linear_scan(a, b, initial_state=None):
    """Linear-space parallel scan with `keras.ops.associative_scan`.

    Computes `h_t = a_t * h_{t-1} + b_t` for any sign of `b_t`; stable for
    `|a_t| <= 1`.

    Args:
        a: `(batch, time, ...)`, the decay `a_t`.
        b: `(batch, time, ...)`, the input `b_t`.
        initial_state: optional `(batch, ...)` state `h_0`; `None` means
            zeros.

    Returns:
        `(h, h_last)`: `h` is `(batch, time, ...)`, `h_last` is
        `(batch, ...)`.
    """
    a, b = ops.convert_to_tensor(a), ops.convert_to_tensor(b)
    a_cum, h = ops.associative_scan(_linear_combine, (a, b), axis=1)  # (batch, time, ...) each
    h = _restore_shape(h, b)  # (batch, time, ...)
    if initial_state is not None:
        a_cum = _restore_shape(a_cum, a)  # (batch, time, ...)
        h = _add_initial_state(h, a_cum, initial_state)
    return h, h[:, -1]


# --------------------------------------------------------------------------
# Sequential reference.
# --------------------------------------------------------------------------


def linear_step(h_prev, a, b):
    """One step of the recurrence: `h_t = a_t * h_{t-1} + b_t`."""
    return a * h_prev + b


def sequential_scan(a, b, initial_state=None):
    """Step-by-step evaluation of `h_t = a_t * h_{t-1} + b_t`.

    A loop over time with `keras.ops.scan`: `O(T)` sequential steps, no
    parallelism over time, and no restriction on the signs of `a` or `b`.

    Args and returns as for `linear_scan`.
    """
    a_time_major = ops.moveaxis(a, 1, 0)  # (time, batch, ...)
    b_time_major = ops.moveaxis(b, 1, 0)  # (time, batch, ...)
    if initial_state is None:
        initial_state = ops.zeros_like(b_time_major[0])  # (batch, ...)

    def step(h_prev, inputs):
        a_t, b_t = inputs
        h_t = linear_step(h_prev, a_t, b_t)  # (batch, ...)
        return h_t, h_t

    h_last, h = run_steps(step, initial_state, (a_time_major, b_time_major))  # (batch, ...), (time, batch, ...)
    return ops.moveaxis(h, 0, 1), h_last


def _same_layout(x, y):
    x_flat, y_flat = keras.tree.flatten(x), keras.tree.flatten(y)
    return (
        len(x_flat) == len(y_flat)
        and all(tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype for a, b in zip(x_flat, y_flat, strict=True))
        and keras.tree.is_nested(x) == keras.tree.is_nested(y)
    )


def run_steps(step, initial_state, inputs):
    """`keras.ops.scan(step, initial_state, inputs)` on every backend.

    `step(state, inputs_t) -> (state, outputs_t)` runs over the leading axis
    of `inputs` (a tensor or a structure of tensors, time first).
    TensorFlow's `keras.ops.scan` only accepts per-step outputs laid out like
    the state; when they are not, the outputs ride along in the carry there
    (one extra traced step gives their shape).

    Returns:
        `(last_state, outputs)`, the outputs stacked on a leading time axis.
    """
    if keras.backend.backend() != "tensorflow":
        return ops.scan(step, initial_state, inputs)
    first_inputs = keras.tree.map_structure(lambda x: x[0], inputs)
    _, example_outputs = step(initial_state, first_inputs)
    if _same_layout(example_outputs, initial_state):
        return ops.scan(step, initial_state, inputs)

    def carried_step(carry, inputs_t):
        state, _ = carry
        new_carry = step(state, inputs_t)
        return new_carry, new_carry

    initial_outputs = keras.tree.map_structure(ops.zeros_like, example_outputs)
    (last_state, _), (_, outputs) = ops.scan(carried_step, (initial_state, initial_outputs), inputs)
    return last_state, outputs
