"""SignedSumScan's numbers against a NumPy reference, its two paths (unrolled and looped) against each
other, and RoundedGatedValueSum's rounded gates."""

import keras
import numpy as np
import pytest

from predcalc.layers import RoundedGatedValueSum, SignedSumScan


def typed(rng, batch, steps):
    """Random typed tokens: a value and a one-hot type (plus, minus, number) per step."""
    kinds = rng.integers(0, 3, size=(batch, steps))
    x = np.zeros((batch, steps, 4), "float32")
    x[..., 1:] = np.eye(3, dtype="float32")[kinds]
    x[..., 0] = np.where(kinds == 2, rng.integers(-999, 1000, size=(batch, steps)), 0)
    return x


def reference(layer, x, hard=True):
    """The layer's equations in NumPy (float64)."""
    w = {v.name: np.asarray(keras.ops.convert_to_numpy(v), dtype=np.float64) for v in layer.weights}
    x = x.astype(np.float64)
    values, types = x[..., :1], x[..., 1:]
    soft = 1 / (1 + np.exp(-(types @ w["gate_kernel"] + w["gate_bias"])))
    gates = (soft > 0.5).astype(np.float64) if hard else soft
    candidates = types @ w["candidate_kernel"] + w.get("candidate_bias", 0.0)
    state = np.broadcast_to(w["initial_state"], (x.shape[0], layer.units)).copy()
    total = np.zeros_like(state)
    for t in range(x.shape[1]):
        state = (1 - gates[:, t]) * state + gates[:, t] * candidates[:, t]
        total += values[:, t] * state
    return (total * w["readout"]).sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("straight_through", [True, False])
def test_matches_numpy_reference(straight_through):
    keras.utils.set_random_seed(3)
    layer = SignedSumScan(
        units=3, straight_through=straight_through, closed_init=False, candidate_bias=True, dtype="float64"
    )
    x = typed(np.random.default_rng(0), 6, 9)
    got = keras.ops.convert_to_numpy(layer(x))
    # float64 on TensorFlow; PyTorch's float64 output differs from NumPy by about 1e-8 relative (not
    # yet traced to a float32 step), and JAX without x64 enabled computes float32
    tolerance = {"rtol": 1e-7, "atol": 1e-9} if got.dtype == np.float64 else {"rtol": 1e-6, "atol": 1e-4}
    np.testing.assert_allclose(got, reference(layer, x, hard=straight_through), **tolerance)


def test_any_length_loop_equals_unrolled():
    """The looped path (an unknown time axis, as in an export) gives the unrolled path's numbers."""
    keras.utils.set_random_seed(1)
    inputs = keras.Input((None, 4))
    model = keras.Model(inputs, SignedSumScan(units=2, closed_init=False, dtype="float64")(inputs))
    x = typed(np.random.default_rng(1), 4, 12)
    unrolled = keras.ops.convert_to_numpy(model(x))  # a concrete shape: unrolled
    looped = model.predict(x, verbose=0)  # traced with an unknown length: the loop
    np.testing.assert_allclose(unrolled, looped, rtol=1e-13 if looped.dtype == np.float64 else 1e-6)


def test_exact_weights_give_the_signed_sum_at_any_magnitude():
    """With the weights of the exact solution (gates open on operators, closed on numbers; +1 after
    `+`, -1 after `-`; start +1; readout 1) the layer is the signed sum, 6-digit numbers included."""
    layer = SignedSumScan(units=1, dtype="float64")
    layer.build((None, None, 4))
    layer.gate_kernel.assign([[1.0], [1.0], [-1.0]])
    layer.gate_bias.assign([-0.5])
    layer.candidate_kernel.assign([[1.0], [-1.0], [0.0]])
    layer.initial_state.assign([1.0])
    layer.readout.assign([1.0])
    rng = np.random.default_rng(2)
    numbers = rng.integers(-999_999, 1_000_000, size=(5, 40))
    signs = rng.choice([-1, 1], size=(5, 39))
    x = np.zeros((5, 79, 4), "float64")
    x[:, 0::2, 0], x[:, 0::2, 3] = numbers, 1
    x[:, 1::2, 1], x[:, 1::2, 2] = signs == 1, signs == -1
    truth = numbers[:, 0] + (signs * numbers[:, 1:]).sum(axis=1)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(layer(x))[:, 0], truth)


