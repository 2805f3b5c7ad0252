"""Tests of the Mamba block: numbers, scan vs step, carried state, saving."""

import keras
import numpy as np
import pytest
from keras import ops
from layer_helpers import assert_carried_states_continue, built_with_random_weights, sequence_inputs, sigmoid, to_numpy

from predcalc.layers.mamba import Mamba

BATCH, TIME, FEATURES, UNITS, STATE = 2, 6, 3, 4, 3


def silu(x):
    return x * sigmoid(x)


def softplus(x):
    return np.logaddexp(0.0, x)


def numpy_mamba(x, w, conv_kernel_size):
    """Float64 Mamba block (S6 with ZOH A, B_bar ~ delta B, D skip, gate)."""
    inner = w["D"].shape[0]
    dt_rank = w["dt_kernel"].shape[0]
    state = w["A_log"].shape[1]
    projected = np.asarray(x, "float64") @ w["in_kernel"]
    xs, gate = projected[..., :inner], projected[..., inner:]
    if conv_kernel_size > 0:
        padded = np.pad(xs, ((0, 0), (conv_kernel_size - 1, 0), (0, 0)))
        xs = w["conv_bias"] + sum(
            w["conv_kernel"][j] * padded[:, j : j + x.shape[1]] for j in range(conv_kernel_size)
        )  # causal depthwise convolution
    u = silu(xs)
    dbc = u @ w["x_proj_kernel"]
    delta = softplus(dbc[..., :dt_rank] @ w["dt_kernel"] + w["dt_bias"])
    b_input = dbc[..., dt_rank : dt_rank + state]
    c_input = dbc[..., dt_rank + state :]
    a_matrix = -np.exp(w["A_log"])  # (inner, state)
    h = np.zeros((x.shape[0], inner, state))
    ys = []
    for t in range(x.shape[1]):
        a_bar = np.exp(delta[:, t, :, None] * a_matrix)  # ZOH
        b_bar_x = delta[:, t, :, None] * b_input[:, t, None, :] * u[:, t, :, None]
        h = a_bar * h + b_bar_x
        ys.append(np.sum(h * c_input[:, t, None, :], axis=-1) + w["D"] * u[:, t])
    y = np.stack(ys, axis=1) * silu(gate)
    return y @ w["out_kernel"]


def deterministic_layer(parallel=True, conv_kernel_size=3, seed=1, **kwargs):
    kwargs.setdefault("return_sequences", True)
    layer = Mamba(UNITS, state_size=STATE, conv_kernel_size=conv_kernel_size, parallel=parallel, **kwargs)
    return built_with_random_weights(layer, (None, TIME, FEATURES), seed, scale=0.5)


def numpy_weights(layer):
    return {w.name: ops.convert_to_numpy(w).astype("float64") for w in layer.weights}


@pytest.mark.parametrize("parallel", [True, False])
@pytest.mark.parametrize("conv_kernel_size", [0, 1, 3])
def test_matches_numpy_reference(parallel, conv_kernel_size):
    layer = deterministic_layer(parallel, conv_kernel_size)
    x = sequence_inputs()
    expected = numpy_mamba(x, numpy_weights(layer), conv_kernel_size)
    np.testing.assert_allclose(to_numpy(layer(x)), expected, atol=1e-5)


def test_initialisation_follows_the_paper():
    layer = Mamba(UNITS, state_size=STATE, expand=2)
    layer.build((None, TIME, FEATURES))
    weights = numpy_weights(layer)
    inner = 2 * UNITS
    np.testing.assert_allclose(
        np.exp(weights["A_log"]),
        np.tile(np.arange(1, STATE + 1), (inner, 1)),
        atol=1e-5,
    )  # S4D-real: A = -(1..N)
    np.testing.assert_array_equal(weights["D"], np.ones(inner))
    dt = softplus(weights["dt_bias"])
    assert np.all((dt >= 1e-3 - 1e-6) & (dt <= 0.1 + 1e-6))
    assert weights["dt_kernel"].shape == (1, inner)  # dt_rank = ceil(4 / 16)


def test_scan_path_equals_step_path_on_a_longer_sequence():
    x = sequence_inputs(time=32, seed=2)
    scan_outputs = deterministic_layer(True, return_state=True)(x)
    step_outputs = deterministic_layer(False, return_state=True)(x)
    for name, scanned, stepped in zip(
        ["sequence", "ssm_state", "conv_state"],
        scan_outputs,
        step_outputs,
        strict=True,
    ):
        np.testing.assert_allclose(to_numpy(scanned), to_numpy(stepped), atol=1e-5, err_msg=name)


