"""NeuralAdditionUnit and NeuralMultiplicationUnit against NumPy references (float64), their clamps
(in the forward pass and after an optimizer update) and the ramped rounding regulariser."""

import keras
import numpy as np
import pytest

from predcalc.layers import NeuralAdditionUnit, NeuralMultiplicationUnit
from predcalc.layers._rounding import ramp_factor


def numbers(x, layer):
    return keras.ops.convert_to_numpy(layer(x))


def close(got, expected):
    """float64 where the backend computes it (TensorFlow, PyTorch); JAX without x64 enabled computes
    float32."""
    tolerance = 1e-12 if got.dtype == np.float64 else 2e-6
    np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)


def nau_reference(x, w):
    return x @ np.clip(w, -1.0, 1.0)


def nmu_reference(x, w):
    w = np.clip(w, 0.0, 1.0)
    return np.prod(x[..., :, None] * w + (1.0 - w), axis=-2)


def with_kernel(layer, shape, kernel):
    layer.build(shape)
    layer.kernel.assign(kernel)
    return layer


def test_nau_matches_numpy_with_weights_outside_the_clamp():
    x = np.random.default_rng(0).normal(size=(5, 4))
    kernel = np.array([[1.7, -0.3], [0.25, -2.0], [0.0, 0.5], [-1.0, 1.0]])  # 1.7 and -2.0 act as 1 and -1
    layer = with_kernel(NeuralAdditionUnit(2, dtype="float64"), (None, 4), kernel)
    close(numbers(x, layer), nau_reference(x, kernel))


def test_nmu_matches_numpy_with_weights_outside_the_clamp():
    x = np.random.default_rng(1).normal(size=(5, 3))
    kernel = np.array([[1.0, 0.3, -0.5], [1.4, 0.0, 0.8], [0.2, 1.0, 0.5]])  # -0.5 acts as 0, 1.4 as 1
    layer = with_kernel(NeuralMultiplicationUnit(3, dtype="float64"), (None, 3), kernel)
    close(numbers(x, layer), nmu_reference(x, kernel))


def test_units_share_their_weights_across_a_sequence_axis():
    """On ``(batch, steps, features)`` each step goes through the same weights."""
    x = np.random.default_rng(2).normal(size=(2, 6, 3))
    nmu = with_kernel(
        NeuralMultiplicationUnit(2, dtype="float64"), (None, 6, 3), np.array([[1, 0.5], [0, 1], [1, 0.25]])
    )
    nau = with_kernel(NeuralAdditionUnit(2, dtype="float64"), (None, 6, 3), np.array([[1, -0.5], [0, 1], [-1, 0.25]]))
    close(numbers(x, nmu), nmu_reference(x, keras.ops.convert_to_numpy(nmu.kernel)))
    close(numbers(x, nau), nau_reference(x, keras.ops.convert_to_numpy(nau.kernel)))


def test_integer_weights_are_exact_arithmetic():
    """NMU weights of 0 and 1 multiply exactly the chosen inputs; NAU weights of -1, 0, 1 add and
    subtract exactly: (a * b) - c on integers, in float32."""
    x = np.array([[3.0, -7.0, 5.0], [-8.0, 8.0, 2.0], [123.0, 45.0, -6.0]], "float32")
    nmu = with_kernel(NeuralMultiplicationUnit(2), (None, 3), np.array([[1, 0], [1, 0], [0, 1]], "float32"))
    nau = with_kernel(NeuralAdditionUnit(1), (None, 2), np.array([[1], [-1]], "float32"))
    got = keras.ops.convert_to_numpy(nau(nmu(x)))[:, 0]
    np.testing.assert_array_equal(got, x[:, 0] * x[:, 1] - x[:, 2])


