"""Tests of `ReferenceGRUCell` (seed 000 equations (7)-(10)) and `ReferenceLSTMCell` (equations (1)-(6)):
one module, parameterised by the cell, against float64 NumPy references and Keras' own GRU and
LSTM; the GRU's swapped update gate and the LSTM's gate order have tests of their own."""

import dataclasses

import keras
import numpy as np
import pytest
from layer_helpers import pattern, ramp, reference_cell_with_weights, reference_layout_weights, sigmoid, to_numpy

from predcalc.layers.reference_gru_cell import (
    REFERENCE_GRU_WEIGHT_NAMES,
    ReferenceGRUCell,
    keras_gru_to_reference,
    reference_to_keras_gru,
)
from predcalc.layers.reference_lstm_cell import (
    REFERENCE_LSTM_WEIGHT_NAMES,
    ReferenceLSTMCell,
    keras_lstm_to_reference,
    reference_to_keras_lstm,
)

BATCH, TIME, FEATURES, UNITS = 2, 5, 3, 4


def numpy_reference_gru(x, w):
    """Seed 000 equations (7)-(10) in float64; returns every intermediate."""
    h = np.zeros((x.shape[0], w["W_z"].shape[0]))
    trace = {key: [] for key in ("z", "r", "h_tilde", "h")}
    for t in range(x.shape[1]):
        h_x = np.concatenate([h, x[:, t]], axis=-1)
        z = sigmoid(h_x @ w["W_z"].T + w["b_z"])  # (7)
        r = sigmoid(h_x @ w["W_r"].T + w["b_r"])  # (8)
        reset_h_x = np.concatenate([r * h, x[:, t]], axis=-1)
        h_tilde = np.tanh(reset_h_x @ w["W_h"].T + w["b_h"])  # (9)
        h = (1.0 - z) * h + z * h_tilde  # (10)
        for key, value in zip(trace, (z, r, h_tilde, h)):
            trace[key].append(value)
    return {key: np.stack(values, axis=1) for key, values in trace.items()}


def numpy_reference_lstm(x, w):
    """Seed 000 equations (1)-(6) in float64; returns every intermediate."""
    units = w["W_f"].shape[0]
    h, c = np.zeros((x.shape[0], units)), np.zeros((x.shape[0], units))
    trace = {key: [] for key in ("f", "i", "C_tilde", "o", "C", "h")}
    for t in range(x.shape[1]):
        h_x = np.concatenate([h, x[:, t]], axis=-1)
        f = sigmoid(h_x @ w["W_f"].T + w["b_f"])  # (1)
        i = sigmoid(h_x @ w["W_i"].T + w["b_i"])  # (2)
        c_tilde = np.tanh(h_x @ w["W_C"].T + w["b_C"])  # (3)
        o = sigmoid(h_x @ w["W_o"].T + w["b_o"])  # (4)
        c = f * c + i * c_tilde  # (5)
        h = o * np.tanh(c)  # (6)
        for key, value in zip(trace, (f, i, c_tilde, o, c, h)):
            trace[key].append(value)
    return {key: np.stack(values, axis=1) for key, values in trace.items()}


@dataclasses.dataclass(frozen=True)
class ReferenceCell:
    """A reference cell with its weight names, NumPy reference, states (the reference's keys), the
    Keras layer it maps to (built with pattern weights), and the scale of its test weights."""

    cell: type
    weight_names: tuple
    reference: callable
    states: tuple
    keras_layer: callable
    gates: int
    w_scale: float

    def reference_weights(self):
        return reference_layout_weights(self.weight_names, UNITS, FEATURES, self.w_scale)

    def with_weights(self, weights):
        return reference_cell_with_weights(self.cell(UNITS), self.weight_names, weights, FEATURES)

    def keras(self, **kwargs):
        layer = self.keras_layer(UNITS, return_sequences=True, return_state=True, **kwargs)
        layer.build((None, TIME, FEATURES))
        bias_shape = (2, self.gates * UNITS) if kwargs.get("reset_after") else (self.gates * UNITS,)
        layer.set_weights(
            [
                pattern((FEATURES, self.gates * UNITS), self.w_scale, 10.0),
                pattern((UNITS, self.gates * UNITS), self.w_scale, 20.0),
                pattern(bias_shape, 0.3, 30.0),
            ]
        )
        return layer


