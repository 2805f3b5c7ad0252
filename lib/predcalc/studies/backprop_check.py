"""Seed 004's printed numbers (notebook 00): the article's values, a comparer, and the same network
in Keras differentiated by ``tf.GradientTape``."""

from __future__ import annotations

import keras
import numpy as np
import pandas as pd
import tensorflow as tf
from keras import ops

# Transcribed from the prior report's backpropagation article (its document 004), two decimals as printed.
ARTICLE = {
    "forward": {
        "s_1^in": [0.75, 0.60],
        "s": {1: [0.64, 0.54], 2: [0.68, 0.61], 3: [0.36, 0.84], 4: [0.74, 0.59], 5: [0.70, 0.43], 6: [0.66, 0.37]},
        "o_4^in": [0.22, 1.08, -0.19],
        "o": {4: [0.55, 0.75, 0.45], 5: [0.56, 0.74, 0.45], 6: [0.57, 0.73, 0.45]},
        "loss": 3.30,
    },
    # the L_4 chain as printed: y_4 o (o_4^in - 1)  ->  (that) W_o^T  ->  1 - s_4^2  ->  Delta_4  ->  1 - s_3^2
    "L4_chain": {
        "first factor": [-0.78, -0.00, -1.19],
        "times W_o^T": [0.40, -0.12],
        "1 - s_4^2": [0.45, 0.65],
        "1 - s_3^2": [0.87, 0.29],
    },
    "deltas": {  # Delta_j of each loss L_t, j = t .. 1
        4: {4: [0.17, -0.08], 3: [0.03, 0.01], 2: [0.00, 0.01], 1: [0.00, 0.01]},
        5: {5: [-0.06, -0.10], 4: [0.01, -0.05], 3: [0.01, -0.01], 2: [0.00, 0.00], 1: [0.00, 0.00]},
        6: {6: [0.00, -0.05], 5: [0.01, -0.02], 4: [0.00, 0.00], 3: [0.00, 0.00], 2: [0.00, 0.00], 1: [0.00, 0.00]},
    },
    "gradients": {  # per loss; the L_4 gradients of W_s, B_s and U are not printed
        4: {"W_o": [[-0.33, 0.00, -0.41], [-0.26, 0.00, -0.32]], "B_o": [-0.45, 0.00, -0.55]},
        5: {
            "W_o": [[0.00, -0.19, -0.39], [0.00, -0.11, -0.24]],
            "B_o": [0.00, -0.26, -0.55],
            "W_s": [[0.01, -0.01], [0.00, 0.00], [0.01, 0.00]],
            "B_s": [-0.04, -0.15],
            "U": [[-0.03, -0.09], [-0.02, -0.10]],
        },
        6: {
            "W_o": [[0.00, 0.00, -0.36], [0.00, 0.00, -0.21]],
            "B_o": [0.00, 0.00, -0.55],
            "W_s": [[0.00, 0.00], [0.00, 0.00], [0.00, 0.00]],
            "B_s": [0.01, -0.07],
            "U": [[0.01, -0.05], [0.01, -0.04]],
        },
    },
    "totals": {
        "W_o": [[-0.33, -0.19, -1.16], [-0.26, -0.11, -0.77]],
        "B_o": [-0.45, -0.26, -1.65],
        "W_s": [[0.05, 0.01], [0.00, 0.02], [0.04, 0.03]],
        "B_s": [0.18, -0.27],
        "U": [[0.06, -0.15], [0.16, -0.19]],
    },
    "updated": {
        "W_s": [[-0.77, 0.50], [-0.25, -0.01], [0.23, 0.23]],
        "W_o": [[-0.73, 0.54, 0.58], [0.28, 0.31, 0.48]],
        "U": [[0.07, -0.17], [0.42, 0.60]],
        "B_s": [0.41, 0.48],
        "B_o": [1.02, 0.73, 0.58],
    },
    "new loss": 1.36,
}
WEIGHT_NAMES = ("W_s", "U", "B_s", "W_o", "B_o")  # order of the Keras network's trainable_weights


