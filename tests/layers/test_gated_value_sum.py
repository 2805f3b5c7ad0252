import numpy as np
from layer_helpers import to_numpy

from predcalc.layers.gated_value_sum import GatedValueSum


def test_matches_numpy():
    rng = np.random.default_rng(0)
    features = rng.normal(size=(3, 5, 4)).astype("float32")
    values = rng.normal(size=(3, 5, 1)).astype("float32")
    layer = GatedValueSum()
    out = to_numpy(layer([features, values]))
    w, c, b = (to_numpy(v) for v in (layer.gate_kernel, layer.gate_bias, layer.bias))
    layer.gate_bias.assign([0.3])
    layer.bias.assign([-0.2])
    gates = features @ w + 0.3
    expected = (gates * values).sum(axis=1) - 0.2
    np.testing.assert_allclose(to_numpy(layer([features, values])), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_numpy(layer.gates(features)), gates, rtol=1e-5, atol=1e-6)
    assert out.shape == (3, 1)


def test_linear_in_the_values_at_any_magnitude():
    # gates +1, -1, 0 make a signed sum: 3 - 1000 (the third token is ignored)
    layer = GatedValueSum()
    features = np.array([[[1.0], [-1.0], [0.0]]], dtype="float32")
    layer.build([(None, 3, 1), (None, 3, 1)])
    layer.gate_kernel.assign([[1.0]])
    values = np.array([[[3.0], [1000.0], [7.0]]], dtype="float32")
    np.testing.assert_allclose(to_numpy(layer([features, values])), [[-997.0]])


def test_a_masked_step_adds_nothing():
    rng = np.random.default_rng(1)
    features = rng.normal(size=(2, 4, 3)).astype("float32")
    values = rng.normal(size=(2, 4, 1)).astype("float32")
    mask = np.array([[True, True, False, False], [True, True, True, False]])
    layer = GatedValueSum()
    out = to_numpy(layer([features, values], mask=[None, mask]))
    for row, n in enumerate((2, 3)):
        np.testing.assert_allclose(
            out[row], to_numpy(layer([features[row : row + 1, :n], values[row : row + 1, :n]]))[0], rtol=1e-5, atol=1e-6
        )
    assert layer.compute_mask([features, values], [None, mask]) is None
