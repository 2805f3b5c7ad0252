"""Explanations of trained models (notebook 23): integrated gradients (Sundararajan et al. 2017, the
path integral by the trapezoid rule, so completeness holds up to its error), attention and gates."""

from __future__ import annotations

from collections.abc import Callable

import keras
import numpy as np
import pandas as pd

from predcalc.layers import ReferenceGRUCell, ReferenceLSTMCell
from predcalc.training import fit


def _require_tensorflow():
    if keras.backend.backend() != "tensorflow":
        raise RuntimeError(
            "integrated_gradients needs the TensorFlow backend (tf.GradientTape). "
            f"Received: backend={keras.backend.backend()!r}"
        )
    import tensorflow as tf  # after the backend check above: the TensorFlow backend only

    return tf


def integrated_gradients(fn: Callable, inputs, baseline=None, steps: int = 64) -> np.ndarray:
    """Integrated gradients of ``fn``'s scalar outputs, shaped like ``inputs`` (baseline: zeros)."""
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
            raise ValueError(
                f"fn must return one value per example, shape (batch,) or (batch, 1). "
                f"Received: shape={tuple(outputs.shape)}"
            )
        total = keras.ops.sum(outputs)
    grads = keras.ops.reshape(tape.gradient(total, flat), path.shape)  # (steps+1, batch, *features)
    weights = np.full(steps + 1, 1.0 / steps)
    weights[[0, -1]] = 0.5 / steps  # trapezoid rule
    mean_grad = np.tensordot(weights, keras.ops.convert_to_numpy(grads).astype("float64"), axes=1)
    return (x.astype("float64") - b.astype("float64")) * mean_grad


def completeness_gap(fn: Callable, inputs, baseline, attributions) -> np.ndarray:
    x = np.asarray(inputs, dtype="float32")
    b = np.broadcast_to(np.asarray(baseline, dtype="float32"), x.shape)

    def f(v):
        return keras.ops.convert_to_numpy(fn(keras.ops.convert_to_tensor(v))).reshape(len(x))

    a = np.asarray(attributions)
    return a.reshape(len(x), -1).sum(axis=1) - (f(x).astype("float64") - f(b).astype("float64"))


NUMBER_POS, OPERATOR_POS = [0, 2, 4], [1, 3]  # token classes of ``a op b op c`` (seed protocol)


def token_classes(length: int) -> dict[str, list[int]]:
    return {"numbers": NUMBER_POS, "operators": OPERATOR_POS, "padding": list(range(5, length))}


def ig_statistics(model, x, baseline, attributions, plus: float) -> dict:
    a, x = np.asarray(attributions), np.asarray(x)
    classes = token_classes(x.shape[1])
    gap = completeness_gap(model, x, baseline, a)
    delta = np.abs(model.predict(x, verbose=0)[:, 0] - model.predict(baseline[None], verbose=0)[0, 0])
    sign_b = np.where(x[:, 1] == plus, 1.0, -1.0)  # the operator in front of b
    sign_c = np.where(x[:, 3] == plus, 1.0, -1.0)
    total = np.abs(a).sum(axis=1, keepdims=True)

    def share(pos):
        return float((np.abs(a[:, pos]).sum(1) / total[:, 0]).mean())

    return {
        "completeness_max_gap": float(np.abs(gap).max()),
        "mean_abs_delta": float(delta.mean()),
        "share_numbers": share(classes["numbers"]),
        "share_operators": share(classes["operators"]),
        "share_padding": share(classes["padding"]),
        # does the attribution of b (c) follow the signed term it contributes, op * b (op * c)?
        "corr_b": float(np.corrcoef(a[:, 2], sign_b * x[:, 2])[0, 1]),
        "corr_c": float(np.corrcoef(a[:, 4], sign_c * x[:, 4])[0, 1]),
        "corr_a": float(np.corrcoef(a[:, 0], x[:, 0])[0, 1]),
    }


