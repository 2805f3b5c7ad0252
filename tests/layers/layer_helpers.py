"""Helpers shared by the layer tests (importable: pytest puts this folder on sys.path)."""

import numpy as np
from keras import ops


def built_with_random_weights(layer, input_shape, seed=1, scale=0.7):
    """``layer`` built for ``input_shape`` with every weight drawn from N(0, scale^2), float32."""
    layer.build(input_shape)
    rng = np.random.default_rng(seed)
    layer.set_weights(
        [
            rng.normal(scale=scale, size=w.shape).astype("float32")
            for w in layer.weights
        ]
    )
    return layer


def to_numpy(x):
    return ops.convert_to_numpy(x)
