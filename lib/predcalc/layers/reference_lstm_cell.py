"""The LSTM cell written exactly as equations (1)-(6) of reference document 000."""

import keras
import numpy as np
from keras import ops

from predcalc.layers._reference_cell import (
    ReferenceCell,
    check_keras_kernels,
    keras_blocks_to_reference,
    reference_to_keras_blocks,
)

# Reference symbol -> attribute of `ReferenceLSTMCell`, in the order the weights are
# created (and so the order of `cell.weights` and `cell.get_weights()`).
REFERENCE_LSTM_WEIGHT_NAMES = (
    ("W_f", "forget_kernel"),
    ("W_i", "input_kernel"),
    ("W_C", "candidate_kernel"),
    ("W_o", "output_kernel"),
    ("b_f", "forget_bias"),
    ("b_i", "input_bias"),
    ("b_C", "candidate_bias"),
    ("b_o", "output_bias"),
)
# Column blocks of the Keras LSTM kernels and bias: gate order i, f, c, o.
_KERAS_GATE_INDEX = {"i": 0, "f": 1, "C": 2, "o": 3}


def keras_lstm_to_reference(kernel, recurrent_kernel, bias=None):
    """Maps the weights of `keras.layers.LSTM` to the matrices of reference eq. (1)-(4).

    Keras computes the four gate pre-activations at once as
    `x_t @ kernel + h_{t-1} @ recurrent_kernel + bias`, with the columns in
    gate order i, f, c, o. The prior report multiplies the concatenation
    `[h_{t-1}, x_t]` by one matrix per gate, so for gate `g` in `f, i, C, o`:

    ```
    W_g = concatenate([recurrent_kernel[:, block_g].T, kernel[:, block_g].T], axis=1)
    b_g = bias[block_g]
    ```

    Args:
        kernel: array of shape `(input_dim, 4 * units)`.
        recurrent_kernel: array of shape `(units, 4 * units)`.
        bias: array of shape `(4 * units,)`, or `None` for an LSTM built with
            `use_bias=False` (the reference biases are then zero).

    Returns:
        dict from the reference symbols `"W_f", "W_i", "W_C", "W_o"` (arrays of
        shape `(units, units + input_dim)`) and `"b_f", "b_i", "b_C", "b_o"`
        (arrays of shape `(units,)`) to NumPy arrays.
    """
    kernel, recurrent_kernel, units = check_keras_kernels(kernel, recurrent_kernel, 4)
    if bias is None:
        bias = np.zeros((4 * units,), dtype=kernel.dtype)
    bias = np.asarray(bias)
    if bias.shape != (4 * units,):
        raise ValueError(f"Expected `bias` of shape ({4 * units},). Received: bias.shape={bias.shape}")
    return keras_blocks_to_reference(kernel, recurrent_kernel, bias, _KERAS_GATE_INDEX)


def reference_to_keras_lstm(weights):
    """Maps seed matrices `W_f, W_i, W_C, W_o, b_*` to `keras.layers.LSTM` weights.

    The inverse of `keras_lstm_to_reference`.

    Args:
        weights: dict from the reference symbols (see `keras_lstm_to_reference`) to
            arrays.

    Returns:
        `[kernel, recurrent_kernel, bias]`, ready for `LSTM.set_weights`.
    """
    return reference_to_keras_blocks(weights, _KERAS_GATE_INDEX)  # gate order i, f, C, o


