"""mLSTM: the matrix-memory LSTM of xLSTM, parallel or recurrent."""

import math

import keras
from keras import ops

from predcalc.layers._common import (
    SequenceLayer,
    check_bools,
    checked_heads,
    no_xla_on_tensorflow,
    sequence_input_dim,
    set_initializers,
)
from predcalc.layers.scan_kernels import log_forget_gate, run_steps


def mlstm_step(states, query, key, value, log_i, log_f):
    """One stabilised mLSTM step (seed 003 eqs. 19-21, xLSTM stabilisation).

        m_t  = max(log f_t + m_{t-1}, log i_t)
        i'_t = exp(log i_t - m_t),  f'_t = exp(log f_t + m_{t-1} - m_t)
        C_t  = f'_t C_{t-1} + i'_t v_t k_t^T                  (eq. 19)
        n_t  = f'_t n_{t-1} + i'_t k_t                        (eq. 20)
        h~_t = C_t q_t / max(|n_t^T q_t|, exp(-m_t))          (eq. 21)

    `C` and `n` are the paper's states scaled by `exp(-m_t)`; the lower bound
    `1` of the normaliser becomes `exp(-m_t)` with them, so `h~_t` is
    unchanged.

    Args:
        states: tuple `(C, n, m)`: `(batch, heads, head_dim, head_dim)`,
            `(batch, heads, head_dim)`, `(batch, heads)`.
        query, key, value: `(batch, heads, head_dim)` each.
        log_i, log_f: `(batch, heads)` each, `log i_t` and `log f_t`.

    Returns:
        `(h_tilde, (C, n, m))`, `h_tilde` of shape `(batch, heads,
        head_dim)`.
    """
    c_prev, n_prev, m_prev = states
    m = ops.maximum(log_f + m_prev, log_i)  # (batch, heads)
    i_stable = ops.exp(log_i - m)[..., None]  # (batch, heads, 1)
    f_stable = ops.exp(log_f + m_prev - m)[..., None]  # (batch, heads, 1)
    c = f_stable[..., None] * c_prev + i_stable[..., None] * ops.einsum(
        "bhv,bhk->bhvk", value, key
    )  # (batch, heads, hd, hd)
    n = f_stable * n_prev + i_stable * key  # (batch, heads, hd)
    numerator = ops.einsum("bhvk,bhk->bhv", c, query)  # (batch, heads, hd)
    denominator = ops.maximum(ops.abs(ops.sum(n * query, axis=-1)), ops.exp(-m))  # (batch, heads)
    h_tilde = numerator / denominator[..., None]  # (batch, heads, hd)
    return h_tilde, (c, n, m)


