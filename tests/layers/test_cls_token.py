import numpy as np
from layer_helpers import to_numpy

from predcalc.layers.cls_token import ClsToken


def test_prepends_the_value():
    x = np.arange(6, dtype="float32").reshape(2, 3, 1)
    out = to_numpy(ClsToken()(x))
    assert out.shape == (2, 4, 1)
    np.testing.assert_array_equal(out[:, 0, 0], [15.0, 15.0])
    np.testing.assert_array_equal(out[:, 1:], x)
    np.testing.assert_array_equal(to_numpy(ClsToken(value=-2.0)(x))[:, 0, 0], [-2.0, -2.0])
