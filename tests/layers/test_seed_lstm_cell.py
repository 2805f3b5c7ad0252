"""Tests for `SeedLSTMCell`: seed 000 equations (1)-(6) and the Keras LSTM mapping."""

import keras
import numpy as np
import pytest
from keras import ops

from predcalc.layers.seed_lstm_cell import (
    SEED_LSTM_WEIGHT_NAMES,
    SeedLSTMCell,
    keras_lstm_to_seed,
    seed_to_keras_lstm,
)
from layer_helpers import pattern, ramp, seed_cell_with_weights, seed_layout_weights, sigmoid, to_numpy

BATCH, TIME, FEATURES, UNITS = 2, 5, 3, 4


def _inputs():
    return ramp((BATCH, TIME, FEATURES))


def _seed_weights():
    return seed_layout_weights(SEED_LSTM_WEIGHT_NAMES, UNITS, FEATURES, w_scale=0.6)


def numpy_seed_lstm(x, w, h0=None, c0=None):
    """Seed 000 equations (1)-(6) in float64; returns every intermediate."""
    units = w["W_f"].shape[0]
    h = np.zeros((x.shape[0], units)) if h0 is None else h0
    c = np.zeros((x.shape[0], units)) if c0 is None else c0
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


def _cell_with_seed_weights(weights):
    return seed_cell_with_weights(SeedLSTMCell(UNITS), SEED_LSTM_WEIGHT_NAMES, weights, FEATURES)


def _keras_lstm(**kwargs):
    lstm = keras.layers.LSTM(UNITS, return_sequences=True, return_state=True, **kwargs)
    lstm.build((None, TIME, FEATURES))
    lstm.set_weights(
        [
            pattern((FEATURES, 4 * UNITS), 0.6, 10.0),
            pattern((UNITS, 4 * UNITS), 0.6, 20.0),
            pattern((4 * UNITS,), 0.3, 30.0),
        ]
    )
    return lstm


def test_constant_weights_pinned_numbers():
    x = np.arange(2 * 3 * 2, dtype="float32").reshape(2, 3, 2) / 10.0
    cell = SeedLSTMCell(
        2,
        kernel_initializer=keras.initializers.Constant(0.1),
        bias_initializer="zeros",
        unit_forget_bias=False,
    )
    outputs = keras.layers.RNN(cell, return_sequences=True)(x)
    constant = {
        symbol: np.full((2, 4), 0.1) if symbol[0] == "W" else np.zeros(2)
        for symbol, _ in SEED_LSTM_WEIGHT_NAMES
    }
    reference = numpy_seed_lstm(x.astype("float64"), constant)["h"]
    np.testing.assert_allclose(ops.convert_to_numpy(outputs), reference, atol=1e-5)
    np.testing.assert_allclose(
        ops.convert_to_numpy(outputs)[:, :, 0],
        [[0.00252496, 0.01457709, 0.033105], [0.03659199, 0.071935, 0.10788721]],
        atol=1e-5,
    )


def test_matches_numpy_reference_with_states():
    weights = _seed_weights()
    rnn = keras.layers.RNN(
        _cell_with_seed_weights(weights), return_sequences=True, return_state=True
    )
    outputs, h, c = to_numpy(rnn(_inputs()))
    reference = numpy_seed_lstm(_inputs().astype("float64"), weights)
    np.testing.assert_allclose(outputs, reference["h"], atol=1e-5)
    np.testing.assert_allclose(h, reference["h"][:, -1], atol=1e-5)
    np.testing.assert_allclose(c, reference["C"][:, -1], atol=1e-5)


def test_step_with_gates_and_gate_sequence_match_numpy():
    weights = _seed_weights()
    cell = _cell_with_seed_weights(weights)
    reference = numpy_seed_lstm(_inputs().astype("float64"), weights)
    zeros = np.zeros((BATCH, UNITS), "float32")
    step = cell.step_with_gates(_inputs()[:, 0], [zeros, zeros])
    assert sorted(step) == sorted(["f", "i", "C_tilde", "o", "C", "h"])
    for key, value in step.items():
        np.testing.assert_allclose(
            ops.convert_to_numpy(value), reference[key][:, 0], atol=1e-5
        )
    sequence = cell.gate_sequence(_inputs())
    for key, value in sequence.items():
        assert tuple(value.shape) == (BATCH, TIME, UNITS)
        np.testing.assert_allclose(
            ops.convert_to_numpy(value), reference[key], atol=1e-5
        )


