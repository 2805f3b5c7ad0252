"""The GRU cell written exactly as equations (7)-(10) of reference document 000."""

import keras
import numpy as np
from keras import ops

from predcalc.layers._reference_cell import (
    ReferenceCell,
    check_keras_kernels,
    keras_blocks_to_reference,
    reference_to_keras_blocks,
)

# Reference symbol -> attribute of `ReferenceGRUCell`, in the order the weights are
# created (and so the order of `cell.weights` and `cell.get_weights()`).
REFERENCE_GRU_WEIGHT_NAMES = (
    ("W_z", "update_kernel"),
    ("W_r", "reset_kernel"),
    ("W_h", "candidate_kernel"),
    ("b_z", "update_bias"),
    ("b_r", "reset_bias"),
    ("b_h", "candidate_bias"),
)
# Column blocks of the Keras GRU kernels and bias: gate order z, r, h.
_KERAS_GATE_INDEX = {"z": 0, "r": 1, "h": 2}
_SIGNS = {"z": -1.0}  # Keras' z is the prior report's 1 - z: the update gate's weights are negated


def keras_gru_to_reference(kernel, recurrent_kernel, bias=None):
    """Maps `keras.layers.GRU(reset_after=False)` weights to reference eq. (7)-(9).

    Keras computes `x_t @ kernel + h_{t-1} @ recurrent_kernel[:, :2u] + bias`
    with the columns in gate order z, r, h, and mixes the states as
    `h_t = z * h_{t-1} + (1 - z) * h~_t`. Seed equation (10) mixes them the
    other way round, `h_t = (1 - z_t) * h_{t-1} + z_t * h~_t`, so the prior report's
    update gate is `1 - z_keras = sigmoid(-a_z)`: its matrix and bias are the
    negated Keras ones. With `block_g` the columns of gate `g`:

    ```
    W_z = -concatenate([recurrent_kernel[:, block_z].T, kernel[:, block_z].T], 1)
    b_z = -bias[block_z]
    W_r =  concatenate([recurrent_kernel[:, block_r].T, kernel[:, block_r].T], 1)
    b_r =  bias[block_r]
    W_h =  concatenate([recurrent_kernel[:, block_h].T, kernel[:, block_h].T], 1)
    b_h =  bias[block_h]
    ```

    Only `reset_after=False` (reset gate applied to `h_{t-1}` before the
    matrix product, as in reference eq. (9) and Cho et al. 2014) can be mapped;
    the default `reset_after=True` variant has a second bias of shape
    `(2, 3 * units)` and a different equation, and is refused.

    Args:
        kernel: array of shape `(input_dim, 3 * units)`.
        recurrent_kernel: array of shape `(units, 3 * units)`.
        bias: array of shape `(3 * units,)`, or `None` for a GRU built with
            `use_bias=False` (the reference biases are then zero).

    Returns:
        dict from the reference symbols `"W_z", "W_r", "W_h"` (arrays of shape
        `(units, units + input_dim)`) and `"b_z", "b_r", "b_h"` (arrays of
        shape `(units,)`) to NumPy arrays.
    """
    kernel, recurrent_kernel, units = check_keras_kernels(kernel, recurrent_kernel, 3)
    if bias is None:
        bias = np.zeros((3 * units,), dtype=kernel.dtype)
    bias = np.asarray(bias)
    if bias.shape != (3 * units,):
        raise ValueError(
            "Only keras.layers.GRU(reset_after=False) matches reference equation "
            f"(9); expected `bias` of shape ({3 * units},). Received: "
            f"bias.shape={bias.shape} (a (2, 3 * units) bias means "
            "reset_after=True)"
        )
    return keras_blocks_to_reference(kernel, recurrent_kernel, bias, _KERAS_GATE_INDEX, _SIGNS)


def reference_to_keras_gru(weights):
    """Maps seed matrices `W_z, W_r, W_h, b_*` to `keras.layers.GRU(reset_after=False)`.

    The inverse of `keras_gru_to_reference` (negates the update gate again).

    Args:
        weights: dict from the reference symbols (see `keras_gru_to_reference`) to
            arrays.

    Returns:
        `[kernel, recurrent_kernel, bias]`, ready for `GRU.set_weights`.
    """
    return reference_to_keras_blocks(weights, _KERAS_GATE_INDEX, _SIGNS)  # gate order z, r, h


