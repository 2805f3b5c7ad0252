"""Tests for `SeedGRUCell`: seed 000 equations (7)-(10) and the Keras GRU mapping."""

import keras
import numpy as np
import pytest
from keras import ops

from predcalc.layers.seed_gru_cell import (
    SEED_GRU_WEIGHT_NAMES,
    SeedGRUCell,
    keras_gru_to_seed,
    seed_to_keras_gru,
)
from layer_helpers import pattern, ramp, seed_cell_with_weights, seed_layout_weights, sigmoid, to_numpy

BATCH, TIME, FEATURES, UNITS = 2, 5, 3, 4


def _inputs():
    return ramp((BATCH, TIME, FEATURES))


def _seed_weights():
    return seed_layout_weights(SEED_GRU_WEIGHT_NAMES, UNITS, FEATURES, w_scale=0.7)


def numpy_seed_gru(x, w, h0=None):
    """Seed 000 equations (7)-(10) in float64; returns every intermediate."""
    h = np.zeros((x.shape[0], w["W_z"].shape[0])) if h0 is None else h0
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


def _cell_with_seed_weights(weights):
    return seed_cell_with_weights(SeedGRUCell(UNITS), SEED_GRU_WEIGHT_NAMES, weights, FEATURES)


def _keras_gru(reset_after=False, **kwargs):
    gru = keras.layers.GRU(
        UNITS,
        reset_after=reset_after,
        return_sequences=True,
        return_state=True,
        **kwargs,
    )
    gru.build((None, TIME, FEATURES))
    bias_shape = (2, 3 * UNITS) if reset_after else (3 * UNITS,)
    gru.set_weights(
        [
            pattern((FEATURES, 3 * UNITS), 0.7, 10.0),
            pattern((UNITS, 3 * UNITS), 0.7, 20.0),
            pattern(bias_shape, 0.3, 30.0),
        ]
    )
    return gru


def test_constant_weights_pinned_numbers():
    x = np.arange(2 * 3 * 2, dtype="float32").reshape(2, 3, 2) / 10.0
    cell = SeedGRUCell(
        2, kernel_initializer=keras.initializers.Constant(0.2), bias_initializer="zeros"
    )
    outputs = keras.layers.RNN(cell, return_sequences=True)(x)
    constant = {
        symbol: np.full((2, 4), 0.2) if symbol[0] == "W" else np.zeros(2)
        for symbol, _ in SEED_GRU_WEIGHT_NAMES
    }
    reference = numpy_seed_gru(x.astype("float64"), constant)["h"]
    np.testing.assert_allclose(ops.convert_to_numpy(outputs), reference, atol=1e-5)
    np.testing.assert_allclose(
        ops.convert_to_numpy(outputs)[:, :, 0],
        [[0.01009865, 0.05831714, 0.13109884], [0.14358449, 0.27169475, 0.3857219]],
        atol=1e-5,
    )


def test_matches_numpy_reference_with_state():
    weights = _seed_weights()
    rnn = keras.layers.RNN(
        _cell_with_seed_weights(weights), return_sequences=True, return_state=True
    )
    outputs, h = to_numpy(rnn(_inputs()))
    reference = numpy_seed_gru(_inputs().astype("float64"), weights)["h"]
    np.testing.assert_allclose(outputs, reference, atol=1e-5)
    np.testing.assert_allclose(h, reference[:, -1], atol=1e-5)


def test_step_with_gates_and_gate_sequence_match_numpy():
    weights = _seed_weights()
    cell = _cell_with_seed_weights(weights)
    reference = numpy_seed_gru(_inputs().astype("float64"), weights)
    step = cell.step_with_gates(_inputs()[:, 0], [np.zeros((BATCH, UNITS), "float32")])
    assert sorted(step) == sorted(["z", "r", "h_tilde", "h"])
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


def test_equals_keras_gru_reset_after_false_after_loading_its_weights():
    gru = _keras_gru(reset_after=False)
    cell = SeedGRUCell(UNITS)
    cell.set_keras_weights(gru)  # builds the cell, negates W_z and b_z
    seed_rnn = keras.layers.RNN(cell, return_sequences=True, return_state=True)
    x = _inputs()
    initial = [pattern((BATCH, UNITS), 0.5, 40.0)]
    for expected, actual in zip(
        to_numpy(gru(x, initial_state=initial)),
        to_numpy(seed_rnn(x, initial_state=initial)),
    ):
        np.testing.assert_allclose(actual, expected, atol=1e-5)


