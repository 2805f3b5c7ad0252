"""Tests of the SLSTM layer: numbers, stabilisation, carried state, saving."""

import numpy as np
import pytest
from layer_helpers import assert_carried_states_continue, built_with_random_weights, sequence_inputs, sigmoid, to_numpy

from predcalc.layers.slstm import SLSTM

BATCH, TIME, FEATURES, UNITS, HEADS = 2, 6, 3, 4, 2


def numpy_slstm(x, kernel, recurrent_kernel, bias, forget_gate):
    """Float64 sLSTM, seed 003 eqs. 8-14 without stabilisation.

    The recurrent kernel is block-diagonal, `(heads, hd, 4 * hd)`, each
    head's columns laid out `[z | i | f | o]`.
    """
    heads, head_dim = recurrent_kernel.shape[:2]
    units = heads * head_dim
    batch = x.shape[0]
    h, c, n = (np.zeros((batch, units)) for _ in range(3))
    outputs = []
    for t in range(x.shape[1]):
        recurrent = np.einsum("bhd,hde->bhe", h.reshape(batch, heads, head_dim), recurrent_kernel).reshape(
            batch, heads, 4, head_dim
        )
        recurrent = recurrent.transpose(0, 2, 1, 3).reshape(batch, 4 * units)
        pre = x[:, t].astype("float64") @ kernel + bias + recurrent
        z_pre, i_pre, f_pre, o_pre = np.split(pre, 4, axis=-1)
        z, i, o = (
            np.tanh(z_pre),
            np.exp(i_pre),
            sigmoid(o_pre),
        )  # eqs. 11, 12, 14
        f = sigmoid(f_pre) if forget_gate == "sigmoid" else np.exp(f_pre)  # eq. 13
        c = f * c + i * z  # eq. 8
        n = f * n + i  # eq. 9
        h = o * c / n  # eq. 10
        outputs.append(h)
    return np.stack(outputs, axis=1)


def deterministic_layer(seed=1, forget_gate="sigmoid", **kwargs):
    kwargs.setdefault("return_sequences", True)
    layer = SLSTM(UNITS, num_heads=HEADS, forget_gate=forget_gate, **kwargs)
    return built_with_random_weights(layer, (None, TIME, FEATURES), seed, scale=0.7)


def test_pinned_numbers():
    # z~ = i~ = f~ = o~ = x_t, no recurrence, x = (1, -1, 2):
    # h_1 = sigmoid(1) tanh(1), then c/n is the i*f-weighted mean of tanh(x).
    layer = SLSTM(
        1,
        return_sequences=True,
        kernel_initializer="ones",
        recurrent_initializer="zeros",
    )
    x = np.array([[[1.0], [-1.0], [2.0]]], "float32")
    np.testing.assert_allclose(to_numpy(layer(x))[0, :, 0], [0.556770, 0.067691, 0.776442], atol=1e-5)


@pytest.mark.parametrize("forget_gate", ["sigmoid", "exp"])
def test_matches_numpy_reference(forget_gate):
    layer = deterministic_layer(forget_gate=forget_gate)
    x = sequence_inputs()
    kernel, recurrent_kernel, bias = (w.astype("float64") for w in layer.get_weights())
    expected = numpy_slstm(x, kernel, recurrent_kernel, bias, forget_gate)
    np.testing.assert_allclose(to_numpy(layer(x)), expected, atol=1e-5)


def test_stabiliser_keeps_huge_gates_finite_and_exact():
    # Input-gate logits near 100 and an exponential forget gate: exp() of
    # them overflows float32 (max ~3.4e38 = e^88.7), so without the
    # stabiliser m_t the layer would return inf/inf = nan.
    layer = deterministic_layer(forget_gate="exp")
    kernel, recurrent_kernel, bias = layer.get_weights()
    bias[UNITS : 2 * UNITS] += 100.0  # input gate
    bias[2 * UNITS : 3 * UNITS] += 3.0  # forget gate
    layer.set_weights([kernel, recurrent_kernel, bias])
    x = sequence_inputs()
    outputs = to_numpy(layer(x))
    assert np.all(np.isfinite(outputs))
    expected = numpy_slstm(
        x,
        *(w.astype("float64") for w in (kernel, recurrent_kernel, bias)),
        "exp",
    )
    np.testing.assert_allclose(outputs, expected, atol=1e-5)


def test_continuing_from_carried_states_equals_whole_sequence():
    x = sequence_inputs()
    whole = to_numpy(deterministic_layer()(x))
    layer = deterministic_layer(return_state=True)
    states, last_states = assert_carried_states_continue(layer, layer, x, 2, whole)
    assert len(states) == 4  # h, c, n, m
    np.testing.assert_allclose(to_numpy(last_states[0]), whole[:, -1], atol=1e-5)


def test_last_output_and_states():
    x = sequence_inputs()
    sequence = to_numpy(deterministic_layer()(x))
    layer = deterministic_layer(return_sequences=False, return_state=True)
    output, h, c, n, m = (to_numpy(t) for t in layer(x))
    np.testing.assert_allclose(output, sequence[:, -1], atol=1e-6)
    np.testing.assert_allclose(h, sequence[:, -1], atol=1e-6)
    assert np.all(n >= 1.0 - 1e-6)  # the stabilised normaliser never drops below 1
    assert c.shape == n.shape == m.shape == (BATCH, UNITS)


def test_wrong_number_of_initial_states():
    layer = SLSTM(UNITS)
    x = sequence_inputs()
    with pytest.raises(ValueError, match=r"initial_state=\[h, c, n, m\]"):
        layer(x, initial_state=[np.zeros((BATCH, UNITS), "float32")])
