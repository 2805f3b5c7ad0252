"""Tests of the MLSTM layer: numbers, parallel vs recurrent, carried state."""

import keras
import numpy as np
import pytest
from layer_helpers import assert_carried_states_continue, built_with_random_weights, sequence_inputs, sigmoid, to_numpy

from predcalc.layers.mlstm import MLSTM

BATCH, TIME, FEATURES, UNITS, HEADS = 2, 6, 3, 4, 2


def numpy_mlstm(x, kernel, bias, heads, forget_gate):
    """Float64 mLSTM, seed 003 eqs. 19-27 without stabilisation.

    Kernel columns `[q | k | v | o | i~ (per head) | f~ (per head)]`.
    """
    units = (kernel.shape[1] - 2 * heads) // 4
    head_dim = units // heads
    projected = np.asarray(x, "float64") @ kernel
    projected[..., units : 2 * units] /= np.sqrt(head_dim)  # eq. 23: W_k x / sqrt(d)
    projected = projected + bias
    batch, time = x.shape[:2]

    def split_heads(part):
        return part.reshape(batch, time, heads, head_dim)

    q = split_heads(projected[..., :units])  # eq. 22
    k = split_heads(projected[..., units : 2 * units])  # eq. 23
    v = split_heads(projected[..., 2 * units : 3 * units])  # eq. 24
    o = sigmoid(projected[..., 3 * units : 4 * units])  # eq. 27
    i = np.exp(projected[..., 4 * units : 4 * units + heads])  # eq. 25
    f_pre = projected[..., 4 * units + heads :]
    f = sigmoid(f_pre) if forget_gate == "sigmoid" else np.exp(f_pre)  # eq. 26

    c = np.zeros((batch, heads, head_dim, head_dim))
    n = np.zeros((batch, heads, head_dim))
    outputs = []
    for t in range(time):
        f_t, i_t = f[:, t, :, None], i[:, t, :, None]
        c = f_t[..., None] * c + i_t[..., None] * np.einsum("bhv,bhk->bhvk", v[:, t], k[:, t])  # eq. 19
        n = f_t * n + i_t * k[:, t]  # eq. 20
        numerator = np.einsum("bhvk,bhk->bhv", c, q[:, t])
        denominator = np.maximum(np.abs(np.sum(n * q[:, t], axis=-1)), 1.0)
        h_tilde = numerator / denominator[..., None]  # eq. 21
        outputs.append(o[:, t] * h_tilde.reshape(batch, units))
    return np.stack(outputs, axis=1)


def deterministic_layer(parallel=True, seed=1, forget_gate="sigmoid", **kwargs):
    kwargs.setdefault("return_sequences", True)
    layer = MLSTM(UNITS, num_heads=HEADS, forget_gate=forget_gate, parallel=parallel, **kwargs)
    return built_with_random_weights(layer, (None, TIME, FEATURES), seed, scale=0.7)


def test_pinned_numbers():
    # One unit, one head, every projection = x_t, x = (1, -1, 2):
    # h_1 = sigmoid(1) * (e * 1 * 1 * 1) / max(|e * 1 * 1|, 1) = sigmoid(1).
    for parallel in (True, False):
        layer = MLSTM(
            1,
            return_sequences=True,
            parallel=parallel,
            kernel_initializer="ones",
        )
        x = np.array([[[1.0], [-1.0], [2.0]]], "float32")
        np.testing.assert_allclose(
            to_numpy(layer(x))[0, :, 0],
            [0.731059, -0.295550, 1.780739],
            atol=1e-5,
        )


@pytest.mark.parametrize("parallel", [True, False])
@pytest.mark.parametrize("forget_gate", ["sigmoid", "exp"])
def test_matches_numpy_reference(parallel, forget_gate):
    layer = deterministic_layer(parallel, forget_gate=forget_gate)
    x = sequence_inputs()
    kernel, bias = (w.astype("float64") for w in layer.get_weights())
    expected = numpy_mlstm(x, kernel, bias, HEADS, forget_gate)
    np.testing.assert_allclose(to_numpy(layer(x)), expected, atol=1e-5)


def test_parallel_form_equals_recurrent_form_outputs_and_states():
    x = sequence_inputs(time=32, seed=2)
    parallel_outputs = deterministic_layer(True, return_state=True)(x)
    step_outputs = deterministic_layer(False, return_state=True)(x)
    for name, parallel, step in zip(
        ["sequence", "C", "n", "m"],
        parallel_outputs,
        step_outputs,
        strict=True,
    ):
        np.testing.assert_allclose(to_numpy(parallel), to_numpy(step), atol=1e-5, err_msg=name)