def test_update_gate_sign_is_swapped_relative_to_keras():
    """Seed eq. (10) weights h~ by z, Keras weights h_{t-1}: z_seed = 1 - z_keras."""
    gru = _keras_gru(reset_after=False)
    kernel, recurrent_kernel, bias = gru.get_weights()
    seed = keras_gru_to_seed(kernel, recurrent_kernel, bias)
    np.testing.assert_allclose(seed["W_z"][:, UNITS:], -kernel[:, :UNITS].T)
    np.testing.assert_allclose(seed["W_z"][:, :UNITS], -recurrent_kernel[:, :UNITS].T)
    np.testing.assert_allclose(seed["b_z"], -bias[:UNITS])
    np.testing.assert_allclose(seed["W_r"][:, UNITS:], kernel[:, UNITS : 2 * UNITS].T)
    np.testing.assert_allclose(seed["b_h"], bias[2 * UNITS :])
    # Copying the Keras update gate without the sign flip gives another cell.
    unflipped = dict(seed, W_z=-seed["W_z"], b_z=-seed["b_z"])
    expected = ops.convert_to_numpy(gru(_inputs())[0])
    flipped_output = numpy_seed_gru(_inputs().astype("float64"), seed)["h"]
    unflipped_output = numpy_seed_gru(_inputs().astype("float64"), unflipped)["h"]
    np.testing.assert_allclose(flipped_output, expected, atol=1e-5)
    assert np.abs(unflipped_output - expected).max() > 1e-2
    # The seed gates seen from Keras: z_seed = 1 - z_keras at the first step.
    x0 = _inputs()[:, 0]
    z_keras = sigmoid(x0 @ kernel[:, :UNITS] + bias[:UNITS])
    z_seed = numpy_seed_gru(_inputs().astype("float64"), seed)["z"][:, 0]
    np.testing.assert_allclose(z_seed, 1.0 - z_keras, atol=1e-6)


def test_keras_gru_equals_seed_cell_after_loading_seed_weights():
    weights = _seed_weights()
    seed_rnn = keras.layers.RNN(
        _cell_with_seed_weights(weights), return_sequences=True, return_state=True
    )
    gru = keras.layers.GRU(
        UNITS, reset_after=False, return_sequences=True, return_state=True
    )
    gru.build((None, TIME, FEATURES))
    gru.set_weights(seed_rnn.cell.get_keras_weights())
    for expected, actual in zip(to_numpy(seed_rnn(_inputs())), to_numpy(gru(_inputs()))):
        np.testing.assert_allclose(actual, expected, atol=1e-5)


def test_mapping_functions_are_inverse():
    kernel = pattern((FEATURES, 3 * UNITS), 1.0, 1.0)
    recurrent_kernel = pattern((UNITS, 3 * UNITS), 1.0, 2.0)
    bias = pattern((3 * UNITS,), 1.0, 3.0)
    seed = keras_gru_to_seed(kernel, recurrent_kernel, bias)
    assert seed["W_h"].shape == (UNITS, UNITS + FEATURES)
    for original, restored in zip(
        [kernel, recurrent_kernel, bias], seed_to_keras_gru(seed)
    ):
        np.testing.assert_array_equal(restored, original)
    no_bias = keras_gru_to_seed(kernel, recurrent_kernel)
    np.testing.assert_array_equal(no_bias["b_z"], np.zeros(UNITS))


def test_refuses_reset_after_true_and_other_activations():
    cell = SeedGRUCell(UNITS)
    with pytest.raises(ValueError, match="Received: reset_after=True"):
        cell.set_keras_weights(_keras_gru(reset_after=True))
    with pytest.raises(ValueError, match="reset_after=False"):
        keras_gru_to_seed(*_keras_gru(reset_after=True).get_weights())
    with pytest.raises(ValueError, match="Received: recurrent_activation=hard_sigmoid"):
        cell.set_keras_weights(_keras_gru(recurrent_activation="hard_sigmoid"))
    with pytest.raises(ValueError, match="has 4 units but this cell has units=2"):
        SeedGRUCell(2).set_keras_weights(_keras_gru())


def test_masked_steps_are_skipped():
    weights = _seed_weights()
    rnn = keras.layers.RNN(_cell_with_seed_weights(weights))
    mask = np.array([[True] * TIME, [True, True, False, False, False]])
    masked = ops.convert_to_numpy(rnn(_inputs(), mask=mask))
    reference = numpy_seed_gru(_inputs().astype("float64"), weights)["h"]
    np.testing.assert_allclose(masked[0], reference[0, -1], atol=1e-5)
    np.testing.assert_allclose(masked[1], reference[1, 1], atol=1e-5)


def test_weight_names_and_shapes():
    cell = SeedGRUCell(UNITS)
    cell.build((None, FEATURES))
    assert [(w.name, tuple(w.shape)) for w in cell.weights] == [
        (attribute, (UNITS, UNITS + FEATURES) if symbol[0] == "W" else (UNITS,))
        for symbol, attribute in SEED_GRU_WEIGHT_NAMES
    ]
    assert cell.state_size == UNITS and cell.output_size == UNITS