@pytest.mark.parametrize(
    "layer_type, kernel, penalty",
    [
        (NeuralAdditionUnit, [[0.25, -1.0], [0.5, 0.9]], (0.25 + 0.0 + 0.5 + 0.1) / 4),
        (NeuralMultiplicationUnit, [[0.25, 1.0], [0.5, 0.0]], (0.25 + 0.0 + 0.5 + 0.0) / 4),
    ],
)
def test_penalty_is_the_mean_distance_to_the_nearest_rounded_weight(layer_type, kernel, penalty):
    layer = with_kernel(layer_type(2, dtype="float64"), (None, 2), np.array(kernel))
    got = keras.ops.convert_to_numpy(layer.penalty())
    assert float(got) == pytest.approx(penalty, abs=1e-12 if got.dtype == np.float64 else 1e-7)


@pytest.mark.parametrize("steps, factor", [(0, 0.0), (10, 0.0), (15, 0.5), (20, 1.0), (99, 1.0)])
def test_the_ramp_rises_linearly_between_its_steps(steps, factor):
    assert float(
        keras.ops.convert_to_numpy(ramp_factor(keras.ops.convert_to_tensor(float(steps)), 10, 20))
    ) == pytest.approx(factor)


def test_a_training_call_adds_the_ramped_penalty_and_counts_the_step():
    layer = with_kernel(
        NeuralAdditionUnit(1, regularization=2.0, ramp_start=1, ramp_end=3),
        (None, 2),
        np.array([[0.25], [0.5]], "float32"),
    )
    x = np.ones((1, 2), "float32")
    added = []
    for _ in range(4):
        layer(x, training=True)
        added.append(float(keras.ops.convert_to_numpy(layer.losses[-1])))
    # penalty (0.25 + 0.5) / 2 = 0.375, times 2.0, times the ramp 0, 0, 0.5, 1 at steps 0-3
    np.testing.assert_allclose(added, [0.0, 0.0, 0.375, 0.75], rtol=1e-6)
    assert float(keras.ops.convert_to_numpy(layer.training_steps)) == 4.0
    layer(x)  # an inference call neither adds a loss nor counts
    assert float(keras.ops.convert_to_numpy(layer.training_steps)) == 4.0


@pytest.mark.parametrize("layer_type, low", [(NeuralAdditionUnit, -1.0), (NeuralMultiplicationUnit, 0.0)])
def test_an_optimizer_update_keeps_the_kernel_in_its_clamp(layer_type, low):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((3,))
    model = keras.Model(inputs, layer_type(2, regularization=0.0)(inputs))
    model.compile(optimizer=keras.optimizers.SGD(100.0), loss="mse")
    x = np.random.default_rng(0).normal(size=(8, 3)).astype("float32")
    model.fit(x, 50.0 * np.sign(np.random.default_rng(1).normal(size=(8, 2))), epochs=3, verbose=0)
    kernel = keras.ops.convert_to_numpy(model.layers[-1].kernel)
    assert kernel.min() >= low and kernel.max() <= 1.0
    assert kernel.min() == low or kernel.max() == 1.0  # the huge steps pushed some weight onto a bound


def test_initial_weights_follow_the_paper():
    """NAU: uniform in +-min(0.5, sqrt(3) sqrt(2 / (in + out))); NMU: uniform in [0.25, 0.75]."""
    keras.utils.set_random_seed(0)
    nau, nmu = NeuralAdditionUnit(1), NeuralMultiplicationUnit(64)
    nau.build((None, 200))
    nmu.build((None, 64))
    nau_kernel, nmu_kernel = (keras.ops.convert_to_numpy(layer.kernel) for layer in (nau, nmu))
    limit = np.sqrt(3.0) * np.sqrt(2.0 / 201)
    assert np.abs(nau_kernel).max() <= limit and np.abs(nau_kernel).max() > 0.9 * limit
    assert nmu_kernel.min() >= 0.25 and nmu_kernel.max() <= 0.75 and abs(nmu_kernel.mean() - 0.5) < 0.02
