import keras
import numpy as np
from layer_helpers import to_numpy

from predcalc.layers.cls_token import ClsToken


def test_prepends_the_value_and_round_trips(tmp_path):
    x = np.arange(6, dtype="float32").reshape(2, 3, 1)
    out = to_numpy(ClsToken()(x))
    assert out.shape == (2, 4, 1)
    np.testing.assert_array_equal(out[:, 0, 0], [15.0, 15.0])
    np.testing.assert_array_equal(out[:, 1:], x)
    inputs = keras.Input((3, 1))
    model = keras.Model(inputs, ClsToken(value=-2.0)(inputs))
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(to_numpy(loaded(x))[:, 0, 0], [-2.0, -2.0])
