"""Tests of MinGRU and MinLSTM (one module, parameterised by the layer): numbers, paths,
carried state, saving, training. MinLSTM's normalised gates have a test of their own."""

import keras
import numpy as np
import pytest
from layer_helpers import assert_carried_states_continue, built_with_random_weights, sequence_inputs, sigmoid, to_numpy

from predcalc.layers.min_gru import MinGRU
from predcalc.layers.min_lstm import MinLSTM

BATCH, TIME, FEATURES, UNITS = 2, 6, 3, 4


def g(x):
    return np.where(x >= 0, x + 0.5, sigmoid(x))


def numpy_min_gru(x, kernel, bias, h0=None):
    """Float64 minGRU: h_t = (1 - z_t) h_{t-1} + z_t g(Linear_h(x_t))."""
    projected = np.asarray(x, "float64") @ kernel + bias
    units = kernel.shape[1] // 2
    z, candidate = sigmoid(projected[..., :units]), g(projected[..., units:])
    return scan_reference(x, 1.0 - z, z, candidate, units, h0)


def numpy_min_lstm(x, kernel, bias, h0=None):
    """Float64 minLSTM with normalised gates f' = f/(f+i), i' = i/(f+i)."""
    projected = np.asarray(x, "float64") @ kernel + bias
    units = kernel.shape[1] // 3
    f = sigmoid(projected[..., :units])
    i = sigmoid(projected[..., units : 2 * units])
    candidate = g(projected[..., 2 * units :])
    return scan_reference(x, f / (f + i), i / (f + i), candidate, units, h0)


def scan_reference(x, keep, write, candidate, units, h0):
    """h_t = keep_t h_{t-1} + write_t candidate_t, step by step in float64."""
    h = np.zeros((x.shape[0], units)) if h0 is None else np.asarray(h0, "float64")
    outputs = []
    for t in range(x.shape[1]):
        h = keep[:, t] * h + write[:, t] * candidate[:, t]
        outputs.append(h)
    return np.stack(outputs, axis=1)


# Per layer: its NumPy reference, and a pinned example (kernel initializer, expected outputs).
# MinGRU: z_t = sigmoid(x_t), h~_t = g(x_t), x = (1, -1, 2), h_0 = 0:
#   h_1 = sigmoid(1) * 1.5, h_2 = sigmoid(-1) h_1 + sigmoid(-1)^2, ...
# MinLSTM: kernel [1, -1, 1]: f_t = sigmoid(x_t), i_t = sigmoid(-x_t) (so f + i = 1
#   and f' = f), h~_t = g(x_t), x = (1, -1, 2), h_0 = 0:
#   h_1 = sigmoid(-1) * 1.5, h_2 = sigmoid(-1) h_1 + sigmoid(1) sigmoid(-1).
CASES = {
    "min_gru": (MinGRU, numpy_min_gru, "ones", [1.096588, 0.873999, 2.306176]),
    "min_lstm": (
        MinLSTM,
        numpy_min_lstm,
        [[1.0, -1.0, 1.0]],
        [0.403412, 0.305106, 0.566744],
    ),
}


@pytest.fixture(params=sorted(CASES))
def name(request):
    return request.param


@pytest.fixture
def Layer(name):
    return CASES[name][0]


def deterministic_layer(Layer, parallel=True, seed=1, **kwargs):
    kwargs.setdefault("return_sequences", True)
    layer = Layer(UNITS, parallel=parallel, **kwargs)
    return built_with_random_weights(layer, (None, TIME, FEATURES), seed, scale=0.7)


def numpy_weights(layer):
    return [w.astype("float64") for w in layer.get_weights()]


