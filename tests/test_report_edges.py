"""The findings' edges-of-the-box section, from the runs' stored edges.json."""

import json

import numpy as np

from predcalc.report.edges import edges_frame, edges_lines
from predcalc.report.records import StoredRecord


def _score(accuracy, mae):
    return {"accuracy": accuracy, "mae": mae, "n": 300}


def test_one_row_per_scored_model_with_a_dash_where_the_length_does_not_fit(tmp_path):
    (tmp_path / "edges.json").write_text(
        json.dumps(
            {
                "local": {"digits_2": _score(1.0, 0.0456), "terms_60": _score(0.997, 0.245)},
                "fixed": {"digits_2": _score(0.003, 83.1), "terms_60": None},
            }
        )
    )
    local = {"label": "Local", "params": 1, "runs": []}
    records = [
        StoredRecord.of({"notebook": "06_transformer", "models": {"local": local}}, folder=tmp_path),
        StoredRecord.of({"notebook": "01_fnn", "models": {}}, folder=tmp_path / "none"),
        StoredRecord.of({"notebook": "sweep", "models": {}}),
    ]  # a record without a folder (a notebook's own) is skipped
    frame = edges_frame(records)
    assert frame.to_dict("records") == [
        {"model": "Local", "notebook": "06_transformer", "digits_2": "100.0 % (0.0456)", "terms_60": "99.7 % (0.245)"},
        {"model": "fixed", "notebook": "06_transformer", "digits_2": "0.3 % (83.1)", "terms_60": "-"},
    ]
    lines = edges_lines(records)
    assert lines[0] == "## Edges of the box" and "`digits_4` 3 numbers from -9,999..9,999" in lines[2]
    assert "with spaces), 300 expressions each," in lines[2]


def test_no_section_without_edge_scores(tmp_path):
    assert edges_lines([StoredRecord.of({"notebook": "01_fnn", "models": {}}, folder=tmp_path)]) == []


def _seed_record():
    def score(accuracy, mae=0.1, litert=None):
        return {
            "accuracy": accuracy,
            "mae": mae,
            "n": 300,
            "tokens": 27,
            "runtime": "onnx",
            "litert": {"accuracy": accuracy if litert is None else litert, "mae": mae},
            "runtimes_max_abs_diff": 2e-5,
        }

    nested = {"not_in_input_language": "the typed tokenizer encodes only + and - between integers"}
    same = {
        "epochs": [84, 84],
        "best_val_loss": [1e-3, 1e-3],
        "val_loss_relative_difference": 1e-4,
        "sets": {
            "in": {"accuracy": [1.0, 1.0], "mae": [0.02, 0.02], "mae_difference": 1e-6, "mae_relative_difference": 1e-4}
        },
    }
    return {
        "suite": {
            "kind": "heldout",
            "seed": 31,
            "count": 300,
            "sets": {
                "terms_80": "80 numbers from -5..5",
                "digits_exactly_4": "3 numbers of 4 digits",
                "nesting_1_3": "parentheses",
            },
        },
        "models": {
            "scan_typed": {
                0: {"terms_80": score(1.0), "digits_exactly_4": score(0.0, 44.0), "nesting_1_3": nested},
                1: {"terms_80": score(0.99), "digits_exactly_4": score(0.02, 40.0, litert=0.01), "nesting_1_3": nested},
                2: {"terms_80": score(1.0), "digits_exactly_4": score(0.01, 42.0), "nesting_1_3": nested},
            }
        },
        "about": {
            "scan_typed": {
                "label": "Syntax-gated scan",
                "kind": "trained",
                "input_length": 159,
                "unspaced_forms": {"applies": False, "why": "the typed tokeniser gives the same array"},
                "reproduction": {0: same, 1: {**same, "epochs": [95, 99]}},
            }
        },
    }


def test_the_seed_table_gives_mean_min_max_and_a_bootstrap_interval_per_set():
    from predcalc.report.edges import seed_table

    table = seed_table(_seed_record()).set_index("set")
    row = table.loc["terms_80"]
    assert row["seeds"] == 3 and row["min"] == 0.99 and row["max"] == 1.0
    assert abs(row["accuracy"] - (1.0 + 0.99 + 1.0) / 3) < 1e-12
    assert 0.99 - 1e-12 <= row["boot_low"] <= row["accuracy"] <= row["boot_high"] <= 1.0 + 1e-12
    assert row["per_seed"] == "100.0 / 99.0 / 100.0" and abs(table.loc["digits_exactly_4", "mae"] - 42.0) < 1e-12
    assert "encodes only + and -" in table.loc["nesting_1_3", "note"] and np.isnan(table.loc["nesting_1_3", "accuracy"])


def test_the_seed_facts_name_what_holds_what_fails_and_what_is_not_scored():
    from predcalc.report.edges import seed_facts

    facts = seed_facts(_seed_record())
    assert "every seed at least 99 % exact on terms_80; every seed below 50 % on digits_exactly_4" in facts[0]
    assert "3 seeds, heldout suite seed 31" in facts[0]
    assert any("nesting_1_3 (parentheses) is not scored" in f for f in facts)
    assert any("unspaced forms do not apply" in f for f in facts)
    assert any("exact accuracy by at most 1.00 points" in f for f in facts)
    assert any("on 2 of 2 seeds and the same number of epochs on 1" in f and "not bit-for-bit" in f for f in facts)