GRU = ReferenceCell(
    ReferenceGRUCell,
    REFERENCE_GRU_WEIGHT_NAMES,
    numpy_reference_gru,
    ("h",),
    lambda units, **kwargs: keras.layers.GRU(units, reset_after=kwargs.pop("reset_after", False), **kwargs),
    gates=3,
    w_scale=0.7,
)
LSTM = ReferenceCell(
    ReferenceLSTMCell,
    REFERENCE_LSTM_WEIGHT_NAMES,
    numpy_reference_lstm,
    ("h", "C"),
    keras.layers.LSTM,
    gates=4,
    w_scale=0.6,
)
CELLS = pytest.mark.parametrize("seed", [GRU, LSTM], ids=["gru", "lstm"])


def _inputs():
    return ramp((BATCH, TIME, FEATURES))


@pytest.mark.parametrize(
    "seed, scale, expected",
    [
        (GRU, 0.2, [[0.01009865, 0.05831714, 0.13109884], [0.14358449, 0.27169475, 0.3857219]]),
        (LSTM, 0.1, [[0.00252496, 0.01457709, 0.033105], [0.03659199, 0.071935, 0.10788721]]),
    ],
    ids=["gru", "lstm"],
)
def test_constant_weights_pinned_numbers(seed, scale, expected):
    x = np.arange(2 * 3 * 2, dtype="float32").reshape(2, 3, 2) / 10.0
    extra = {"unit_forget_bias": False} if seed is LSTM else {}
    cell = seed.cell(2, kernel_initializer=keras.initializers.Constant(scale), bias_initializer="zeros", **extra)
    outputs = to_numpy(keras.layers.RNN(cell, return_sequences=True)(x))
    constant = {symbol: np.full((2, 4), scale) if symbol[0] == "W" else np.zeros(2) for symbol, _ in seed.weight_names}
    np.testing.assert_allclose(outputs, seed.reference(x.astype("float64"), constant)["h"], atol=1e-5)
    np.testing.assert_allclose(outputs[:, :, 0], expected, atol=1e-5)


@CELLS
def test_matches_numpy_reference_with_states(seed):
    weights = seed.reference_weights()
    rnn = keras.layers.RNN(seed.with_weights(weights), return_sequences=True, return_state=True)
    outputs, *states = to_numpy(rnn(_inputs()))
    reference = seed.reference(_inputs().astype("float64"), weights)
    np.testing.assert_allclose(outputs, reference["h"], atol=1e-5)
    for name, state in zip(seed.states, states, strict=True):
        np.testing.assert_allclose(state, reference[name][:, -1], atol=1e-5)


@CELLS
def test_step_with_gates_and_gate_sequence_match_numpy(seed):
    weights = seed.reference_weights()
    cell = seed.with_weights(weights)
    reference = seed.reference(_inputs().astype("float64"), weights)
    step = cell.step_with_gates(_inputs()[:, 0], [np.zeros((BATCH, UNITS), "float32")] * len(seed.states))
    assert sorted(step) == sorted(reference)
    for key, value in step.items():
        np.testing.assert_allclose(to_numpy(value), reference[key][:, 0], atol=1e-5)
    for key, value in cell.gate_sequence(_inputs()).items():
        assert tuple(value.shape) == (BATCH, TIME, UNITS)
        np.testing.assert_allclose(to_numpy(value), reference[key], atol=1e-5)


