"""sLSTM: the scalar-memory LSTM of xLSTM, with exponential gating."""

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


def slstm_step(states, preactivations, forget_gate="sigmoid"):
    """One stabilised sLSTM step (seed 003 eqs. 8-14, xLSTM stabilisation).

    With `z_t = tanh(z~_t)`, `log i_t = i~_t`, `log f_t` from
    `log_forget_gate` and `o_t = sigmoid(o~_t)`:

        m_t  = max(log f_t + m_{t-1}, log i_t)          (stabiliser)
        i'_t = exp(log i_t - m_t)
        f'_t = exp(log f_t + m_{t-1} - m_t)
        c_t  = f'_t * c_{t-1} + i'_t * z_t             (eq. 8)
        n_t  = f'_t * n_{t-1} + i'_t                   (eq. 9)
        h_t  = o_t * c_t / n_t                          (eq. 10)

    `c` and `n` are the paper's states scaled by `exp(-m_t)`, so `c_t / n_t`
    is unchanged. On a fresh state (`n_{t-1} = 0`) the stabiliser starts at
    `m_t = log i_t`, which gives `n_t = 1`; from then on `n_t >= 1`, so the
    division never sees zero. `f'_t` is clipped at 1, which only matters on
    a fresh state, where `c_{t-1} = n_{t-1} = 0` make it irrelevant.

    Args:
        states: tuple `(h, c, n, m)`, each `(batch, units)`.
        preactivations: `(batch, 4 * units)`, `[z~ | i~ | f~ | o~]` (the
            input and recurrent projections, summed).
        forget_gate: `"sigmoid"` or `"exp"`.

    Returns:
        The new states `(h, c, n, m)`, each `(batch, units)`.
    """
    _, c_prev, n_prev, m_prev = states
    z_logits, i_logits, f_logits, o_logits = ops.split(preactivations, 4, axis=-1)  # 4 x (batch, units)
    z = ops.tanh(z_logits)  # (batch, units)
    o = ops.sigmoid(o_logits)  # (batch, units)
    log_i = i_logits  # (batch, units)
    log_f = log_forget_gate(f_logits, forget_gate)  # (batch, units)

    m = ops.where(n_prev == 0, log_i, ops.maximum(log_f + m_prev, log_i))  # (batch, units)
    i_stable = ops.exp(log_i - m)  # (batch, units)
    f_stable = ops.exp(ops.minimum(log_f + m_prev - m, 0.0))  # (batch, units)
    c = f_stable * c_prev + i_stable * z  # (batch, units)
    n = f_stable * n_prev + i_stable  # (batch, units)
    h = o * c / n  # (batch, units)
    return h, c, n, m


