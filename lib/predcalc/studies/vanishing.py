"""Vanishing gradients, measured (notebook 20): the gradients reaching earlier states of a cell, stepped
by hand in a ``tf.GradientTape``, and the LSTM's ``dc_t/dc_{t-1}`` against ``diag(f_t)``."""

from __future__ import annotations

import keras
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf
from keras import ops

from predcalc.layers import PReLURNNCell, ReferenceGRUCell, ReferenceLSTMCell


def make_cells(units: int) -> dict:
    return {
        "RNN (tanh)": lambda: keras.layers.SimpleRNNCell(units),
        "RNN (PReLU)": lambda: PReLURNNCell(units),
        "LSTM": lambda: ReferenceLSTMCell(units),
        "GRU": lambda: ReferenceGRUCell(units),
    }


def build(make_cell, length: int) -> keras.Model:
    inputs = keras.Input((length,), name="tokens")
    sequence = keras.layers.Reshape((length, 1), name="token_values")(inputs)
    state = keras.layers.RNN(make_cell(), name="recurrence")(sequence)
    return keras.Model(inputs, keras.layers.Dense(1, name="value")(state))


def state_gradients(network, x, y) -> dict:
    """Per-expression norms ||dL_i/dh_{T-k}|| (and ||dL_i/dc_{T-k}|| for an LSTM), k = 0..T-1."""
    cell = network.get_layer("recurrence").cell
    readout = network.get_layer("value")
    x = ops.convert_to_tensor(np.asarray(x)[:, :, None])  # (batch, T, 1)
    length = x.shape[1]
    sizes = cell.state_size if isinstance(cell.state_size, (list, tuple)) else [cell.state_size]
    with tf.GradientTape() as tape:
        states = [ops.zeros((x.shape[0], size)) for size in sizes]
        history = []
        for t in range(length):
            _, states = cell(x[:, t], list(states))
            history.append(list(states))  # [h_t] or [h_t, c_t]
        prediction = readout(history[-1][0])[:, 0]
        loss = ops.sum((prediction - y) ** 2)
    gradients = tape.gradient(loss, history)
    norms = {}
    for index, label in enumerate(["h", "c"][: len(sizes)]):
        per_step = np.stack([np.linalg.norm(ops.convert_to_numpy(g[index]), axis=-1) for g in gradients], axis=1)
        norms[label] = per_step[:, ::-1]  # (batch, k): column k is step T - k
    return norms


def ratios(norms: dict) -> dict:
    """Median over expressions of ||dL_i/ds_{T-k}|| / ||dL_i/ds_T||, for k = 0..T-1."""
    return {label: np.median(n / n[:, :1], axis=0) for label, n in norms.items()}


def ratio_rows(at_init: dict, trained: dict, ks=(1, 10, 14)) -> list[dict]:
    rows = []
    for name in at_init:
        for label in at_init[name]:
            row = {"cell": name, "state": label}
            row.update({f"k={k} init": at_init[name][label][k] for k in ks})
            row.update({f"k={k} trained": trained[name][label][k] for k in ks})
            rows.append(row)
    return rows


def plot_ratios(at_init: dict, trained: dict, train_epochs: int):
    figure, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    panels = (("at initialisation", at_init), (f"after {train_epochs} epochs", trained))
    for axis, (title, measured) in zip(axes, panels):
        for name, values in measured.items():
            length = len(values["h"])
            (line,) = axis.plot(range(length), values["h"], marker="o", markersize=3, label=f"{name}: h")
            if "c" in values:
                axis.plot(range(length), values["c"], linestyle="--", color=line.get_color(), label=f"{name}: c")
        axis.axvspan(length - 5 - 0.5, length - 0.5, color="grey", alpha=0.12)
        axis.set(yscale="log", xlabel="k (steps back from the last token)", title=title)
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("median ||dL/ds_{T-k}|| / ||dL/ds_T||")
    axes[1].legend(fontsize=8)
    figure.suptitle("gradient reaching earlier states (shaded: where a 3-number expression's tokens are)", fontsize=10)
    figure.tight_layout()
    return figure