@CELLS
def test_equals_the_keras_layer_after_loading_its_weights(seed):
    keras_layer = seed.keras()
    cell = seed.cell(UNITS)
    cell.set_keras_weights(keras_layer)  # builds the cell (the GRU's W_z and b_z negated)
    reference_rnn = keras.layers.RNN(cell, return_sequences=True, return_state=True)
    initial = [pattern((BATCH, UNITS), 0.5, 40.0 + 10 * i) for i in range(len(seed.states))]
    for expected, actual in zip(
        to_numpy(keras_layer(_inputs(), initial_state=initial)),
        to_numpy(reference_rnn(_inputs(), initial_state=initial)),
        strict=True,
    ):
        np.testing.assert_allclose(actual, expected, atol=1e-5)


@CELLS
def test_the_keras_layer_equals_the_cell_after_loading_reference_weights(seed):
    reference_rnn = keras.layers.RNN(
        seed.with_weights(seed.reference_weights()), return_sequences=True, return_state=True
    )
    keras_layer = seed.keras()
    keras_layer.set_weights(reference_rnn.cell.get_keras_weights())
    for expected, actual in zip(to_numpy(reference_rnn(_inputs())), to_numpy(keras_layer(_inputs())), strict=True):
        np.testing.assert_allclose(actual, expected, atol=1e-5)


@CELLS
def test_masked_steps_are_skipped(seed):
    weights = seed.reference_weights()
    rnn = keras.layers.RNN(seed.with_weights(weights))
    mask = np.array([[True] * TIME, [True, True, True, False, False]])
    masked = to_numpy(rnn(_inputs(), mask=mask))
    reference = seed.reference(_inputs().astype("float64"), weights)["h"]
    np.testing.assert_allclose(masked[0], reference[0, -1], atol=1e-5)
    np.testing.assert_allclose(masked[1], reference[1, 2], atol=1e-5)


@CELLS
def test_weight_names_and_shapes(seed):
    cell = seed.cell(UNITS)
    cell.build((None, FEATURES))
    assert [(w.name, tuple(w.shape)) for w in cell.weights] == [
        (attribute, (UNITS, UNITS + FEATURES) if symbol[0] == "W" else (UNITS,))
        for symbol, attribute in seed.weight_names
    ]
    assert cell.state_size == (UNITS if seed is GRU else [UNITS, UNITS]) and cell.output_size == UNITS


def test_lstm_forget_bias_starts_at_one():
    cell = ReferenceLSTMCell(UNITS)
    cell.build((None, FEATURES))
    biases = cell.reference_weights()
    np.testing.assert_array_equal(biases["b_f"], np.ones(UNITS))
    np.testing.assert_array_equal(biases["b_i"], np.zeros(UNITS))


def test_gru_update_gate_sign_is_swapped_relative_to_keras():
    """Reference eq. (10) weights h~ by z, Keras weights h_{t-1}: z_reference = 1 - z_keras."""
    gru = GRU.keras()
    kernel, recurrent_kernel, bias = gru.get_weights()
    seed = keras_gru_to_reference(kernel, recurrent_kernel, bias)
    np.testing.assert_allclose(seed["W_z"][:, UNITS:], -kernel[:, :UNITS].T)
    np.testing.assert_allclose(seed["W_z"][:, :UNITS], -recurrent_kernel[:, :UNITS].T)
    np.testing.assert_allclose(seed["b_z"], -bias[:UNITS])
    np.testing.assert_allclose(seed["W_r"][:, UNITS:], kernel[:, UNITS : 2 * UNITS].T)
    np.testing.assert_allclose(seed["b_h"], bias[2 * UNITS :])
    # Copying the Keras update gate without the sign flip gives another cell.
    unflipped = dict(seed, W_z=-seed["W_z"], b_z=-seed["b_z"])
    expected = to_numpy(gru(_inputs())[0])
    np.testing.assert_allclose(numpy_reference_gru(_inputs().astype("float64"), seed)["h"], expected, atol=1e-5)
    assert np.abs(numpy_reference_gru(_inputs().astype("float64"), unflipped)["h"] - expected).max() > 1e-2
    # The seed gates seen from Keras: z_reference = 1 - z_keras at the first step.
    z_keras = sigmoid(_inputs()[:, 0] @ kernel[:, :UNITS] + bias[:UNITS])
    z_reference = numpy_reference_gru(_inputs().astype("float64"), seed)["z"][:, 0]
    np.testing.assert_allclose(z_reference, 1.0 - z_keras, atol=1e-6)


