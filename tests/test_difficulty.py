"""Accuracy by difficulty (predcalc.studies.difficulty), the suite as a training protocol, the character models."""

import json
import types

import keras
import numpy as np
import pytest

from predcalc.data.extended import extended_suite, suite_protocol
from predcalc.models.char_tokens import REVERSED8
from predcalc.studies import difficulty
from predcalc.training import fit
from predcalc.training.experiment import run_seeds


@pytest.fixture(scope="module")
def suite():
    return extended_suite(seed=0, train_size=120, test_size=6)


def test_error_kinds_split_every_answer_once():
    values = np.array([12.0, 12.0, 12.0, 12.0, -5.0])
    predictions = np.array([12.0, 13.0, 22.0, np.nan, 5.0])
    kinds = difficulty.error_kinds(values, predictions)
    assert kinds == {"correct": 0.2, "units digit wrong": 0.2, "higher digits or sign wrong": 0.4, "unparseable": 0.2}
    assert sum(kinds.values()) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="differ in shape"):
        difficulty.error_kinds(values, predictions[:3])


def test_suite_protocol_trains_on_the_pool_and_tests_on_every_family(suite):
    protocol = suite_protocol(suite, seed=0)
    assert protocol.train is suite["train"].split and protocol.validation is suite["validation"].split
    assert set(protocol.test_sets()) == set(suite) - {"train", "validation"}
    assert "depth_3" in protocol.test_sets() and protocol.counts()["train"] == 120
    with pytest.raises(ValueError, match="no \\['train'\\] split"):
        suite_protocol({k: v for k, v in suite.items() if k != "train"}, seed=0)


def test_the_figure_names_models_and_ticks_every_level(tmp_path):
    families = ["iid", "digits_1", "digits_2", "depth_0", "depth_1", "depth_2"]

    def runs(accuracy):
        return [
            {"seed": s, "metrics": {f: {"accuracy": accuracy + s / 10, "mae": 1.0, "mre": 0.1} for f in families}}
            for s in (0, 1)
        ]

    record = {
        "extended": {
            "families": families,
            "models": {
                "char_lstm_tokens": {"label": "char LSTM 80", "runs": runs(0.5)},
                "scan_typed_solved": {"label": "scan, solved readout", "runs": runs(0.2)},
            },
        }
    }
    shown = {"char_lstm_tokens": "char LSTM 80", "scan_typed_solved": "scan, solved readout (partly built)"}
    trained = types.SimpleNamespace(  # the same table from training results, as the notebooks make it
        models={
            name: types.SimpleNamespace(spec=types.SimpleNamespace(shown_label=shown[name]), runs=model["runs"])
            for name, model in record["extended"]["models"].items()
        }
    )
    table = difficulty.family_table(trained, families)
    assert list(dict.fromkeys(table.name)) == ["char_lstm_tokens", "scan_typed_solved"]
    assert set(table.model) == {"char LSTM 80", "scan, solved readout (partly built)"}  # a finish is marked
    row = table[(table.name == "char_lstm_tokens") & (table.family == "depth_1")].iloc[0]
    assert (row.accuracy, row["min"], row["max"]) == pytest.approx((0.55, 0.5, 0.6))
    axes = [difficulty.Axis("digits_", "digits", (0.5, 1.5)), difficulty.Axis("depth_", "depth", (-0.5, 1.5))]
    figure = difficulty.plot_by_difficulty(table, axes, seeds=2, path=tmp_path / "plot.png", relative_error=True)
    assert (tmp_path / "plot.png").stat().st_size > 0
    for axis in figure.axes:  # the levels are counts: a tick at each, none between
        assert all(float(t).is_integer() for t in axis.get_xticks())
    assert list(figure.axes[1].get_xticks()) == [0, 1, 2]
    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert labels == [
        "char_lstm_tokens: char LSTM 80",
        "scan_typed_solved: scan, solved readout (partly built)",
        difficulty.TRAINED,
    ]


@pytest.mark.parametrize("name", ["char_transformer_tokens", "char_lstm_tokens"])
def test_character_models_read_every_family_and_stay_small(name, suite, tmp_path):
    spec, model, tokenizer = fit.build(name)
    assert model.count_params() < 100_000
    longest = max((e for entry in suite.values() for e in entry.split.expressions), key=len)
    logits = model.predict(tokenizer.encode_batch([longest, "(1 + 2) * 3"]), verbose=0)
    assert logits.shape == (2, REVERSED8.slots, REVERSED8.vocabulary_size)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    np.testing.assert_allclose(
        loaded.predict(tokenizer.encode_batch(["(1 + 2) * 3"]), verbose=0), logits[1:], rtol=1e-5, atol=1e-5
    )
    assert spec.encode_targets(np.array([-1234567.0]), tokenizer).shape == (1, REVERSED8.slots)


@pytest.mark.slow
def test_family_table_plot_and_study_record(suite, tmp_path):
    protocol = suite_protocol(suite, seed=0)
    results = run_seeds(["char_lstm_tokens"], protocol, seeds=[0, 1], epochs=1, batch_size=64, progress=False)
    families = list(protocol.test_sets())
    table = difficulty.family_table(results, families)
    assert len(table) == len(families) and set(table.model) == {results.models["char_lstm_tokens"].spec.label}
    row = table[table.family == "depth_2"].iloc[0]
    runs = results.models["char_lstm_tokens"].runs
    assert row.accuracy == pytest.approx(np.mean([r["metrics"]["depth_2"]["accuracy"] for r in runs]))
    assert row["min"] <= row.accuracy <= row["max"]
    grid = difficulty.accuracy_grid(table, families)
    assert list(grid.index) == families and grid.iloc[0, 0].endswith(" %")
    axes = [difficulty.Axis("digits_", "digits", (0.5, 2.5)), difficulty.Axis("depth_", "depth", (-0.5, 1.5))]
    figure = difficulty.plot_by_difficulty(table, axes, seeds=2, path=tmp_path / "plot.png", relative_error=False)
    assert (tmp_path / "plot.png").stat().st_size > 0 and len(figure.axes) == 2
    record = difficulty.study_record(
        results, "32_four_operators", {"epochs": 1}, families, data={}, scope={"trained_on": "extended suite"}
    )
    json.dumps(record)  # what the notebook writes must be JSON
    stored = record["extended"]["models"]["char_lstm_tokens"]
    assert [r["seed"] for r in stored["runs"]] == [0, 1]
    assert set(stored["runs"][0]["metrics"]) == set(families) and record["kind"] == "study"
    assert stored["export"] is None  # nothing exported in this run


def test_export_table_names_the_families_it_compares():
    from predcalc.report.findings import export_table

    record = {
        "notebook": "32_four_operators",
        "models": {
            "m": {
                "label": "M",
                "params": 1,
                "runs": [],
                "export": {
                    "float32": {
                        "bytes": 2048,
                        "tf_select": False,
                        "max_abs_diff": 0.0,
                        "accuracy_change": {"iid": 0.0, "depth_3": -0.01},
                    }
                },
            }
        },
    }
    table = export_table([record], test_sets=("iid", "depth_3"))
    assert list(table.columns) == [
        "model",
        "format",
        "KB",
        "TF Select",
        "max abs diff",
        "acc change iid",
        "acc change depth_3",
        "verdict",
        "why",
    ]
    assert table.iloc[0]["acc change depth_3"] == -0.01 and table.iloc[0]["KB"] == 2.0