def lstm_step_jacobians(lstm_cell, x_one) -> dict:
    """Partial and total ``dc_t/dc_{t-1}`` of a ``ReferenceLSTMCell`` against ``diag(f_t)``."""
    sequence = lstm_cell.gate_sequence(x_one)  # every f, i, C_tilde, o, C, h: (1, T, units)
    length, units = x_one.shape[1], sequence["h"].shape[-1]
    zeros = ops.zeros((1, units))

    def state_at(key, t):  # t = 0: the zero initial state
        return zeros if t == 0 else sequence[key][:, t - 1]

    partial_gap, partial_offdiag, total_offdiag = [], [], []
    for t in range(2, length + 1):
        h_previous, c_previous = state_at("h", t - 1), state_at("C", t - 1)
        f_t = ops.convert_to_numpy(sequence["f"][0, t - 1])
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(c_previous)
            partial = lstm_cell.step_with_gates(x_one[:, t - 1], [h_previous, c_previous])["C"]  # h_{t-1} held fixed
            h_through_c = sequence["o"][:, t - 2] * ops.tanh(c_previous)  # h_{t-1} = o_{t-1} tanh(c_{t-1})
            total = lstm_cell.step_with_gates(x_one[:, t - 1], [h_through_c, c_previous])["C"]
        jacobian = ops.convert_to_numpy(tape.batch_jacobian(partial, c_previous))[0]  # (units, units)
        jacobian_total = ops.convert_to_numpy(tape.batch_jacobian(total, c_previous))[0]
        del tape
        off = ~np.eye(units, dtype=bool)
        partial_gap.append(np.max(np.abs(np.diag(jacobian) - f_t)))
        partial_offdiag.append(np.max(np.abs(jacobian[off])))
        total_offdiag.append(np.linalg.norm(jacobian_total - np.diag(f_t)) / np.linalg.norm(f_t))
    return {
        "partial_gap": partial_gap,
        "partial_offdiag": partial_offdiag,
        "total_offdiag": total_offdiag,
        "sequence": sequence,
    }


def cell_path_and_total(cell, x, k: int) -> tuple[float, float]:
    """(||prod f||, ||d c_T / d c_{T-k}||) for one expression, running the cell on from step T - k (k >= 1)."""
    seq = cell.gate_sequence(x)
    start = x.shape[1] - k
    c = seq["C"][:, start - 1]
    with tf.GradientTape() as tape:
        tape.watch(c)
        states = [seq["o"][:, start - 1] * ops.tanh(c), c]  # h_{T-k} = o_{T-k} tanh(c_{T-k}) moves with c_{T-k}
        for t in range(start, x.shape[1]):
            _, states = cell(x[:, t], states)
    total = np.linalg.norm(ops.convert_to_numpy(tape.batch_jacobian(states[1], c))[0])
    carousel = np.linalg.norm(np.prod(ops.convert_to_numpy(seq["f"][0, start:]), axis=0))
    return carousel, total


def plot_cell_path(paths: dict, ks, probe_text: str):
    figure, axis = plt.subplots(figsize=(6, 3.8))
    for label, values in paths.items():
        (line,) = axis.plot(ks, [v[0] for v in values], linestyle="--", label=f"{label}: ||prod f|| (cell path)")
        axis.plot(
            ks, [v[1] for v in values], color=line.get_color(), label=f"{label}: ||d c_T / d c_(T-k)|| (all paths)"
        )
    axis.set(yscale="log", xlabel="k")
    axis.set_title(f"LSTM memory gradient on {probe_text!r}", fontsize=10)
    axis.legend(fontsize=7)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    return figure


def states_where(measured: dict, k: int = 14, above: bool = False) -> list[str]:
    """The states whose median gradient ratio at ``k`` is below 1 (with ``above``: above 1)."""
    return [
        f"{name} ({state})"
        for name in measured
        for state in measured[name]
        if (measured[name][state][k] > 1 if above else measured[name][state][k] < 1)
    ]
