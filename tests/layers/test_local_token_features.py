import numpy as np
from layer_helpers import to_numpy

from predcalc.layers.local_token_features import LocalTokenFeatures


def test_value_previous_and_parity():
    x = np.array([[[3.0], [1.0], [-2.0], [0.5]]], dtype="float32")
    expected = np.array([[[3.0, 0.5, 1.0], [1.0, 3.0, -1.0], [-2.0, 1.0, 1.0], [0.5, -2.0, -1.0]]], dtype="float32")
    np.testing.assert_allclose(to_numpy(LocalTokenFeatures()(x)), expected, atol=1e-6)
    np.testing.assert_allclose(to_numpy(LocalTokenFeatures(fill=9.0)(x))[0, 0], [3.0, 9.0, 1.0], atol=1e-6)


def test_parity_holds_at_long_positions_and_the_mask_passes_on():
    x = np.zeros((1, 301, 1), dtype="float32")
    parity = to_numpy(LocalTokenFeatures()(x))[0, :, 2]
    np.testing.assert_array_equal(parity, [(-1.0) ** t for t in range(301)])
    layer = LocalTokenFeatures()
    mask = np.array([[True, True, False]])
    assert np.array_equal(to_numpy(layer.compute_mask(np.ones((1, 3, 1)), mask)), mask)
