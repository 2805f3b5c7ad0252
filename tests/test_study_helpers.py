"""The notebook helpers of the studies: 23 (explain), 20 (vanishing gradients), 00 (seed 004 check)."""

import keras
import numpy as np
import pytest

from predcalc.notebooks import explain_steps
from predcalc.studies import backprop, backprop_check, explain, vanishing

needs_tf = pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.GradientTape")


def test_gate_statistics_and_retention():
    z = np.full((2, 15, 3), 0.1)
    z[:, 5:, 0] = 0.5  # unit 0 forgets half per pad
    gates = {"GRU": {"update z": z}, "LSTM": {"forget f": np.ones((2, 15, 3)), "input i": z}}
    stats = explain.gate_statistics(gates, 15)
    assert stats["GRU update z"]["numbers"] == pytest.approx(0.1)
    assert stats["GRU update z"]["padding"] == pytest.approx((0.5 + 0.1 + 0.1) / 3)
    retention = explain.state_retention(gates, 15)
    assert retention["LSTM"] == {"median_unit": 1.0, "max_unit": 1.0}
    assert retention["GRU"]["max_unit"] == pytest.approx(0.9**10)
    assert retention["GRU"]["median_unit"] == pytest.approx(0.9**10)


def test_figures_of_23_keep_legends_off_the_data_and_drop_an_always_zero_share():
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    labels = ["LSTM", "GRU", "BiLSTM + attention", "minGRU"]
    shares = pd.DataFrame(
        {"share_numbers": [0.8, 0.8, 0.8, 0.85], "share_operators": [0.2, 0.2, 0.2, 0.15], "share_padding": 0.0},
        index=labels,
    )
    example = np.linspace(-1, 1, 4 * 7).reshape(4, 7)
    figure = explain_steps.plot_integrated_gradients(example, labels, "3 - -2 + 4", shares, 200)
    figure.canvas.draw()
    bars = figure.axes[1]
    assert [t.get_text() for t in bars.get_legend().get_texts()] == ["numbers", "operators"]
    assert "padding: 0 for every model" in bars.get_xlabel()
    below = bars.get_legend().get_window_extent().y1 <= bars.get_window_extent().y0
    assert below, "the legend sits under the bars, not on them"

    gates = {
        "LSTM": {"forget f": np.full((2, 15, 3), 0.7), "input i": np.full((2, 15, 3), 0.5)},
        "GRU": {"update z": np.full((2, 15, 3), 0.5)},
        "minGRU": {"update z": np.full((2, 15, 3), 0.2)},
    }
    figure = explain_steps.plot_gates(gates, np.full((15, 3), 0.5), "3 - -2 + 4")
    figure.canvas.draw()
    width, height = figure.get_size_inches()
    assert width / height < 2  # two panels a row: legible at page width (was 4 in a row, 5.6 : 1)
    panels = [axis for axis in figure.axes if axis.get_title()]
    assert len(panels) == 4 and panels[-1].get_title().startswith("LSTM forget gate")
    for axis in panels[:3]:
        assert axis.get_legend().get_window_extent().y1 <= axis.get_window_extent().y0


def test_attention_statistics():
    alpha = np.full((4, 15), 1 / 15)
    alpha[:, 2] += 0.1
    alpha[:, 3] -= 0.1
    s = explain.attention_statistics(alpha)
    assert s["mass_expression"] == pytest.approx(5 / 15)
    assert s["top_position"] == 2 and s["uniform_weight"] == pytest.approx(1 / 15)


@needs_tf
def test_ig_statistics_of_a_linear_model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((15,)), keras.layers.Dense(1)])
    rng = np.random.default_rng(0)
    x = np.full((16, 15), 0.5, dtype="float32")
    x[:, [0, 2, 4]] = rng.normal(size=(16, 3))
    x[:, [1, 3]] = rng.integers(0, 2, size=(16, 2))
    baseline = np.full(15, 0.5, dtype="float32")
    a = explain.integrated_gradients(model, x, baseline, steps=4)
    s = explain.ig_statistics(model, x, baseline, a, plus=1.0)
    assert s["completeness_max_gap"] < 1e-4 and s["share_padding"] == 0.0
    assert s["share_numbers"] + s["share_operators"] == pytest.approx(1.0)
    assert abs(s["corr_a"]) == pytest.approx(1.0, abs=1e-6)  # a's attribution is w_0 (a - 0.5)


