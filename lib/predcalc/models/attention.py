"""Attention weights of a trained model, read by running its layers one after another.

A functional model re-using its layers with ``return_attention_scores=True`` is refused by
Keras 3.15 (a re-used layer's extra output is reported as not connected), so the chain of layers
is run eagerly instead: :func:`predcalc.models.transformer.attention_maps` and
:func:`predcalc.models.recurrent.attention_weights` read their plots from here.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import keras
import numpy as np


def attention_scores(model: keras.Model, inputs, layer_types: tuple) -> Iterator[tuple[str, np.ndarray]]:
    """``(layer name, scores)`` of each layer of ``layer_types`` in ``model`` (a chain of layers), in
    order, for encoded ``inputs`` (inference mode, the padding mask passed along); a layer of those
    types must take ``return_attention_scores``. Lazy: the layers after the last one read are not run.
    """
    x = keras.ops.convert_to_tensor(np.asarray(inputs), dtype=model.inputs[0].dtype)
    mask = None
    for layer in model.layers:
        if isinstance(layer, keras.layers.InputLayer):
            continue
        kwargs = {"mask": mask} if mask is not None and "mask" in inspect.signature(layer.call).parameters else {}
        if isinstance(layer, layer_types):
            outputs, scores = layer(x, return_attention_scores=True, training=False, **kwargs)
            yield layer.name, keras.ops.convert_to_numpy(scores)
        else:
            outputs = layer(x, **kwargs)
        mask = layer.compute_mask(x, mask)
        x = outputs