@keras.saving.register_keras_serializable(package="predcalc")
class ReferenceLSTMCell(ReferenceCell):
    """LSTM cell implementing seed 000 equations (1)-(6) literally, one time step.

    With `[h_{t-1}, x_t]` the concatenation of the previous hidden state and
    the current input (reference document 000 "Findings", section 2.1):

    ```
    f_t  = sigmoid(W_f [h_{t-1}, x_t] + b_f)          (1) forget gate
    i_t  = sigmoid(W_i [h_{t-1}, x_t] + b_i)          (2) input gate
    C~_t = tanh(W_C [h_{t-1}, x_t] + b_C)             (3) candidate cell state
    o_t  = sigmoid(W_o [h_{t-1}, x_t] + b_o)          (4) output gate
    C_t  = f_t * C_{t-1} + i_t * C~_t                 (5) cell state
    h_t  = o_t * tanh(C_t)                            (6) hidden state
    ```

    Seed document 001 (section 5) writes the same cell with separate input
    and recurrent matrices, `W_f x_t + U_f h_{t-1}`; those are the right and
    left column blocks of `W_f`. The computation is the one of
    `keras.layers.LSTMCell` (which is faster and should be used for training
    at scale); this cell exists to show the prior report's matrices and gates.
    `keras_lstm_to_reference` / `reference_to_keras_lstm` (module functions) and
    `set_keras_weights` / `get_keras_weights` (methods) convert weights to and
    from `keras.layers.LSTM`, whose gate order is i, f, c, o.

    Weights, stored as the prior report writes them (output dimension first):
    `forget_kernel` = `W_f`, `input_kernel` = `W_i`, `candidate_kernel` =
    `W_C`, `output_kernel` = `W_o`, each of shape `(units, units + input_dim)`
    whose first `units` columns multiply `h_{t-1}`; and `forget_bias` = `b_f`,
    `input_bias` = `b_i`, `candidate_bias` = `b_C`, `output_bias` = `b_o`,
    each of shape `(units,)`. The state is `[h_{t-1}, C_{t-1}]`, in the order
    `keras.layers.LSTM` uses, so initial states are interchangeable.

    Args:
        units: int. Size of `h_t` and `C_t`. Must be positive.
        kernel_initializer: initializer for the four matrices `W_*`. Defaults
            to `"glorot_uniform"`.
        bias_initializer: initializer for the four biases `b_*`. Defaults to
            `"zeros"`.
        unit_forget_bias: bool. If `True` (default), `b_f` starts at one
            instead of `bias_initializer`, as in `keras.layers.LSTM`
            (Jozefowicz et al., 2015).
        **kwargs: other keyword arguments passed to `keras.layers.Layer`,
            e.g. `name` and `dtype`.

    Call arguments:
        inputs: float tensor of shape `(batch, input_dim)`, the input `x_t`.
        states: list `[h_{t-1}, C_{t-1}]` of two tensors of shape
            `(batch, units)`.
        training: unused; accepted for the `keras.layers.RNN` contract.

    Returns:
        `(h_t, [h_t, C_t])`. For the gate activations use
        `step_with_gates(inputs, states)`, which returns a dict with keys
        `"f", "i", "C_tilde", "o", "C", "h"`, or
        `gate_sequence(sequence)` for a whole sequence (eager only).

    Example:
        >>> x = np.arange(2 * 5 * 3, dtype="float32").reshape(2, 5, 3) / 30.0
        >>> keras_lstm = keras.layers.LSTM(4)
        >>> expected = keras.ops.convert_to_numpy(keras_lstm(x))
        >>> cell = ReferenceLSTMCell(4)
        >>> cell.set_keras_weights(keras_lstm)  # same numbers, seed layout
        >>> np.allclose(keras.ops.convert_to_numpy(keras.layers.RNN(cell)(x)), expected, atol=1e-6)
        True
        >>> tuple(cell.gate_sequence(x)["f"].shape)
        (2, 5, 4)

    References:
        - Hochreiter, S., & Schmidhuber, J. (1997). Long short-term memory.
          Neural Computation, 9(8), 1735-1780.
        - Gers, F. A., Schmidhuber, J., & Cummins, F. (2000). Learning to
          forget: continual prediction with LSTM. Neural Computation, 12(10).
        - Jozefowicz, R., Zaremba, W., & Sutskever, I. (2015). An empirical
          exploration of recurrent network architectures. ICML.
    """

    _weight_names = REFERENCE_LSTM_WEIGHT_NAMES
    _keras_name = "LSTM"
    _keras_layers = (keras.layers.LSTM, keras.layers.LSTMCell)
    _equations = "(1)-(6)"
    _keras_to_reference = staticmethod(keras_lstm_to_reference)
    _reference_to_keras = staticmethod(reference_to_keras_lstm)

    def __init__(
        self,
        units,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        unit_forget_bias=True,
        **kwargs,
    ):
        super().__init__(units, kernel_initializer, bias_initializer, **kwargs)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.state_size = [self.units, self.units]
        self.output_size = self.units

    def _bias_initializer_for(self, symbol):
        return "ones" if symbol == "b_f" and self.unit_forget_bias else self.bias_initializer

    def step_with_gates(self, inputs, states):
        """One step of equations (1)-(6) returning every intermediate.

        Args:
            inputs: tensor of shape `(batch, input_dim)`, the input `x_t`.
            states: `[h_{t-1}, C_{t-1}]`, two tensors of shape
                `(batch, units)`.

        Returns:
            dict with keys `"f"` (f_t), `"i"` (i_t), `"C_tilde"` (C~_t),
            `"o"` (o_t), `"C"` (C_t) and `"h"` (h_t), each a tensor of shape
            `(batch, units)`.
        """
        if not self.built:
            self.build(ops.shape(inputs))
        inputs = ops.convert_to_tensor(inputs, dtype=self.compute_dtype)
        h_previous = ops.convert_to_tensor(states[0], dtype=self.compute_dtype)
        c_previous = ops.convert_to_tensor(states[1], dtype=self.compute_dtype)
        # [h_{t-1}, x_t]: (batch, units + input_dim)
        h_x = ops.concatenate([h_previous, inputs], axis=-1)

        def affine(kernel, bias):
            return ops.matmul(h_x, ops.transpose(kernel)) + bias  # (batch, units)

        f = ops.sigmoid(affine(self.forget_kernel, self.forget_bias))  # (1)
        i = ops.sigmoid(affine(self.input_kernel, self.input_bias))  # (2)
        c_tilde = ops.tanh(affine(self.candidate_kernel, self.candidate_bias))  # (3)
        o = ops.sigmoid(affine(self.output_kernel, self.output_bias))  # (4)
        c = f * c_previous + i * c_tilde  # (5) (batch, units)
        h = o * ops.tanh(c)  # (6) (batch, units)
        return {"f": f, "i": i, "C_tilde": c_tilde, "o": o, "C": c, "h": h}

    def call(self, inputs, states, training=False):
        step = self.step_with_gates(inputs, states)
        return step["h"], [step["h"], step["C"]]

    def _initial_states(self, batch, initial_state):
        if initial_state is None:
            return [self._zero_state(batch), self._zero_state(batch)]
        return list(initial_state)

    def _next_states(self, step):
        return [step["h"], step["C"]]

    def get_config(self):
        config = super().get_config()
        config.update({"unit_forget_bias": self.unit_forget_bias})
        return config