def mlstm_parallel(query, key, value, log_i, log_f, initial_state):
    """The stabilised parallel mLSTM (the xLSTM paper's parallel formulation).

    With `F_t = sum_{r<=t} log f_r`, the log-gate matrix
    `D~_ts = F_t - F_s + log i_s` for `s <= t` (`-inf` above the diagonal),
    the initial state's weight `F_t + m_0`, the row stabiliser
    `m_t = max(max_s D~_ts, F_t + m_0)` and `D'_ts = exp(D~_ts - m_t)`:

        h~_t = (sum_s D'_ts (q_t.k_s) v_s + e_t C_0 q_t)
               / max(|sum_s D'_ts (q_t.k_s) + e_t n_0.q_t|, exp(-m_t)),
        e_t = exp(F_t + m_0 - m_t).

    This is the recurrence of `mlstm_step` unrolled, with the same
    stabiliser, so the final states `(C_T, n_T, m_T)` it returns equal those
    of the step path. Costs `O(T^2)` memory per head.

    Args:
        query, key, value: `(batch, heads, time, head_dim)` each.
        log_i, log_f: `(batch, heads, time)` each.
        initial_state: tuple `(C_0, n_0, m_0)` as in `mlstm_step`.

    Returns:
        `(h_tilde, (C_T, n_T, m_T))`, `h_tilde` of shape `(batch, heads,
        time, head_dim)`.
    """
    c_0, n_0, m_0 = initial_state
    time_steps = ops.shape(log_f)[-1]
    log_f_cum = ops.cumsum(log_f, axis=-1)  # (batch, heads, time), F_t
    log_gates = (
        log_f_cum[..., :, None] - log_f_cum[..., None, :] + log_i[..., None, :]
    )  # (batch, heads, time, time), D~_ts
    causal = ops.tril(ops.ones((time_steps, time_steps), dtype="bool"))
    log_gates = ops.where(causal, log_gates, float("-inf"))  # (batch, heads, time, time)
    log_initial = log_f_cum + m_0[..., None]  # (batch, heads, time)
    m = ops.maximum(ops.max(log_gates, axis=-1), log_initial)  # (batch, heads, time)
    gates = ops.exp(log_gates - m[..., None])  # (batch, heads, time, time), D'
    initial_weight = ops.exp(log_initial - m)  # (batch, heads, time)

    scores = ops.einsum("bhtk,bhsk->bhts", query, key) * gates  # (batch, heads, time, time)
    initial_readout = ops.einsum("bhvk,bhtk->bhtv", c_0, query)  # (batch, heads, time, hd), C_0 q_t
    numerator = (
        ops.einsum("bhts,bhsv->bhtv", scores, value) + initial_weight[..., None] * initial_readout
    )  # (batch, heads, time, hd)
    initial_normaliser = ops.einsum("bhk,bhtk->bht", n_0, query)  # (batch, heads, time), n_0.q_t
    normaliser = ops.sum(scores, axis=-1) + initial_weight * initial_normaliser  # (batch, heads, time)
    denominator = ops.maximum(ops.abs(normaliser), ops.exp(-m))
    h_tilde = numerator / denominator[..., None]  # (batch, heads, time, hd)

    last_gates = gates[..., -1, :]  # (batch, heads, time)
    last_initial = initial_weight[..., -1]  # (batch, heads)
    c_last = (
        ops.einsum("bhs,bhsv,bhsk->bhvk", last_gates, value, key) + last_initial[..., None, None] * c_0
    )  # (batch, heads, hd, hd)
    n_last = ops.einsum("bhs,bhsk->bhk", last_gates, key) + last_initial[..., None] * n_0  # (batch, heads, hd)
    m_last = m[..., -1]  # (batch, heads)
    return h_tilde, (c_last, n_last, m_last)