def test_gru_mapping_functions_are_inverse():
    kernel, recurrent_kernel = pattern((FEATURES, 3 * UNITS), 1.0, 1.0), pattern((UNITS, 3 * UNITS), 1.0, 2.0)
    bias = pattern((3 * UNITS,), 1.0, 3.0)
    seed = keras_gru_to_reference(kernel, recurrent_kernel, bias)
    assert seed["W_h"].shape == (UNITS, UNITS + FEATURES)
    for original, restored in zip([kernel, recurrent_kernel, bias], reference_to_keras_gru(seed), strict=True):
        np.testing.assert_array_equal(restored, original)
    np.testing.assert_array_equal(keras_gru_to_reference(kernel, recurrent_kernel)["b_z"], np.zeros(UNITS))


def test_lstm_mapping_functions_are_inverse_and_use_gate_order_ifco():
    kernel, recurrent_kernel = pattern((FEATURES, 4 * UNITS), 1.0, 1.0), pattern((UNITS, 4 * UNITS), 1.0, 2.0)
    bias = pattern((4 * UNITS,), 1.0, 3.0)
    seed = keras_lstm_to_reference(kernel, recurrent_kernel, bias)
    assert seed["W_f"].shape == (UNITS, UNITS + FEATURES)
    # Keras block 1 is the forget gate; h columns first, then x columns.
    np.testing.assert_array_equal(seed["W_f"][:, :UNITS], recurrent_kernel[:, 4:8].T)
    np.testing.assert_array_equal(seed["W_f"][:, UNITS:], kernel[:, 4:8].T)
    np.testing.assert_array_equal(seed["b_i"], bias[0:4])
    np.testing.assert_array_equal(seed["b_o"], bias[12:16])
    for original, restored in zip([kernel, recurrent_kernel, bias], reference_to_keras_lstm(seed), strict=True):
        np.testing.assert_array_equal(restored, original)
    np.testing.assert_array_equal(keras_lstm_to_reference(kernel, recurrent_kernel)["b_C"], np.zeros(UNITS))


def test_gru_refuses_reset_after_true_and_other_activations():
    cell = ReferenceGRUCell(UNITS)
    with pytest.raises(ValueError, match="Received: reset_after=True"):
        cell.set_keras_weights(GRU.keras(reset_after=True))
    with pytest.raises(ValueError, match="reset_after=False"):
        keras_gru_to_reference(*GRU.keras(reset_after=True).get_weights())
    with pytest.raises(ValueError, match="Received: recurrent_activation=hard_sigmoid"):
        cell.set_keras_weights(GRU.keras(recurrent_activation="hard_sigmoid"))
    with pytest.raises(ValueError, match="has 4 units but this cell has units=2"):
        ReferenceGRUCell(2).set_keras_weights(GRU.keras())


def test_lstm_refuses_an_incompatible_keras_lstm():
    with pytest.raises(ValueError, match="Received: activation=relu"):
        ReferenceLSTMCell(UNITS).set_keras_weights(LSTM.keras(activation="relu"))
    with pytest.raises(ValueError, match="has 4 units but this cell has units=3"):
        ReferenceLSTMCell(3).set_keras_weights(LSTM.keras())
    with pytest.raises(ValueError, match="recurrent_kernel.shape=\\(4, 12\\)"):
        keras_lstm_to_reference(np.zeros((3, 12)), np.zeros((4, 12)))