@needs_tf
def test_trained_gates_read_the_reference_cells():
    keras.utils.set_random_seed(0)
    inputs = keras.Input((15,))
    seq = keras.layers.Reshape((15, 1))(inputs)
    lstm = keras.Model(inputs, keras.layers.Dense(1)(keras.layers.LSTM(4, name="lstm")(seq)))
    gru = keras.Model(inputs, keras.layers.Dense(1)(keras.layers.GRU(4, reset_after=False, name="gru")(seq)))
    x = np.random.default_rng(0).normal(size=(3, 15)).astype("float32")
    gates, parity = explain.trained_gates({"lstm": lstm, "gru": gru}, x)
    assert set(gates) == {"LSTM", "GRU"} and gates["LSTM"]["forget f"].shape == (3, 15, 4)
    assert max(parity.values()) < 1e-5


@needs_tf
def test_vanishing_gradient_ratios_and_lstm_jacobian():
    keras.utils.set_random_seed(0)
    cells = vanishing.make_cells(4)
    assert list(cells) == ["RNN (tanh)", "RNN (PReLU)", "LSTM", "GRU"]
    network = vanishing.build(cells["LSTM"], 6)
    x = np.random.default_rng(0).normal(size=(5, 6)).astype("float32")
    norms = vanishing.state_gradients(network, x, np.zeros(5, "float32"))
    assert set(norms) == {"h", "c"} and norms["h"].shape == (5, 6)
    r = vanishing.ratios(norms)
    assert r["h"][0] == 1.0 and r["c"][0] == 1.0
    rows = vanishing.ratio_rows({"LSTM": r}, {"LSTM": r}, ks=(1, 5))
    assert [row["state"] for row in rows] == ["h", "c"] and rows[0]["k=5 init"] == rows[0]["k=5 trained"]
    cell = network.get_layer("recurrence").cell
    j = vanishing.lstm_step_jacobians(cell, keras.ops.convert_to_tensor(x[:1, :, None]))
    assert max(j["partial_gap"]) < 1e-6 and max(j["partial_offdiag"]) < 1e-6 and min(j["total_offdiag"]) > 0
    carousel, total = vanishing.cell_path_and_total(cell, keras.ops.convert_to_tensor(x[:1, :, None]), 3)
    assert carousel > 0 and total > 0


def test_states_where_the_gradient_shrinks_or_grows():
    measured = {"LSTM": {"h": {14: 0.5}, "c": {14: 2.0}}, "GRU": {"h": {14: 1.0}}}
    assert vanishing.states_where(measured) == ["LSTM (h)"]
    assert vanishing.states_where(measured, above=True) == ["LSTM (c)"]


def test_checker_records_verdicts(capsys):
    check = backprop_check.Checker(0.005)
    check("a", [0.123], [0.12])
    check("b", [0.2], [0.1])
    check("c", [0.2], [0.18], allowed=0.03)
    assert [c["verdict"] for c in check.checks] == ["agrees", "DIFFERS by 0.1000", "agrees"]
    assert len(check.checks) == 3 and "article" in capsys.readouterr().out
    assert backprop_check.show([-0.0, 1.0], 2) == "[0.00 1.00]"


@needs_tf
def test_keras_network_matches_numpy_bptt():
    parameters, inputs, targets, _ = backprop.reference004_example()
    _, _, totals = backprop.per_loss_gradients(parameters, inputs, targets)
    network = backprop_check.keras_network(parameters)
    x = inputs[None].astype("float64")
    _, keras_totals, _ = backprop_check.keras_gradients(network, x, targets)
    for name in backprop_check.WEIGHT_NAMES:
        np.testing.assert_allclose(keras.ops.convert_to_numpy(keras_totals[name]), totals[name], atol=1e-12)
    fwd, per_loss, _ = backprop.per_loss_gradients(parameters, inputs, targets)
    deltas = backprop_check.autodiff_deltas(parameters, x, targets)
    np.testing.assert_allclose(deltas[4], per_loss[4].deltas, atol=1e-12)
    table = backprop_check.outputs_before_after(fwd, fwd, targets)
    assert len(table) == 9 and (table.before == table.after).all()
