"""Tests for `PReLURNNCell`: seed 000 section 1.1.

h_t = PReLU(W_xh x_t + W_hh h_{t-1} + b_h), one PReLU slope per unit.
"""

import keras
import numpy as np
import pytest
from keras import ops
from layer_helpers import pattern, ramp

from predcalc.layers.prelu_rnn_cell import PReLURNNCell

BATCH, TIME, FEATURES, UNITS = 2, 4, 3, 5


def _inputs():
    return ramp((BATCH, TIME, FEATURES), divisor=10.0)


def _reference_weights():
    return [
        pattern((UNITS, FEATURES), offset=1.0),  # W_xh
        pattern((UNITS, UNITS), scale=0.3, offset=2.0),  # W_hh
        pattern((UNITS,), scale=0.2, offset=3.0),  # b_h
        np.linspace(0.0, 0.4, UNITS).astype("float32"),  # alpha
    ]


def numpy_prelu_rnn(x, w_xh, w_hh, b_h, alpha, h0=None):
    """Seed 000 section 1.1, one time step after another, in float64."""
    h = np.zeros((x.shape[0], w_hh.shape[0])) if h0 is None else h0
    outputs = []
    for t in range(x.shape[1]):
        a = x[:, t] @ w_xh.T + h @ w_hh.T + b_h
        h = np.maximum(a, 0.0) + alpha * np.minimum(a, 0.0)
        outputs.append(h)
    return np.stack(outputs, axis=1)


def _rnn_with_weights(weights, **rnn_kwargs):
    rnn = keras.layers.RNN(PReLURNNCell(UNITS), **rnn_kwargs)
    rnn.build((None, TIME, FEATURES))
    rnn.cell.set_weights(weights)
    return rnn


def test_constant_weights_pinned_numbers():
    x = np.arange(2 * 3 * 2, dtype="float32").reshape(2, 3, 2) / 10.0 - 0.5
    cell = PReLURNNCell(
        3,
        kernel_initializer=keras.initializers.Constant(0.1),
        recurrent_initializer=keras.initializers.Constant(0.05),
        bias_initializer="zeros",
    )
    outputs = keras.layers.RNN(cell, return_sequences=True)(x)
    expected = np.array(
        [[-0.0225, -0.01334375, -0.00300039], [0.03, 0.0745, 0.121175]]
    )  # unit 0; all units are equal with constant weights
    np.testing.assert_allclose(ops.convert_to_numpy(outputs), np.repeat(expected[..., None], 3, -1), atol=1e-5)
    np.testing.assert_allclose(ops.convert_to_numpy(cell.alpha), np.full((3,), 0.25), atol=0)
    reference = numpy_prelu_rnn(
        x.astype("float64"),
        np.full((3, 2), 0.1),
        np.full((3, 3), 0.05),
        np.zeros(3),
        np.full(3, 0.25),
    )
    np.testing.assert_allclose(ops.convert_to_numpy(outputs), reference, atol=1e-5)


def test_matches_numpy_reference_with_final_state():
    weights = _reference_weights()
    rnn = _rnn_with_weights(weights, return_sequences=True, return_state=True)
    outputs, state = rnn(_inputs())
    reference = numpy_prelu_rnn(_inputs().astype("float64"), *weights)
    # Both signs of the pre-activation occur, so alpha is exercised.
    assert (reference < 0).any() and (reference > 0).any()
    np.testing.assert_allclose(ops.convert_to_numpy(outputs), reference, atol=1e-5)
    np.testing.assert_allclose(ops.convert_to_numpy(state), reference[:, -1], atol=1e-5)


def test_initial_state_continues_a_sequence():
    weights = _reference_weights()
    x = _inputs()
    full = _rnn_with_weights(weights, return_sequences=True)(x)
    first_half, state = _rnn_with_weights(weights, return_sequences=True, return_state=True)(x[:, :2])
    second_half = _rnn_with_weights(weights, return_sequences=True)(x[:, 2:], initial_state=[state])
    np.testing.assert_allclose(
        np.concatenate([ops.convert_to_numpy(first_half), ops.convert_to_numpy(second_half)], 1),
        ops.convert_to_numpy(full),
        atol=1e-5,
    )


@pytest.mark.parametrize("alpha, activation", [(0.0, "relu"), (1.0, "linear")])
def test_limits_equal_simple_rnn(alpha, activation):
    w_xh, w_hh, b_h, _ = _reference_weights()
    cell_rnn = _rnn_with_weights([w_xh, w_hh, b_h, np.full((UNITS,), alpha, "float32")], return_sequences=True)
    simple = keras.layers.SimpleRNN(UNITS, activation=activation, return_sequences=True)
    simple.build((None, TIME, FEATURES))
    simple.set_weights([w_xh.T, w_hh.T, b_h])
    np.testing.assert_allclose(
        ops.convert_to_numpy(cell_rnn(_inputs())),
        ops.convert_to_numpy(simple(_inputs())),
        atol=1e-5,
    )


def test_weight_names_and_shapes():
    cell = PReLURNNCell(UNITS)
    cell.build((None, FEATURES))
    assert [(w.name, tuple(w.shape)) for w in cell.weights] == [
        ("input_kernel", (UNITS, FEATURES)),
        ("recurrent_kernel", (UNITS, UNITS)),
        ("bias", (UNITS,)),
        ("alpha", (UNITS,)),
    ]
    assert cell.state_size == UNITS and cell.output_size == UNITS