@keras.saving.register_keras_serializable(package="predcalc")
class MLSTM(SequenceLayer):
    """Matrix LSTM (mLSTM) of xLSTM, parallel or recurrent.

    Implements the mLSTM cell of seed 003 (eqs. 19-27; Beck et al. 2024,
    arXiv 2405.04517, Section 2.3) per head, with head size `d`:

        C_t = f_t C_{t-1} + i_t v_t k_t^T                   cell     (19)
        n_t = f_t n_{t-1} + i_t k_t                         normaliser (20)
        h_t = o_t * h~_t,
        h~_t = C_t q_t / max(|n_t^T q_t|, 1)                hidden   (21)
        q_t = W_q x_t + b_q                                 query    (22)
        k_t = W_k x_t / sqrt(d) + b_k                       key      (23)
        v_t = W_v x_t + b_v                                 value    (24)
        i_t = exp(w_i^T x_t + b_i)                          input gate (25)
        f_t = sigmoid(f~_t) OR exp(f~_t),
              f~_t = w_f^T x_t + b_f                        forget gate (26)
        o_t = sigmoid(W_o x_t + b_o)                        output gate (27)

    with the paper's stabiliser `m_t = max(log f_t + m_{t-1}, log i_t)`:
    the states are kept scaled by `exp(-m_t)` and the bound `1` of the
    normaliser becomes `exp(-m_t)`, which leaves `h_t` unchanged. The input
    and forget gates are scalars per head.

    The gates do not see `h_{t-1}`, so there are two equal ways to compute
    the sequence: `parallel=True` (default) uses the paper's quadratic,
    attention-like form with the log-gate matrix
    `D~_ts = sum_{s<r<=t} log f_r + log i_s` (`O(T^2)` memory per head; for
    short sequences), `parallel=False` the recurrence one step at a time
    with `keras.ops.scan` (`O(d^2)` state per head; for long sequences).
    This layer is the mLSTM cell, not the full xLSTM block (no up-projection,
    convolution or group norm). On TensorFlow the gradient of the step loop
    does not compile under XLA, so with `parallel=False` the layer reports
    `supports_jit=False` there; the parallel form compiles.

    The layer does not support masking.

    Args:
        units: int, the total size of the queries, keys, values and of the
            output (`num_heads * d`).
        num_heads: int, the number of heads; must divide `units`. Defaults to
            `1`.
        forget_gate: `"sigmoid"` (default) or `"exp"`, the activation of the
            forget gate (eq. 26).
        return_sequences: bool, return the whole sequence `(batch, time,
            units)` instead of the last output `(batch, units)`. Defaults to
            `False`.
        return_state: bool, also return the last states `[C, n, m]` of
            shapes `(batch, num_heads, d, d)`, `(batch, num_heads, d)` and
            `(batch, num_heads)`, to continue the sequence later with
            `initial_state`. Defaults to `False`.
        parallel: bool, use the parallel quadratic form (`True`, default) or
            the recurrent step loop (`False`).
        stabilized: bool, the xLSTM block's training stabilisers on top of
            the max-state `m_t` and the normaliser: the forget-gate biases
            start at `linspace(3, 6)` over heads (`f_t` near 1) and the
            input-gate biases at `N(0, 0.1)`, and `h~_t` is normalised per
            head (the paper's group norm, here without parameters) before
            the output gate. Defaults to `False` (as before).
        use_bias: bool, whether the projections have biases. Defaults to
            `True`.
        kernel_initializer: initializer of the input kernel `(features,
            4 * units + 2 * num_heads)`, laid out
            `[q | k | v | o | i~ (per head) | f~ (per head)]`. Defaults to
            `"glorot_uniform"`.
        bias_initializer: initializer of the bias, same layout. Defaults to
            `"zeros"`.
        **kwargs: base layer keyword arguments, e.g. `name` and `dtype`.

    Call arguments:
        inputs: `(batch, time, features)` tensor.
        initial_state: optional list `[C, n, m]` (shapes as in
            `return_state`); zeros when omitted. Pass the states returned
            with `return_state=True` to continue a sequence.

    Returns:
        `(batch, time, units)` if `return_sequences` else `(batch, units)`;
        with `return_state=True`, a list `[output, C, n, m]`.

    Example:
        >>> inputs = keras.Input((15, 1))
        >>> x = MLSTM(32, num_heads=4, return_sequences=True)(inputs)
        >>> model = keras.Model(inputs, keras.layers.Dense(1)(x[:, -1]))
        >>> model.output_shape
        (None, 1)

        Continue a sequence from carried states:

        >>> layer = MLSTM(8, return_sequences=True, return_state=True)
        >>> sequence = np.random.default_rng(0).normal(size=(2, 20, 3)).astype("float32")
        >>> first, *states = layer(sequence[:, :10])
        >>> second, *states = layer(sequence[:, 10:], initial_state=states)
        >>> whole, *_ = layer(sequence)
        >>> np.allclose(keras.ops.convert_to_numpy(second), keras.ops.convert_to_numpy(whole)[:, 10:], atol=1e-5)
        True

    References:
        - [Beck et al., 2024. xLSTM: Extended Long Short-Term Memory](
          https://arxiv.org/abs/2405.04517)
    """

    config_names = (
        "units",
        "num_heads",
        "forget_gate",
        "return_sequences",
        "return_state",
        "parallel",
        "stabilized",
        "use_bias",
    )
    config_initializers = ("kernel_initializer", "bias_initializer")

    def __init__(
        self,
        units,
        num_heads=1,
        forget_gate="sigmoid",
        return_sequences=False,
        return_state=False,
        parallel=True,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        stabilized=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        units, num_heads = checked_heads(units, num_heads, forget_gate)
        check_bools(
            return_sequences=return_sequences,
            return_state=return_state,
            parallel=parallel,
            stabilized=stabilized,
            use_bias=use_bias,
        )
        self.units = units
        self.num_heads = num_heads
        self.head_dim = units // num_heads
        self.forget_gate = forget_gate
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.parallel = parallel
        self.stabilized = stabilized
        self.use_bias = use_bias
        set_initializers(self, kernel_initializer=kernel_initializer, bias_initializer=bias_initializer)
        if not parallel:
            no_xla_on_tensorflow(self)  # `keras.ops.scan` does not train under XLA on TF

    def build(self, input_shape):
        input_dim = sequence_input_dim(self, input_shape)
        projection_dim = 4 * self.units + 2 * self.num_heads
        self.kernel = self.add_weight(
            name="kernel",
            shape=(input_dim, projection_dim),
            initializer=self.kernel_initializer,
        )
        if self.use_bias:
            self.bias = self.add_weight(
                name="bias",
                shape=(projection_dim,),
                initializer=self.bias_initializer,
            )
            if self.stabilized:
                self._init_gate_biases()
        else:
            self.bias = None

    def _init_gate_biases(self):
        """xLSTM's gate initialisation: input ~ N(0, 0.1), forget linspace(3, 6)."""
        units, heads = self.units, self.num_heads
        bias = ops.convert_to_numpy(self.bias).copy()
        bias[4 * units : 4 * units + heads] = ops.convert_to_numpy(keras.random.normal((heads,), stddev=0.1))
        bias[4 * units + heads :] = [3.0 + 3.0 * k / max(heads - 1, 1) for k in range(heads)]
        self.bias.assign(bias)

    def _project(self, inputs):
        units, heads, head_dim = self.units, self.num_heads, self.head_dim
        projected = ops.matmul(inputs, self.kernel)  # (batch, time, 4*units+2*heads)
        # Eq. 23 scales the key projection, not its bias.
        key = projected[..., units : 2 * units] / math.sqrt(head_dim)
        projected = ops.concatenate(
            [projected[..., :units], key, projected[..., 2 * units :]], axis=-1
        )  # (batch, time, 4*units+2*heads)
        if self.bias is not None:
            projected = projected + self.bias

        def heads_first(x):
            x = ops.reshape(x, (-1, ops.shape(x)[1], heads, head_dim))
            return ops.transpose(x, (0, 2, 1, 3))  # (batch, heads, time, hd)

        query = heads_first(projected[..., :units])
        key = heads_first(projected[..., units : 2 * units])
        value = heads_first(projected[..., 2 * units : 3 * units])
        output_gate = ops.sigmoid(projected[..., 3 * units : 4 * units])  # (batch, time, units)
        log_i = ops.transpose(projected[..., 4 * units : 4 * units + heads], (0, 2, 1))  # (batch, heads, time)
        log_f = log_forget_gate(
            ops.transpose(projected[..., 4 * units + heads :], (0, 2, 1)),
            self.forget_gate,
        )  # (batch, heads, time)
        return query, key, value, output_gate, log_i, log_f

    def call(self, inputs, initial_state=None):
        query, key, value, output_gate, log_i, log_f = self._project(inputs)
        if initial_state is None:
            n_0 = ops.zeros_like(query[:, :, 0])  # (batch, heads, hd)
            c_0 = n_0[..., None] * n_0[..., None, :]  # (batch, heads, hd, hd)
            m_0 = ops.zeros_like(log_i[..., 0])  # (batch, heads)
            initial_state = (c_0, n_0, m_0)
        else:
            initial_state = tuple(initial_state)
            if len(initial_state) != 3:
                raise ValueError(f"MLSTM expects initial_state=[C, n, m]. Received {len(initial_state)} tensors.")

        if self.parallel:
            h_tilde, last_states = mlstm_parallel(
                query, key, value, log_i, log_f, initial_state
            )  # (batch, heads, time, hd)
        else:
            h_tilde, last_states = self._step_path(
                query, key, value, log_i, log_f, initial_state
            )  # (batch, heads, time, hd)

        if self.stabilized:  # per-head norm (xLSTM's group norm)
            mean = ops.mean(h_tilde, axis=-1, keepdims=True)
            centred = h_tilde - mean
            h_tilde = centred * ops.rsqrt(ops.mean(ops.square(centred), axis=-1, keepdims=True) + 1e-5)
        h_tilde = ops.transpose(h_tilde, (0, 2, 1, 3))  # (batch, time, heads, hd)
        h_tilde = ops.reshape(h_tilde, (-1, ops.shape(h_tilde)[1], self.units))  # (batch, time, units)
        sequence = output_gate * h_tilde  # (batch, time, units)
        output = sequence if self.return_sequences else sequence[:, -1]
        if self.return_state:
            return [output, *last_states]
        return output

    def _step_path(self, query, key, value, log_i, log_f, initial_state):
        step_inputs = tuple(
            ops.moveaxis(x, 2, 0) for x in (query, key, value, log_i, log_f)
        )  # (time, batch, heads, hd) x 3, (time, batch, heads) x 2

        def step(states, inputs_t):
            h_tilde, new_states = mlstm_step(states, *inputs_t)
            return new_states, h_tilde  # (batch, heads, hd)

        last_states, h_tilde = run_steps(step, initial_state, step_inputs)  # (time, batch, heads, hd)
        return ops.moveaxis(h_tilde, 0, 2), last_states

    def state_shapes(self, batch_size):
        heads, head_dim = self.num_heads, self.head_dim
        return [(batch_size, heads, head_dim, head_dim), (batch_size, heads, head_dim), (batch_size, heads)]