def test_equals_keras_lstm_after_loading_its_weights():
    lstm = _keras_lstm()
    cell = SeedLSTMCell(UNITS)
    cell.set_keras_weights(lstm)  # builds the cell
    seed_rnn = keras.layers.RNN(cell, return_sequences=True, return_state=True)
    x = _inputs()
    initial = [pattern((BATCH, UNITS), 0.5, 40.0), pattern((BATCH, UNITS), 0.5, 50.0)]
    for expected, actual in zip(
        to_numpy(lstm(x, initial_state=initial)),
        to_numpy(seed_rnn(x, initial_state=initial)),
    ):
        np.testing.assert_allclose(actual, expected, atol=1e-5)


def test_keras_lstm_equals_seed_cell_after_loading_seed_weights():
    weights = _seed_weights()
    seed_rnn = keras.layers.RNN(
        _cell_with_seed_weights(weights), return_sequences=True, return_state=True
    )
    lstm = keras.layers.LSTM(UNITS, return_sequences=True, return_state=True)
    lstm.build((None, TIME, FEATURES))
    lstm.set_weights(seed_rnn.cell.get_keras_weights())
    for expected, actual in zip(to_numpy(seed_rnn(_inputs())), to_numpy(lstm(_inputs()))):
        np.testing.assert_allclose(actual, expected, atol=1e-5)


def test_mapping_functions_are_inverse_and_use_gate_order_ifco():
    kernel = pattern((FEATURES, 4 * UNITS), 1.0, 1.0)
    recurrent_kernel = pattern((UNITS, 4 * UNITS), 1.0, 2.0)
    bias = pattern((4 * UNITS,), 1.0, 3.0)
    seed = keras_lstm_to_seed(kernel, recurrent_kernel, bias)
    assert seed["W_f"].shape == (UNITS, UNITS + FEATURES)
    # Keras block 1 is the forget gate; h columns first, then x columns.
    np.testing.assert_array_equal(seed["W_f"][:, :UNITS], recurrent_kernel[:, 4:8].T)
    np.testing.assert_array_equal(seed["W_f"][:, UNITS:], kernel[:, 4:8].T)
    np.testing.assert_array_equal(seed["b_i"], bias[0:4])
    np.testing.assert_array_equal(seed["b_o"], bias[12:16])
    for original, restored in zip(
        [kernel, recurrent_kernel, bias], seed_to_keras_lstm(seed)
    ):
        np.testing.assert_array_equal(restored, original)
    no_bias = keras_lstm_to_seed(kernel, recurrent_kernel)
    np.testing.assert_array_equal(no_bias["b_C"], np.zeros(UNITS))


def test_masked_steps_are_skipped():
    weights = _seed_weights()
    rnn = keras.layers.RNN(_cell_with_seed_weights(weights))
    x = _inputs()
    mask = np.array([[True] * TIME, [True, True, True, False, False]])
    masked = ops.convert_to_numpy(rnn(x, mask=mask))
    reference = numpy_seed_lstm(x.astype("float64"), weights)["h"]
    np.testing.assert_allclose(masked[0], reference[0, -1], atol=1e-5)
    np.testing.assert_allclose(masked[1], reference[1, 2], atol=1e-5)


def test_weight_names_shapes_and_unit_forget_bias():
    cell = SeedLSTMCell(UNITS)
    cell.build((None, FEATURES))
    assert [(w.name, tuple(w.shape)) for w in cell.weights] == [
        (attribute, (UNITS, UNITS + FEATURES) if symbol[0] == "W" else (UNITS,))
        for symbol, attribute in SEED_LSTM_WEIGHT_NAMES
    ]
    biases = cell.seed_weights()
    np.testing.assert_array_equal(biases["b_f"], np.ones(UNITS))
    np.testing.assert_array_equal(biases["b_i"], np.zeros(UNITS))
    assert cell.state_size == [UNITS, UNITS] and cell.output_size == UNITS


def test_refuses_incompatible_keras_lstm():
    cell = SeedLSTMCell(UNITS)
    with pytest.raises(ValueError, match="Received: activation=relu"):
        cell.set_keras_weights(_keras_lstm(activation="relu"))
    with pytest.raises(ValueError, match="has 4 units but this cell has units=3"):
        SeedLSTMCell(3).set_keras_weights(_keras_lstm())
    with pytest.raises(ValueError, match="recurrent_kernel.shape=\\(4, 12\\)"):
        keras_lstm_to_seed(np.zeros((3, 12)), np.zeros((4, 12)))
