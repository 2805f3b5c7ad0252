"""Tests for `SinusoidalPositionalEncoding` (seed 002 section 3.4, Vaswani et al. section 3.5)."""

import math

import keras
import numpy as np
import pytest
from keras import ops

from predcalc.layers.sinusoidal_positional_encoding import SinusoidalPositionalEncoding


def numpy_encoding(time, d_model, max_wavelength=10000.0):
    """PE(pos, 2i) = sin(pos / w^(2i/d)), PE(pos, 2i+1) = cos(pos / w^(2i/d)), in float64."""
    encoding = np.zeros((time, d_model))
    for pos in range(time):
        for j in range(d_model):
            angle = pos / max_wavelength ** ((j // 2) * 2 / d_model)
            encoding[pos, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return encoding


def test_pinned_numbers_on_zero_input():
    encoded = ops.convert_to_numpy(SinusoidalPositionalEncoding()(np.zeros((1, 3, 4), "float32")))
    np.testing.assert_allclose(encoded[0, 0], [0.0, 1.0, 0.0, 1.0], atol=1e-6)
    # position 1: wavelengths 10000^(0/4) = 1 and 10000^(2/4) = 100
    np.testing.assert_allclose(encoded[0, 1], [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)], atol=1e-6)
    np.testing.assert_allclose(encoded[0, 2], [0.90929743, -0.41614684, 0.01999867, 0.99980001], atol=1e-6)


@pytest.mark.parametrize("d_model", [6, 5])
def test_adds_the_encoding_to_the_input(d_model):
    x = np.sin(np.arange(2 * 15 * d_model, dtype="float32")).reshape(2, 15, d_model)
    encoded = ops.convert_to_numpy(SinusoidalPositionalEncoding()(x))
    np.testing.assert_allclose(encoded, x + numpy_encoding(15, d_model)[None], atol=1e-5)


def test_max_wavelength_and_no_weights():
    layer = SinusoidalPositionalEncoding(max_wavelength=100)
    x = np.zeros((1, 7, 8), "float32")
    np.testing.assert_allclose(ops.convert_to_numpy(layer(x))[0], numpy_encoding(7, 8, 100.0), atol=1e-5)
    assert layer.weights == [] and layer.count_params() == 0


def test_mask_is_passed_through():
    x = np.ones((2, 4, 6), "float32")
    x[0, 2:] = 0.0
    inputs = keras.Input((4, 6))
    masked = keras.layers.Masking(mask_value=0.0)(inputs)
    layer = SinusoidalPositionalEncoding()
    encoded = layer(masked)
    mask = np.array([[True, True, False, False], [True] * 4])
    assert np.array_equal(ops.convert_to_numpy(layer.compute_mask(x, mask)), mask)
    # the encoding is added to every step; the mask, not the values, marks padding
    model = keras.Model(inputs, encoded)
    np.testing.assert_allclose(ops.convert_to_numpy(model(x))[0, 3], numpy_encoding(4, 6)[3], atol=1e-5)