def test_pinned_numbers(name, Layer):
    _, _, kernel, expected = CASES[name]
    if not isinstance(kernel, str):
        kernel = keras.initializers.Constant(kernel)
    for parallel in (True, False):
        layer = Layer(
            1,
            return_sequences=True,
            parallel=parallel,
            kernel_initializer=kernel,
        )
        x = np.array([[[1.0], [-1.0], [2.0]]], "float32")
        np.testing.assert_allclose(
            to_numpy(layer(x))[0, :, 0],
            expected,
            atol=1e-5,
        )


def test_min_lstm_gates_are_normalised():
    # Scaling f and i together leaves f' and i' unchanged: with equal forget
    # and input logits, f' = i' = 1/2 whatever their value.
    for logit in (-4.0, 0.0, 4.0):
        layer = MinLSTM(
            1,
            return_sequences=True,
            kernel_initializer=keras.initializers.Constant([[logit, logit, 0.0]]),
            bias_initializer=keras.initializers.Constant([0.0, 0.0, 1.0]),
        )
        x = np.ones((1, 3, 1), "float32")
        # h~ = g(1) = 1.5: h = 0.75, 1.125, 1.3125.
        np.testing.assert_allclose(to_numpy(layer(x))[0, :, 0], [0.75, 1.125, 1.3125], atol=1e-5)


@pytest.mark.parametrize("parallel", [True, False])
@pytest.mark.parametrize("with_initial_state", [False, True])
def test_matches_numpy_reference(name, Layer, parallel, with_initial_state):
    layer = deterministic_layer(Layer, parallel)
    x = sequence_inputs()
    # A negative initial state is allowed on the log-space path too.
    h0 = np.linspace(-1.0, 1.0, BATCH * UNITS).reshape(BATCH, UNITS)
    h0 = h0.astype("float32") if with_initial_state else None
    expected = CASES[name][1](x, *numpy_weights(layer), h0)
    np.testing.assert_allclose(to_numpy(layer(x, initial_state=h0)), expected, atol=1e-5)


def test_parallel_path_equals_step_path_on_a_longer_sequence(Layer):
    x = sequence_inputs(time=64, seed=2)
    parallel = to_numpy(deterministic_layer(Layer, True)(x))
    step = to_numpy(deterministic_layer(Layer, False)(x))
    np.testing.assert_allclose(parallel, step, atol=1e-5)


@pytest.mark.parametrize(
    "first_parallel, second_parallel",
    [(True, True), (False, False), (True, False)],
)
def test_continuing_from_carried_state_equals_whole_sequence(Layer, first_parallel, second_parallel):
    x = sequence_inputs()
    whole = to_numpy(deterministic_layer(Layer, True)(x))
    _, (last_state,) = assert_carried_states_continue(
        deterministic_layer(Layer, first_parallel, return_state=True),
        deterministic_layer(Layer, second_parallel, return_state=True),
        x,
        2,
        whole,
    )
    np.testing.assert_allclose(to_numpy(last_state), whole[:, -1], atol=1e-5)


@pytest.mark.parametrize("parallel", [True, False])
def test_last_output_and_state(Layer, parallel):
    x = sequence_inputs()
    sequence = to_numpy(deterministic_layer(Layer, parallel)(x))
    layer = deterministic_layer(Layer, parallel, return_sequences=False, return_state=True)
    output, state = layer(x)
    np.testing.assert_allclose(to_numpy(output), sequence[:, -1], atol=1e-6)
    np.testing.assert_allclose(to_numpy(state), sequence[:, -1], atol=1e-6)


def test_last_state_path_with_an_initial_state_equals_the_numpy_reference(name, Layer):
    # return_sequences=False: the parallel path reduces to h_T without a scan
    layer = deterministic_layer(Layer, True, return_sequences=False)
    x = sequence_inputs()
    h0 = np.linspace(-1.0, 1.0, BATCH * UNITS).reshape(BATCH, UNITS).astype("float32")
    expected = CASES[name][1](x, *numpy_weights(layer), h0)[:, -1]
    np.testing.assert_allclose(to_numpy(layer(x, initial_state=h0)), expected, atol=1e-5)