@keras.saving.register_keras_serializable(package="predcalc")
class SLSTM(SequenceLayer):
    """Scalar LSTM (sLSTM) of xLSTM, with exponential gating.

    Implements the sLSTM cell of seed 003 (eqs. 8-14; Beck et al. 2024,
    arXiv 2405.04517, Section 2.2) with the paper's stabiliser state:

        c_t = f_t * c_{t-1} + i_t * z_t            cell state        (8)
        n_t = f_t * n_{t-1} + i_t                  normaliser state  (9)
        h_t = o_t * h~_t,  h~_t = c_t / n_t        hidden state     (10)
        z_t = tanh(W_z x_t + R_z h_{t-1} + b_z)    cell input       (11)
        i_t = exp(W_i x_t + R_i h_{t-1} + b_i)     input gate       (12)
        f_t = sigmoid(f~_t) OR exp(f~_t),
              f~_t = W_f x_t + R_f h_{t-1} + b_f   forget gate      (13)
        o_t = sigmoid(W_o x_t + R_o h_{t-1} + b_o) output gate      (14)

    computed with the stabiliser `m_t = max(log f_t + m_{t-1}, log i_t)`,
    `i'_t = exp(log i_t - m_t)`, `f'_t = exp(log f_t + m_{t-1} - m_t)` in
    place of `i_t`, `f_t`, which leaves `h_t` unchanged
    and keeps `exp` from overflowing. The recurrent matrices `R` are
    block-diagonal over `num_heads` heads (memory mixing within a head only,
    as in the paper). Because the gates see `h_{t-1}`, the layer has no
    parallel form: it runs one step at a time with `keras.ops.scan`. On
    TensorFlow the gradient of that loop does not compile under XLA, so the
    layer reports `supports_jit=False` there.

    The layer does not support masking.

    Args:
        units: int, the size of the hidden state and of the output.
        num_heads: int, the number of heads of the block-diagonal recurrent
            matrices; must divide `units`. Defaults to `1` (a full recurrent
            matrix).
        forget_gate: `"sigmoid"` (default) or `"exp"`, the activation of the
            forget gate (eq. 13).
        return_sequences: bool, return the whole sequence `(batch, time,
            units)` instead of the last output `(batch, units)`. Defaults to
            `False`.
        return_state: bool, also return the last states `[h, c, n, m]`, to
            continue the sequence later with `initial_state`. Defaults to
            `False`.
        use_bias: bool, whether the gates have biases. Defaults to `True`.
        kernel_initializer: initializer of the input kernel `(features,
            4 * units)`, laid out `[z | i | f | o]`. Defaults to
            `"glorot_uniform"`.
        recurrent_initializer: initializer of the recurrent kernel
            `(num_heads, units // num_heads, 4 * units // num_heads)`, each
            head laid out `[z | i | f | o]`. Defaults to `"orthogonal"`.
        bias_initializer: initializer of the bias `(4 * units,)`. Defaults to
            `"zeros"`.
        **kwargs: base layer keyword arguments, e.g. `name` and `dtype`.

    Call arguments:
        inputs: `(batch, time, features)` tensor.
        initial_state: optional list `[h, c, n, m]` of `(batch, units)`
            tensors; zeros when omitted. Pass the states returned with
            `return_state=True` to continue a sequence.

    Returns:
        `(batch, time, units)` if `return_sequences` else `(batch, units)`;
        with `return_state=True`, a list `[output, h, c, n, m]`.

    Example:
        >>> inputs = keras.Input((15, 1))
        >>> x = SLSTM(32, num_heads=4, return_sequences=True)(inputs)
        >>> model = keras.Model(inputs, keras.layers.Dense(1)(x[:, -1]))
        >>> model.output_shape
        (None, 1)

    States carry across calls as in `MLSTM`'s example:
    `first, *states = layer(part)`, then `layer(rest, initial_state=states)`.

    Reference: Beck et al., 2024, "xLSTM: Extended Long Short-Term Memory"
    (https://arxiv.org/abs/2405.04517).
    """

    config_names = ("units", "num_heads", "forget_gate", "return_sequences", "return_state", "use_bias")
    config_initializers = ("kernel_initializer", "recurrent_initializer", "bias_initializer")

    def __init__(
        self,
        units,
        num_heads=1,
        forget_gate="sigmoid",
        return_sequences=False,
        return_state=False,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        units, num_heads = checked_heads(units, num_heads, forget_gate)
        check_bools(return_sequences=return_sequences, return_state=return_state, use_bias=use_bias)
        self.units = units
        self.num_heads = num_heads
        self.head_dim = units // num_heads
        self.forget_gate = forget_gate
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.use_bias = use_bias
        set_initializers(
            self,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
        )
        no_xla_on_tensorflow(self)  # `keras.ops.scan` does not train under XLA on TF

    def build(self, input_shape):
        input_dim = sequence_input_dim(self, input_shape)
        self.kernel = self.add_weight(
            name="kernel",
            shape=(input_dim, 4 * self.units),
            initializer=self.kernel_initializer,
        )
        self.recurrent_kernel = self.add_weight(
            name="recurrent_kernel",
            shape=(self.num_heads, self.head_dim, 4 * self.head_dim),
            initializer=self.recurrent_initializer,
        )
        if self.use_bias:
            self.bias = self.add_weight(
                name="bias",
                shape=(4 * self.units,),
                initializer=self.bias_initializer,
            )
        else:
            self.bias = None

    def _recurrent_preactivations(self, h_prev):
        heads, head_dim = self.num_heads, self.head_dim
        h_heads = ops.reshape(h_prev, (-1, heads, head_dim))  # (batch, heads, hd)
        mixed = ops.einsum("bhd,hde->bhe", h_heads, self.recurrent_kernel)  # (batch, heads, 4*hd)
        mixed = ops.reshape(mixed, (-1, heads, 4, head_dim))  # (batch, heads, 4, hd)
        mixed = ops.transpose(mixed, (0, 2, 1, 3))  # (batch, 4, heads, hd)
        return ops.reshape(mixed, (-1, 4 * self.units))  # (batch, 4*units)

    def call(self, inputs, initial_state=None):
        projected = ops.matmul(inputs, self.kernel)  # (batch, time, 4*units)
        if self.bias is not None:
            projected = projected + self.bias  # (batch, time, 4*units)
        projected = ops.moveaxis(projected, 1, 0)  # (time, batch, 4*units)
        if initial_state is None:
            zeros = ops.zeros_like(projected[0, :, : self.units])  # (batch, units)
            initial_state = (zeros, zeros, zeros, zeros)
        else:
            initial_state = tuple(initial_state)
            if len(initial_state) != 4:
                raise ValueError(f"SLSTM expects initial_state=[h, c, n, m]. Received {len(initial_state)} tensors.")

        def step(states, projected_t):
            h_prev = states[0]  # (batch, units)
            preactivations = projected_t + self._recurrent_preactivations(h_prev)  # (batch, 4*units)
            new_states = slstm_step(states, preactivations, self.forget_gate)  # 4 x (batch, units)
            return new_states, new_states[0]

        last_states, sequence = run_steps(step, initial_state, projected)  # 4 x (batch, units), (time, batch, units)
        sequence = ops.moveaxis(sequence, 0, 1)  # (batch, time, units)

        output = sequence if self.return_sequences else last_states[0]
        if self.return_state:
            return [output, *last_states]
        return output

    def state_shapes(self, batch_size):
        return [(batch_size, self.units)] * 4