@pytest.mark.parametrize("parallel", [True, False])
def test_stabiliser_keeps_huge_gates_finite_and_exact(parallel):
    # Input-gate logits near 100: exp() overflows float32 (e^88.7), so the
    # unstabilised cell would give inf/inf; the stabilised one is exact.
    layer = deterministic_layer(parallel, forget_gate="exp")
    kernel, bias = layer.get_weights()
    bias[4 * UNITS : 4 * UNITS + HEADS] += 100.0
    layer.set_weights([kernel, bias])
    x = sequence_inputs()
    outputs = to_numpy(layer(x))
    assert np.all(np.isfinite(outputs))
    expected = numpy_mlstm(x, kernel.astype("float64"), bias.astype("float64"), HEADS, "exp")
    # float32 resolves a logit near 100 to ~8e-6 (its ulp), which exp() turns
    # into a ~1e-5 relative error of the gate ratios: inherent, not the
    # stabiliser's.
    np.testing.assert_allclose(outputs, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "first_parallel, second_parallel",
    [(True, True), (False, False), (True, False), (False, True)],
)
def test_continuing_from_carried_states_equals_whole_sequence(first_parallel, second_parallel):
    x = sequence_inputs()
    whole = to_numpy(deterministic_layer(True)(x))
    assert_carried_states_continue(
        deterministic_layer(first_parallel, return_state=True),
        deterministic_layer(second_parallel, return_state=True),
        x,
        2,
        whole,
    )


def test_last_output_and_state_shapes():
    x = sequence_inputs()
    sequence = to_numpy(deterministic_layer()(x))
    layer = deterministic_layer(return_sequences=False, return_state=True)
    output, c, n, m = (to_numpy(t) for t in layer(x))
    np.testing.assert_allclose(output, sequence[:, -1], atol=1e-6)
    head_dim = UNITS // HEADS
    assert c.shape == (BATCH, HEADS, head_dim, head_dim)
    assert n.shape == (BATCH, HEADS, head_dim)
    assert m.shape == (BATCH, HEADS)


def test_wrong_number_of_initial_states():
    with pytest.raises(ValueError, match=r"initial_state=\[C, n, m\]"):
        MLSTM(UNITS)(sequence_inputs(), initial_state=[np.zeros((BATCH, 1, 4, 4), "float32")])


def test_stabilized_gate_biases_and_head_norm():
    layer = MLSTM(UNITS, num_heads=HEADS, stabilized=True, return_sequences=True)
    layer.build((None, TIME, FEATURES))
    bias = to_numpy(layer.bias)
    np.testing.assert_allclose(bias[4 * UNITS + HEADS :], [3.0, 6.0])  # forget: linspace(3, 6)
    assert np.all(np.abs(bias[4 * UNITS : 4 * UNITS + HEADS]) < 1.0)  # input: N(0, 0.1)
    assert np.all(bias[: 4 * UNITS] == 0)
    # inputs 1e4 times the usual scale: the per-head norm keeps the output bounded by the gate
    out = to_numpy(layer(1e4 * sequence_inputs()))
    assert np.all(np.isfinite(out))
    assert np.abs(out).max() <= np.sqrt(UNITS // HEADS) + 1e-3
    clone = MLSTM.from_config(layer.get_config())
    assert clone.stabilized is True


@pytest.mark.parametrize("parallel", [True, False])
def test_stabilized_parallel_equals_recurrent(parallel):
    x = sequence_inputs(seed=3)
    layers = [MLSTM(UNITS, num_heads=HEADS, stabilized=True, return_sequences=True, parallel=p) for p in (True, False)]
    for layer in layers:
        built_with_random_weights(layer, x.shape, seed=2)
    np.testing.assert_allclose(to_numpy(layers[0](x)), to_numpy(layers[1](x)), atol=1e-4)


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="the training check is calibrated on TensorFlow (09_xlstm trains there); other "
    "backends draw other initial weights from the same seed",
)
@pytest.mark.slow  # trains one model per seed
def test_every_seed_trains_when_stabilized():
    # a sum of 6 numbers in -5..4 (the calculator's task in miniature): every seed must
    # bring the loss well below that of predicting the mean
    rng = np.random.default_rng(0)
    x = rng.integers(-5, 5, size=(256, 6, 1)).astype("float32")
    y = x.sum(axis=(1, 2))[:, None]
    for seed in range(4):
        keras.utils.set_random_seed(seed)
        model = keras.Sequential(
            [
                keras.Input((6, 1)),
                keras.layers.Dense(16),
                MLSTM(16, num_heads=2, stabilized=True),
                keras.layers.Dense(1),
            ]
        )
        model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
        history = model.fit(x, y, epochs=30, batch_size=32, verbose=0).history["loss"]
        assert history[-1] < 0.3 * float(np.var(y)), (seed, history[-1], float(np.var(y)))