def show(values, decimals: int = 4) -> str:
    return np.array2string(
        np.round(np.asarray(values, dtype=float), decimals) + 0.0,
        precision=decimals,
        floatmode="fixed",
        suppress_small=True,
        separator=" ",
    )


class Checker:
    """Records and prints each of the article's printed quantities beside the exact value."""

    def __init__(self, tolerance: float):
        self.tolerance = tolerance
        self.checks: list[dict] = []

    def __call__(self, what: str, ours, printed, allowed=None) -> None:
        ours, printed = np.asarray(ours, dtype=float), np.asarray(printed, dtype=float)
        gap = float(np.max(np.abs(ours - printed)))
        limit = self.tolerance if allowed is None else allowed
        verdict = "agrees" if gap <= limit + 1e-9 else f"DIFFERS by {gap:.4f}"
        exact, article = show(ours).replace("\n", ""), show(printed, 2).replace("\n", "")
        self.checks.append({"quantity": what, "exact": exact, "article": article, "max gap": gap, "verdict": verdict})
        print(f"{what:<15} exact {exact:<44} article {article:<34} {verdict}")


def keras_network(parameters):
    """``SimpleRNN(2, tanh) + Dense(3, sigmoid)`` in float64 holding the article's matrices."""
    network_inputs = keras.Input((6, 3), dtype="float64")
    states = keras.layers.SimpleRNN(2, activation="tanh", return_sequences=True, dtype="float64", name="state")(
        network_inputs
    )
    network_outputs = keras.layers.Dense(3, activation="sigmoid", dtype="float64", name="output")(states)
    network = keras.Model(network_inputs, network_outputs, name="reference004")
    network.get_layer("state").set_weights([parameters.W_s, parameters.U, parameters.B_s])
    network.get_layer("output").set_weights([parameters.W_o, parameters.B_o])
    assert [tuple(w.shape) for w in network.trainable_weights] == [parameters.as_dict()[n].shape for n in WEIGHT_NAMES]
    return network


def article_losses(outputs, targets: dict) -> dict:
    return {t: -ops.sum(y * ops.log(outputs[0, t - 1])) for t, y in targets.items()}


def keras_gradients(network, x, targets: dict):
    with tf.GradientTape(persistent=True) as tape:
        losses = article_losses(network(x), targets)
        total = sum(losses.values())
    totals = dict(zip(WEIGHT_NAMES, tape.gradient(total, network.trainable_weights)))
    per_loss = {
        t: dict(zip(WEIGHT_NAMES, tape.gradient(losses[t], network.trainable_weights, unconnected_gradients="zero")))
        for t in targets
    }
    del tape
    return total, totals, per_loss


def autodiff_deltas(parameters, x, targets: dict) -> dict:
    """``Delta_j = dL_t/ds_j^in`` of each ``L_t``, by autodiff through a ``keras.ops`` loop."""
    weights = {name: tf.constant(value) for name, value in parameters.as_dict().items()}
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(list(weights.values()))  # constants are recorded only when watched
        state, pre_activations, states_list = tf.zeros((1, 2), dtype="float64"), [], []
        for t in range(x.shape[1]):
            pre = ops.matmul(x[:, t], weights["W_s"]) + ops.matmul(state, weights["U"]) + weights["B_s"]  # (1, 2)
            state = ops.tanh(pre)
            pre_activations.append(pre)
            states_list.append(state)
        outputs = ops.stack([ops.sigmoid(ops.matmul(s, weights["W_o"]) + weights["B_o"]) for s in states_list], axis=1)
        loop_losses = article_losses(outputs, targets)
    gradients = {t: tape.gradient(loop_losses[t], pre_activations, unconnected_gradients="zero") for t in targets}
    deltas = {t: np.concatenate([ops.convert_to_numpy(g) for g in grads]) for t, grads in gradients.items()}
    del tape
    return deltas


def outputs_before_after(before, after, targets: dict):
    return pd.DataFrame(
        [
            {"step": t, "output": k, "target": int(y[k]), "before": before.o[t][k], "after": after.o[t][k]}
            for t, y in targets.items()
            for k in range(len(y))
        ]
    )
