"""Tests for `AlignedColumnGRU`: three GRU passes over digit columns (up, down, up again), against
a NumPy reference of Keras' GRU (``reset_after=True``), its shapes, and which column the sign
reads."""

import math

import keras
import numpy as np
import pytest
from layer_helpers import patterned_weights, sigmoid, to_numpy

from predcalc.data import digits
from predcalc.layers.aligned_column_gru import AlignedColumnGRU

BATCH, COLUMNS, FEATURES, UNITS = 2, 5, 6, 3


def gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def numpy_gru(x, kernel, recurrent_kernel, bias, backwards=False):
    """Keras' GRU (gates z, r, h; the reset gate after the recurrent product), from a zero state;
    its states in the columns' order (for ``backwards``, the state at column ``t`` has read the
    columns from the top down to ``t``)."""
    units = recurrent_kernel.shape[0]
    state = np.zeros((x.shape[0], units))
    states = {}
    for t in range(x.shape[1] - 1, -1, -1) if backwards else range(x.shape[1]):
        xi, hi = x[:, t] @ kernel + bias[0], state @ recurrent_kernel + bias[1]
        z = sigmoid(xi[:, :units] + hi[:, :units])
        r = sigmoid(xi[:, units : 2 * units] + hi[:, units : 2 * units])
        candidate = np.tanh(xi[:, 2 * units :] + r * hi[:, 2 * units :])
        state = z * state + (1 - z) * candidate
        states[t] = state
    return np.stack([states[t] for t in range(x.shape[1])], axis=1)


def _pass(w, name, x, backwards=False):
    """One of the layer's GRU passes (``up``, ``down`` or ``again``) with its weights from ``w``."""
    return numpy_gru(x, *(w[f"{name}/gru_cell/{n}"] for n in ("kernel", "recurrent_kernel", "bias")), backwards)


def numpy_column_gru(w, columns, down_backwards=True):
    """The digits' logits, the sign's logits and the last pass's states."""
    up = _pass(w, "up", gelu(columns @ w["read/kernel"] + w["read/bias"]))
    down = _pass(w, "down", up, backwards=down_backwards)
    again = _pass(w, "again", np.concatenate([up, down], axis=-1))
    digit_logits = again @ w["digit_head/kernel"] + w["digit_head/bias"]
    return digit_logits, again[:, 0] @ w["sign_head/kernel"] + w["sign_head/bias"], again


def _layer():
    layer = AlignedColumnGRU(UNITS, name="recurrence")
    return layer, patterned_weights(layer, (None, None, FEATURES), scale=0.6, offset=0.5, step=2)


def _columns(seed=0, columns=COLUMNS):
    return np.random.default_rng(seed).normal(size=(BATCH, columns, FEATURES)).astype("float32")


def test_matches_numpy_reference():
    layer, weights = _layer()
    x = _columns()
    digit_logits, sign_logits = to_numpy(layer(x))
    expected_digits, expected_sign, again = numpy_column_gru(weights, x.astype("float64"))
    np.testing.assert_allclose(digit_logits, expected_digits, atol=1e-5)
    np.testing.assert_allclose(sign_logits, expected_sign, atol=1e-5)
    from_top = again[:, -1] @ weights["sign_head/kernel"] + weights["sign_head/bias"]
    assert np.max(np.abs(sign_logits - from_top)) > 1e-3  # the sign reads column 0, not the top one


def test_the_down_pass_runs_from_the_top_column_down():
    """Against the reference with the down pass run forward instead: it no longer matches."""
    layer, weights = _layer()
    x = _columns(seed=1)
    digit_logits, _ = to_numpy(layer(x))
    forward_digits, _, _ = numpy_column_gru(weights, x.astype("float64"), down_backwards=False)
    assert np.max(np.abs(digit_logits - forward_digits)) > 1e-3


@pytest.mark.parametrize("columns", [1, 4, 9])
def test_output_shapes_follow_the_columns(columns):
    layer, _ = _layer()
    digit_logits, sign_logits = to_numpy(layer(_columns(columns=columns)))
    assert digit_logits.shape == (BATCH, columns, 10) and sign_logits.shape == (BATCH, 2)
    assert layer.compute_output_shape((BATCH, columns, FEATURES)) == ((BATCH, columns, 10), (BATCH, 2))


def test_any_number_of_columns_in_one_model():
    inputs = keras.Input((None, digits.COLUMN_FEATURES))
    model = keras.Model(inputs, AlignedColumnGRU(4)(inputs))
    for width in (2, 7):
        expressions = digits.draw(np.random.default_rng(width), 3, terms=(3, 3), digits=(width, width))
        digit_logits, sign_logits = to_numpy(model(digits.columns(expressions)))
        assert digit_logits.shape == (3, width + 1, 10) and sign_logits.shape == (3, 2)


def test_every_column_reads_every_other_column():
    """Bidirectional: the lowest column's digit and the sign change with the top column, and the
    top column's digit with the lowest."""
    layer, _ = _layer()
    x = _columns(seed=2)
    digit_logits, sign_logits = to_numpy(layer(x))
    top, bottom = x.copy(), x.copy()
    top[:, -1] += 3.0
    bottom[:, 0] += 3.0
    top_digits, top_sign = to_numpy(layer(top))
    bottom_digits, _ = to_numpy(layer(bottom))
    # the same inputs give the same outputs to the bit; through three saturating passes the reach
    # is small, so any change shows it
    assert np.max(np.abs(top_digits[:, 0] - digit_logits[:, 0])) > 1e-6
    assert np.max(np.abs(top_sign - sign_logits)) > 1e-6
    assert np.max(np.abs(bottom_digits[:, -1] - digit_logits[:, -1])) > 1e-6
    np.testing.assert_array_equal(to_numpy(layer(x))[0], digit_logits)
