"""Explanations of trained models (notebook 23): integrated gradients per input token.

Integrated gradients (Sundararajan et al. 2017) attribute ``f(x) - f(x')`` to the input
features along the straight path from a baseline ``x'`` to ``x``:

    IG_i(x) = (x_i - x'_i) * integral_0^1 df/dx_i (x' + a (x - x')) da

The integral is approximated with the trapezoid rule over ``steps`` equal intervals, so the
*completeness* property ``sum_i IG_i = f(x) - f(x')`` holds up to the quadrature error
(exactly for a function whose gradient is linear along the path). Gradients come from
TensorFlow's ``tf.GradientTape`` (the project's backend); the path is built with ``keras.ops``.
"""

from __future__ import annotations

from typing import Callable

import keras
import numpy as np


def _require_tensorflow():
    if keras.backend.backend() != "tensorflow":
        raise RuntimeError("integrated_gradients needs the TensorFlow backend (tf.GradientTape). "
                           f"Received: backend={keras.backend.backend()!r}")
    import tensorflow as tf

    return tf


def integrated_gradients(fn: Callable, inputs, baseline=None, steps: int = 64) -> np.ndarray:
    """Integrated-gradients attributions of the scalar outputs of ``fn``.

    Args:
        fn: maps a float tensor of shape ``(batch, *features)`` to outputs of shape
            ``(batch,)`` or ``(batch, 1)`` (e.g. a regression ``keras.Model``).
        inputs: array ``(batch, *features)``.
        baseline: array broadcastable to ``inputs`` (default zeros), the reference input.
        steps: number of trapezoid intervals on the path (``steps + 1`` gradient evaluations).

    Returns:
        float64 array shaped like ``inputs``.
    """
    tf = _require_tensorflow()
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool) or steps < 1:
        raise ValueError(f"steps must be a positive integer. Received: steps={steps!r}")
    x = np.asarray(inputs, dtype="float32")
    if x.ndim < 2:
        raise ValueError(f"inputs must have a batch axis, shape (batch, *features). Received: shape={x.shape}")
    b = np.zeros_like(x) if baseline is None else np.asarray(baseline, dtype="float32")
    try:
        b = np.broadcast_to(b, x.shape)
    except ValueError:
        raise ValueError(f"baseline of shape {b.shape} does not broadcast to inputs of shape {x.shape}") from None
    alphas = keras.ops.linspace(0.0, 1.0, steps + 1)  # (steps + 1,)
    alpha_shape = (steps + 1,) + (1,) * x.ndim
    x_t, b_t = keras.ops.convert_to_tensor(x), keras.ops.convert_to_tensor(b)
    path = b_t[None] + keras.ops.reshape(alphas, alpha_shape) * (x_t - b_t)[None]  # (steps+1, batch, *f)
    flat = keras.ops.reshape(path, (-1,) + x.shape[1:])  # ((steps+1) * batch, *features)
    with tf.GradientTape() as tape:
        tape.watch(flat)
        outputs = keras.ops.convert_to_tensor(fn(flat))
        if len(outputs.shape) == 2 and outputs.shape[-1] == 1:
            outputs = outputs[:, 0]
        if len(outputs.shape) != 1:
            raise ValueError(f"fn must return one value per example, shape (batch,) or (batch, 1). "
                             f"Received: shape={tuple(outputs.shape)}")
        total = keras.ops.sum(outputs)
    grads = keras.ops.reshape(tape.gradient(total, flat), path.shape)  # (steps+1, batch, *features)
    weights = np.full(steps + 1, 1.0 / steps)
    weights[[0, -1]] = 0.5 / steps  # trapezoid rule
    mean_grad = np.tensordot(weights, keras.ops.convert_to_numpy(grads).astype("float64"), axes=1)
    return (x.astype("float64") - b.astype("float64")) * mean_grad


def token_attributions(attributions) -> np.ndarray:
    """Sums the attributions of each token's features: ``(batch, time, *f) -> (batch, time)``."""
    a = np.asarray(attributions)
    return a.reshape(a.shape[0], a.shape[1], -1).sum(axis=-1) if a.ndim > 2 else a


def completeness_gap(fn: Callable, inputs, baseline, attributions) -> np.ndarray:
    """``sum(attributions) - (f(x) - f(x'))`` per example; near 0 when the integral is accurate."""
    x = np.asarray(inputs, dtype="float32")
    b = np.broadcast_to(np.asarray(baseline, dtype="float32"), x.shape)
    f = lambda v: keras.ops.convert_to_numpy(fn(keras.ops.convert_to_tensor(v))).reshape(len(x))
    a = np.asarray(attributions)
    return a.reshape(len(x), -1).sum(axis=1) - (f(x).astype("float64") - f(b).astype("float64"))