@pytest.mark.parametrize(
    "first_parallel, second_parallel",
    [(True, True), (False, False), (True, False), (False, True)],
)
@pytest.mark.parametrize("split", [1, 4])
def test_continuing_from_carried_states_equals_whole_sequence(first_parallel, second_parallel, split):
    # conv_kernel_size 4 keeps 3 past inputs: a first chunk of length 1 is
    # shorter than that window, so its carried state still holds padding.
    x = sequence_inputs()
    whole = to_numpy(deterministic_layer(True, conv_kernel_size=4)(x))
    states, _ = assert_carried_states_continue(
        deterministic_layer(first_parallel, conv_kernel_size=4, return_state=True),
        deterministic_layer(second_parallel, conv_kernel_size=4, return_state=True),
        x,
        split,
        whole,
    )
    assert len(states) == 2  # ssm_state, conv_state


def test_last_output_and_state_shapes():
    x = sequence_inputs()
    sequence = to_numpy(deterministic_layer()(x))
    layer = deterministic_layer(return_sequences=False, return_state=True)
    output, ssm_state, conv_state = (to_numpy(t) for t in layer(x))
    np.testing.assert_allclose(output, sequence[:, -1], atol=1e-6)
    assert ssm_state.shape == (BATCH, 2 * UNITS, STATE)
    assert conv_state.shape == (BATCH, 2, 2 * UNITS)
    assert np.all(np.isfinite(ssm_state)) and np.all(np.isfinite(conv_state))
    # Without a convolution window the only state is the SSM state.
    states = deterministic_layer(conv_kernel_size=0, return_state=True)(x)[1:]
    assert len(states) == 1


def test_wrong_number_of_initial_states():
    layer = Mamba(UNITS, state_size=STATE)
    with pytest.raises(ValueError, match="expects 2 initial state tensor"):
        layer(
            sequence_inputs(),
            initial_state=[np.zeros((BATCH, 2 * UNITS, STATE), "float32")],
        )


@pytest.mark.parametrize("parallel", [True, False])
def test_bounded_state_stays_bounded_far_outside_the_training_range(parallel):
    # Inputs 1,000 times the scale seen in training: the default discretisation's
    # state grows with delta * B * x (each itself growing with the input); the bounded
    # one is a convex combination of h_{t-1} and B_t u_t / |A| with |B_t| <= sqrt(N).
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 15, 3)).astype("float32")
    far = 1000.0 * x

    def state(bounded, values):
        layer = Mamba(4, state_size=8, conv_kernel_size=0, return_state=True, parallel=parallel, bounded_state=bounded)
        built_with_random_weights(layer, values.shape, seed=4)
        _, h = layer(values)
        return to_numpy(h), layer

    h_near, layer = state(True, x)
    h_far, _ = state(True, far)
    assert np.all(np.isfinite(h_far))
    # the bound: max over time of |u| * sqrt(N) / min |A| (u = silu of the input projection)
    u = np.asarray(keras.activations.silu(far @ to_numpy(layer.in_kernel)[:, : layer.inner_dim]))
    a_min = np.exp(to_numpy(layer.log_decay_rate)).min()
    assert np.abs(h_far).max() <= np.abs(u).max() * np.sqrt(8) / a_min * (1 + 1e-4)
    # and it grows no faster than the input (a linear bound), unlike the default path
    growth = np.abs(h_far).max() / np.abs(h_near).max()
    default_growth = np.abs(state(False, far)[0]).max() / np.abs(state(False, x)[0]).max()
    assert growth <= 1000.0 * 1.5
    assert default_growth > 10 * growth


def test_bounded_state_scan_equals_steps():
    x = sequence_inputs(time=16, seed=5)
    layers = [
        Mamba(4, state_size=8, conv_kernel_size=4, return_sequences=True, parallel=p, bounded_state=True)
        for p in (True, False)
    ]
    for layer in layers:
        built_with_random_weights(layer, x.shape, seed=6)
    np.testing.assert_allclose(to_numpy(layers[0](x)), to_numpy(layers[1](x)), atol=1e-4)
