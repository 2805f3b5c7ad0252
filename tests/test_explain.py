import keras
import numpy as np
import pytest

from predcalc.studies import explain


def test_linear_function_attributions_are_exact():
    w = np.array([[0.5, -2.0, 3.0]], dtype="float32")

    def fn(x):
        return keras.ops.sum(x * w, axis=-1)

    x = np.array([[1.0, 2.0, -1.0], [0.0, 4.0, 2.0]], dtype="float32")
    baseline = np.array([1.0, 0.0, 0.0], dtype="float32")
    attributions = explain.integrated_gradients(fn, x, baseline, steps=4)
    np.testing.assert_allclose(attributions, (x - baseline) * w, rtol=1e-6)


def test_quadratic_is_exact_with_the_trapezoid_rule():
    def fn(x):
        return keras.ops.sum(x**2, axis=(1, 2))

    x = np.array([[[1.0], [2.0], [-3.0]]], dtype="float32")
    b = np.full_like(x, 0.5)
    attributions = explain.integrated_gradients(fn, x, b, steps=3)
    np.testing.assert_allclose(attributions, x**2 - b**2, rtol=1e-6)  # gradient linear on the path


def test_completeness_on_a_recurrent_model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((6,)), keras.layers.Reshape((6, 1)), keras.layers.LSTM(8), keras.layers.Dense(1)]
    )
    x = np.random.default_rng(0).normal(size=(3, 6)).astype("float32") * 3
    baseline = np.full((6,), 0.5, dtype="float32")
    attributions = explain.integrated_gradients(model, x, baseline, steps=128)
    gap = explain.completeness_gap(model, x, baseline, attributions)
    delta = model.predict(x, verbose=0)[:, 0] - model.predict(np.tile(baseline, (3, 1)), verbose=0)[:, 0]
    assert np.all(np.abs(delta) > 1e-3)  # the check is not trivially met
    np.testing.assert_allclose(gap, 0.0, atol=2e-3 * np.abs(delta).max() + 1e-5)
    coarse = explain.integrated_gradients(model, x, baseline, steps=1)
    assert np.abs(explain.completeness_gap(model, x, baseline, coarse)).max() > np.abs(gap).max()


def test_errors():
    def fn(x):
        return keras.ops.sum(x, axis=-1)

    with pytest.raises(ValueError, match="steps=0"):
        explain.integrated_gradients(fn, np.ones((1, 3)), steps=0)
    with pytest.raises(ValueError, match="does not broadcast"):
        explain.integrated_gradients(fn, np.ones((1, 3)), np.ones(4))
    with pytest.raises(ValueError, match="shape=\\(3,\\)"):
        explain.integrated_gradients(fn, np.ones(3))
    with pytest.raises(ValueError, match="one value per example"):
        explain.integrated_gradients(lambda x: x, np.ones((2, 3)))