def attention_statistics(alpha) -> dict:
    alpha = np.asarray(alpha)
    return {
        "mass_expression": float(alpha[:, :5].sum(1).mean()),
        "mass_padding": float(alpha[:, 5:].sum(1).mean()),
        "top_position": int(alpha.mean(0).argmax()),
        "top_weight": float(alpha.mean(0).max()),
        "uniform_weight": 1 / alpha.shape[1],
    }


def _layer_input(model, layer_name, inputs):
    return keras.Model(model.inputs, model.get_layer(layer_name).input)(inputs)


def reference_cell_gates(model, kind: str, x) -> tuple[dict, float]:
    """A Keras ``lstm``/``gru`` layer's gates through its reference cell, and the final states' gap."""
    layer = model.get_layer(kind)
    cell = {"lstm": ReferenceLSTMCell, "gru": ReferenceGRUCell}[kind](layer.units)
    cell.set_keras_weights(layer)
    seq = _layer_input(model, kind, x)
    g = {k: keras.ops.convert_to_numpy(v) for k, v in cell.gate_sequence(seq).items()}
    keras_h = keras.ops.convert_to_numpy(keras.Model(model.inputs, layer.output)(x))
    return g, float(np.abs(g["h"][:, -1] - keras_h).max())


def min_gru_update_gate(model, x, layer_name: str = "min_gru_1") -> np.ndarray:
    layer = model.get_layer(layer_name)
    seq = keras.ops.convert_to_numpy(_layer_input(model, layer_name, x))  # (n, time, embedding)
    kernel, bias = (keras.ops.convert_to_numpy(w) for w in (layer.kernel, layer.bias))
    return 1 / (1 + np.exp(-(seq @ kernel[:, : layer.units] + bias[: layer.units])))


def trained_gates(models: dict, x) -> tuple[dict, dict]:
    """Gates of the trained ``lstm``, ``gru`` and ``min_gru`` among ``models``: ``(gates, parity)``."""
    gates, parity = {}, {}
    if "lstm" in models:
        g, parity["lstm"] = reference_cell_gates(models["lstm"], "lstm", x)
        gates["LSTM"] = {"forget f": g["f"], "input i": g["i"], "output o": g["o"]}
    if "gru" in models:
        g, parity["gru"] = reference_cell_gates(models["gru"], "gru", x)
        gates["GRU"] = {"update z": g["z"], "reset r": g["r"]}
    if "min_gru" in models:
        gates["minGRU"] = {"update z": min_gru_update_gate(models["min_gru"], x)}
    return gates, parity


def gate_statistics(gates: dict, length: int) -> dict:
    classes = token_classes(length)
    stats = {}
    for model_name, named in gates.items():
        for gate_name, values in named.items():
            per_position = values.mean(axis=(0, 2))
            stats[f"{model_name} {gate_name}"] = {k: float(per_position[pos].mean()) for k, pos in classes.items()}
    return stats


def state_retention(gates: dict, length: int) -> dict:
    """Share of the position-4 state surviving the pads per unit (LSTM ``prod f``, GRUs ``prod (1 - z)``)."""
    pad_pos = token_classes(length)["padding"]
    keep = {
        "LSTM": ("forget f", lambda g: g),
        "GRU": ("update z", lambda g: 1 - g),
        "minGRU": ("update z", lambda g: 1 - g),
    }
    retention = {}
    for model_name, (gate_name, carry) in keep.items():
        if model_name in gates:
            per_unit = np.prod(carry(gates[model_name][gate_name][:, pad_pos, :]), axis=1).mean(0)  # (units,)
            retention[model_name] = {"median_unit": float(np.median(per_unit)), "max_unit": float(per_unit.max())}
    return retention


def quality_table(trained: dict, protocol, labels: dict):
    rows = []
    for name, t in trained.items():
        metrics, _ = fit.evaluate(t, {"in": protocol.test_in, "long": protocol.test_long})
        rows.append(
            {
                "model": labels[name],
                "params": t.params,
                "epochs": t.epochs,
                "MAE in": metrics["in"]["mae"],
                "MAE long": metrics["long"]["mae"],
            }
        )
    return pd.DataFrame(rows)