def test_clamp_keeps_weights_in_range():
    """The clamp is a constraint: after a step with a large learning rate the clamped weights stay in [-1, 1]."""
    keras.utils.set_random_seed(0)
    inputs = keras.Input((None, 4))
    layer = SignedSumScan(units=2, straight_through=False, closed_init=False)
    model = keras.Model(inputs, layer(inputs))
    model.compile(optimizer=keras.optimizers.SGD(100.0), loss="mse")
    x = typed(np.random.default_rng(0), 8, 5)
    model.fit(x, np.full((8, 1), 1e4, "float32"), epochs=2, verbose=0)
    for weight in layer.rounded_weights():
        assert np.abs(keras.ops.convert_to_numpy(weight)).max() <= 1.0


def test_regularizer_ramp():
    """The penalty is added after ramp_start training calls, at full strength from ramp_end."""
    layer = SignedSumScan(units=1, regularization=2.0, ramp_start=1, ramp_end=3)
    x = typed(np.random.default_rng(0), 2, 3)
    penalties = []
    for _ in range(5):
        layer(x, training=True)
        penalties.append(float(keras.ops.convert_to_numpy(layer.losses[0])) if layer.losses else 0.0)
    full = 2.0 * float(keras.ops.convert_to_numpy(layer.penalty()))
    np.testing.assert_allclose(penalties, [0.0, 0.0, full / 2, full, full], rtol=1e-6)


def test_rounded_gates_are_integers():
    keras.utils.set_random_seed(0)
    layer = RoundedGatedValueSum()
    features, values = np.random.default_rng(0).normal(size=(3, 6, 8)) * 3, np.ones((3, 6, 1))
    out = keras.ops.convert_to_numpy(layer([features.astype("float32"), values.astype("float32")]))
    gates = keras.ops.convert_to_numpy(layer.gates(features.astype("float32")))
    assert set(np.unique(gates)) <= {-1.0, 0.0, 1.0}
    np.testing.assert_allclose(out[:, 0], gates.sum(axis=(1, 2)))


def test_each_uniform_weight_has_its_own_draw_and_a_seed_fixes_them():
    """The candidate kernel, the initial state and the readout start from separate draws (a shared
    initializer would start them equal), and the same global seed gives the same start."""

    def start(seed):
        keras.utils.set_random_seed(seed)
        layer = SignedSumScan(units=2, dtype="float64")
        layer.build((None, 5, 4))
        return {
            name: keras.ops.convert_to_numpy(getattr(layer, name))
            for name in ("candidate_kernel", "initial_state", "readout")
        }

    first = start(0)
    assert not np.allclose(first["initial_state"], first["readout"])
    assert not np.allclose(first["initial_state"], first["candidate_kernel"][0])
    assert not np.allclose(first["readout"], first["candidate_kernel"][0])
    again = start(0)
    for name, value in first.items():
        np.testing.assert_array_equal(value, again[name])
    assert not np.allclose(start(1)["readout"], first["readout"])


def test_clamp_limit_bounds_the_clamped_weights_and_refuses_a_non_positive_limit():
    layer = SignedSumScan(units=1, clamp_limit=2.0, dtype="float64")
    layer.build((None, 5, 4))
    for weight in layer.rounded_weights():
        clipped = keras.ops.convert_to_numpy(weight.constraint(keras.ops.convert_to_tensor([-3.0, -1.5, 1.5, 3.0])))
        np.testing.assert_array_equal(clipped, [-2.0, -1.5, 1.5, 2.0])
    assert SignedSumScan.from_config(layer.get_config()).clamp_limit == 2.0
    with pytest.raises(ValueError, match="clamp_limit must be > 0"):
        SignedSumScan(clamp_limit=0)