@keras.saving.register_keras_serializable(package="predcalc")
class ReferenceGRUCell(ReferenceCell):
    """GRU cell implementing seed 000 equations (7)-(10) literally, one time step.

    With `[h_{t-1}, x_t]` the concatenation of the previous hidden state and
    the current input (reference document 000 "Findings", section 2.2):

    ```
    z_t  = sigmoid(W_z [h_{t-1}, x_t] + b_z)          (7)  update gate
    r_t  = sigmoid(W_r [h_{t-1}, x_t] + b_r)          (8)  reset gate
    h~_t = tanh(W_h [r_t * h_{t-1}, x_t] + b_h)       (9)  candidate state
    h_t  = (1 - z_t) * h_{t-1} + z_t * h~_t           (10) hidden state
    ```

    Seed document 001 (section 4) writes the same cell without biases and
    with separate input and recurrent matrices (`W_z x_t + U_z h_{t-1}`).
    The reset gate is applied to `h_{t-1}` before the matrix product (eq. 9),
    the variant of Cho et al. (2014), which is
    `keras.layers.GRU(reset_after=False)`; Keras' default `reset_after=True`
    is a different cell. Keras also swaps the roles of the update gate,
    `h_t = z * h_{t-1} + (1 - z) * h~_t`, so `z_t (seed) = 1 - z (Keras)`:
    converting weights negates the update gate's matrix and bias
    (`W_z = -W_z (Keras)`, `b_z = -b_z (Keras)`, since
    `1 - sigmoid(a) = sigmoid(-a)`). `keras_gru_to_reference` /
    `reference_to_keras_gru` (module functions) and `set_keras_weights` /
    `get_keras_weights` (methods) do the conversion; the test suite checks
    that the outputs then agree to 1e-5.

    Weights, stored as the prior report writes them (output dimension first):
    `update_kernel` = `W_z`, `reset_kernel` = `W_r`, `candidate_kernel` =
    `W_h`, each of shape `(units, units + input_dim)` whose first `units`
    columns multiply `h_{t-1}` (or `r_t * h_{t-1}`); and `update_bias` =
    `b_z`, `reset_bias` = `b_r`, `candidate_bias` = `b_h` of shape
    `(units,)`.

    Args:
        units: int. Size of `h_t`. Must be positive.
        kernel_initializer: initializer for the matrices `W_z, W_r, W_h`.
            Defaults to `"glorot_uniform"`.
        bias_initializer: initializer for the biases. Defaults to `"zeros"`.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`,
            e.g. `name` and `dtype`.

    Call arguments:
        inputs: float tensor of shape `(batch, input_dim)`, the input `x_t`.
        states: list holding `h_{t-1}`, a tensor of shape `(batch, units)`
            (or that tensor itself).
        training: unused; accepted for the `keras.layers.RNN` contract.

    Returns:
        `(h_t, [h_t])`. For the gate activations use
        `step_with_gates(inputs, states)`, which returns a dict with keys
        `"z", "r", "h_tilde", "h"`, or `gate_sequence(sequence)` for a whole
        sequence (eager only).

    Example:
        >>> x = np.arange(2 * 5 * 3, dtype="float32").reshape(2, 5, 3) / 30.0
        >>> keras_gru = keras.layers.GRU(4, reset_after=False)
        >>> expected = keras.ops.convert_to_numpy(keras_gru(x))
        >>> cell = ReferenceGRUCell(4)
        >>> cell.set_keras_weights(keras_gru)  # W_z, b_z negated
        >>> np.allclose(keras.ops.convert_to_numpy(keras.layers.RNN(cell)(x)), expected, atol=1e-6)
        True
        >>> tuple(cell.gate_sequence(x)["z"].shape)
        (2, 5, 4)

    References:
        - Cho, K., van Merrienboer, B., Bahdanau, D., & Bengio, Y. (2014).
          On the properties of neural machine translation: Encoder-decoder
          approaches. https://arxiv.org/abs/1409.1259
        - Chung, J., Gulcehre, C., Cho, K., & Bengio, Y. (2014). Empirical
          evaluation of gated recurrent neural networks on sequence
          modeling. https://arxiv.org/abs/1412.3555
    """

    _weight_names = REFERENCE_GRU_WEIGHT_NAMES
    _keras_name = "GRU"
    _keras_layers = (keras.layers.GRU, keras.layers.GRUCell)
    _equations = "(7)-(10)"
    _keras_to_reference = staticmethod(keras_gru_to_reference)
    _reference_to_keras = staticmethod(reference_to_keras_gru)

    def __init__(
        self,
        units,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(units, kernel_initializer, bias_initializer, **kwargs)
        self.state_size = self.units
        self.output_size = self.units

    def step_with_gates(self, inputs, states):
        """One step of equations (7)-(10) returning every intermediate.

        Args:
            inputs: tensor of shape `(batch, input_dim)`, the input `x_t`.
            states: `h_{t-1}` of shape `(batch, units)`, or a list holding it.

        Returns:
            dict with keys `"z"` (z_t), `"r"` (r_t), `"h_tilde"` (h~_t) and
            `"h"` (h_t), each a tensor of shape `(batch, units)`.
        """
        if not self.built:
            self.build(ops.shape(inputs))
        h_previous = states[0] if isinstance(states, (list, tuple)) else states
        inputs = ops.convert_to_tensor(inputs, dtype=self.compute_dtype)
        h_previous = ops.convert_to_tensor(h_previous, dtype=self.compute_dtype)
        h_x = ops.concatenate([h_previous, inputs], axis=-1)  # (batch, units + in)
        z = ops.sigmoid(ops.matmul(h_x, ops.transpose(self.update_kernel)) + self.update_bias)  # (7) (batch, units)
        r = ops.sigmoid(ops.matmul(h_x, ops.transpose(self.reset_kernel)) + self.reset_bias)  # (8) (batch, units)
        reset_h_x = ops.concatenate([r * h_previous, inputs], axis=-1)
        h_tilde = ops.tanh(
            ops.matmul(reset_h_x, ops.transpose(self.candidate_kernel)) + self.candidate_bias
        )  # (9) (batch, units)
        h = (1.0 - z) * h_previous + z * h_tilde  # (10) (batch, units)
        return {"z": z, "r": r, "h_tilde": h_tilde, "h": h}

    def call(self, inputs, states, training=False):
        h = self.step_with_gates(inputs, states)["h"]
        return h, ([h] if isinstance(states, (list, tuple)) else h)

    def _initial_states(self, batch, initial_state):
        if initial_state is None:
            return self._zero_state(batch)
        return initial_state[0] if isinstance(initial_state, (list, tuple)) else initial_state

    def _next_states(self, step):
        return step["h"]

    def _check_keras_cell(self, cell):
        if cell.reset_after:
            raise ValueError(
                "ReferenceGRUCell implements reference equation (9), the `reset_after=False` GRU. Received: reset_after=True"
            )
        super()._check_keras_cell(cell)
