import json

from predcalc.report import findings
from predcalc.report.records import StoredRecord
from predcalc.report.studies import is_study, speed_table, timeseries_table


def _speed_record():
    speedups = [
        {
            "length": length,
            "family": family,
            "phase": phase,
            "parallel_vs_keras": 2.0 * length / 64,
            "scan_vs_keras": length / 64,
            "step_vs_keras": 1.5,
            "parallel_vs_step": 1.0,
        }
        for length in (64, 256)
        for family in ("min_gru", "min_lstm")
        for phase in ("train_step", "inference")
    ]
    return {
        "notebook": "21_parallel_scan",
        "kind": "study",
        "models": {},
        "backend": "tensorflow",
        "parameters": {"batch": 8, "units": 32, "repeats": 3, "lengths": [64, 256]},
        "speed": {"records": [], "speedups": speedups, "paper_speedup_t4_gpu": {"min_gru": {"512": 175}}},
    }


def _timeseries_record():
    summary = [
        {
            "series": "co2",
            "model": "Keras GRU",
            "MAE": 0.5,
            "MAE_std": 0.1,
            "RMSE": 0.6,
            "RMSE_std": 0.1,
            "epochs": 30.0,
            "params": 3297,
        },
        {
            "series": "co2",
            "model": "Mamba",
            "MAE": 2.0,
            "MAE_std": 0.0,
            "RMSE": 2.5,
            "RMSE_std": 0.0,
            "epochs": 12.0,
            "params": 1000,
        },
    ]
    return {
        "notebook": "22_timeseries",
        "kind": "study",
        "models": {},
        "backend": "tensorflow",
        "parameters": {"k": 12, "seeds": [0, 1], "epochs": 200, "patience": 20},
        "timeseries": {"naive": {"co2": {"mae": 1.0, "rmse": 1.2}}, "runs": [], "summary": summary},
    }


def test_study_tables_hold_the_stored_numbers():
    speed = speed_table(_speed_record()["speed"])
    assert list(speed["length"]) == [64, 256]
    assert speed.loc[1, "train minGRU / GRU parallel"] == "8.00x"  # 2 * 256 / 64
    assert speed.loc[1, "train minGRU / GRU scan"] == "4.00x"
    series = timeseries_table(_timeseries_record()["timeseries"])
    assert list(series["model"]) == ["Keras GRU", "baseline: naive (last value)", "Mamba"]  # by MAE
    assert list(series["MAE / naive"]) == ["0.50", "1.00", "2.00"]
    assert is_study(StoredRecord.of(_speed_record()))
    assert not is_study(StoredRecord.of({"notebook": "01_fnn", "models": {}, "data": {}}))


def test_report_has_a_studies_section_and_a_command_per_run(tmp_path):
    runs = tmp_path / "runs"
    for record in (_speed_record(), _timeseries_record()):
        (runs / record["notebook"]).mkdir(parents=True)
        (runs / record["notebook"] / "metrics.json").write_text(json.dumps(record))
    (runs / "22_timeseries" / "run.json").write_text(json.dumps({"profile": "full"}))
    findings.build(runs=runs, reports=tmp_path / "reports", readme=tmp_path / "README.md")
    text = (tmp_path / "reports" / "findings.md").read_text()
    assert "## Side studies" in text
    assert (
        "Best training-step speed-up over Keras here: **8.00x** (min_gru, parallel path of a layer returning its "
        "last state, length 256); **4.00x** (min_gru, parallel scan of the whole sequence, length 256)"
    ) in text
    assert (
        "- co2: best network Keras GRU (MAE 0.500, 0.50x the naive forecast); the strongest baseline is naive "
        "(last value) (MAE 1.000); 1 of 2 networks beat every baseline"
    ) in text
    assert "`predcalc run --profile full --only 22_timeseries`" in text
    assert "- `21_parallel_scan`" not in text  # studies have no protocol counts


def test_extended_section_gives_accuracy_per_family_and_model(tmp_path):
    def run(seed, accuracy):
        return {
            "seed": seed,
            "epochs": 9,
            "metrics": {
                f: {"accuracy": accuracy, "mre": 0.01 * (seed + 1), "mae": 1.0}
                for f in ("digits_1", "digits_6", "terms_8")
            },
        }

    record = {
        "notebook": "31_extended_suite",
        "kind": "study",
        "models": {},
        "backend": "tensorflow",
        "parameters": {"test_size": 200, "suite_seed": 0},
        "extended": {
            "families": ["digits_1", "digits_6", "terms_8"],
            "models": {
                "scan_typed": {"label": "Scan", "params": 46, "runs": [run(0, 1.0), run(1, 0.5)]},
                "lstm_typed": {"label": "LSTM", "params": 9, "runs": [run(0, 0.1)]},
            },
            "coefficients": {
                "scan_typed": [
                    {"position": 1, "operator": "+", "coefficient": 1.0, "nonlinearity": 0.0},
                    {"position": 2, "operator": "+", "coefficient": 1.002, "nonlinearity": 0.0},
                    {"position": 2, "operator": "-", "coefficient": -1.001, "nonlinearity": 1e-4},
                ],
                "lstm_typed": [{"position": 1, "operator": "+", "coefficient": 0.3, "nonlinearity": 3.0}],
            },
        },
    }
    (tmp_path / "runs" / "31_extended_suite").mkdir(parents=True)
    (tmp_path / "runs" / "31_extended_suite" / "metrics.json").write_text(json.dumps(record))
    findings.build(runs=tmp_path / "runs", reports=tmp_path / "reports", readme=tmp_path / "README.md")
    text = (tmp_path / "reports" / "findings.md").read_text()
    assert "| family | Scan (2 seeds) |" in text and "| digits_6 | 75.0 % [50.0-100.0] |" in text
    assert "- Scan (46 parameters): mean relative error 0.015 with 1-digit numbers, 0.015 with 6-digit numbers." in text
    assert "### The extended suite, additive part (31_extended_suite" in text
    assert (
        "- Scan, first seed: prediction = bias + sum of coefficient x number; at position 2 the coefficient "
        "after `+` is off by +2.0e-03, after `-` by -1.0e-03, so answers stop being exact once the numbers "
        "reach about 250."
    ) in text
    assert "- LSTM, first seed: not affine in the numbers (nonlinearity 3 at 1000)" in text
    assert "- Control:" not in text  # no control in this record
    assert "operators overwrite the sign state" not in text  # no solved scan in this record
    record["extended"]["models"]["scan_typed_solved"] = {"label": "Solved", "params": 46, "runs": [run(0, 1.0)]}
    record["extended"]["coefficients"]["scan_typed_solved"] = [
        {"position": 1, "operator": "+", "coefficient": 1.0, "nonlinearity": 0.0},
        {"position": 2, "operator": "+", "coefficient": 1.0 + 1e-7, "nonlinearity": 0.0},
        {"position": 2, "operator": "-", "coefficient": -1.0, "nonlinearity": 0.0},
    ]
    record["extended"]["control"] = {
        "epochs": 1,
        "seeds": 2,
        "accuracy": {"digits_1": 1.0, "digits_6": 0.9},
        "worst_seed": {"digits_1": 1.0, "digits_6": 0.8},
    }
    (tmp_path / "runs" / "31_extended_suite" / "metrics.json").write_text(json.dumps(record))
    findings.build(runs=tmp_path / "runs", reports=tmp_path / "reports", readme=tmp_path / "README.md")
    text = (tmp_path / "reports" / "findings.md").read_text()
    assert "operators overwrite the sign state" in text
    assert (
        "- Solved, first seed: prediction = bias + sum of coefficient x number; at position 2 the coefficient after "
        "`+` is off by +1.0e-07, after `-` by +0.0e+00, so answers stop being exact once the numbers reach about "
        "5,000,000: errors at float32's own precision"
    ) in text
    assert (
        "- Control: Solved fitted for 1 epoch(s) only, then finished the same way (2 seeds): mean exact "
        "accuracy 95.0 % over the 2 families; worst seed on its worst family (digits_6) 80.0 %."
    ) in text


def test_extended_section_of_a_model_trained_on_the_suite(tmp_path):
    runs = [
        {"seed": 0, "epochs": 3, "metrics": {f: {"accuracy": 0.25, "mre": 0.1, "mae": 2.0} for f in ("iid", "depth_3")}}
    ]
    record = {
        "notebook": "32_four_operators",
        "kind": "study",
        "models": {},
        "backend": "tensorflow",
        "parameters": {"test_size": 200, "suite_seed": 0, "train_size": 20000},
        "extended": {
            "families": ["iid", "depth_3"],
            "scope": {"trained_on": "extended suite", "operators": "+-*/", "parentheses": True},
            "models": {"char_lstm_tokens": {"label": "Char LSTM", "params": 75358, "runs": runs}},
        },
    }
    folder = tmp_path / "runs" / "32_four_operators"
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps(record))
    (folder / "error_kinds.png").write_bytes(b"png")
    findings.build(runs=tmp_path / "runs", reports=tmp_path / "reports", readme=tmp_path / "README.md")
    text = (tmp_path / "reports" / "findings.md").read_text()
    assert "### The extended suite, all four operators and parentheses (32_four_operators" in text
    assert "(20,000 expressions: 1-2 digit numbers, 2-4 terms, `+-*/` with precedence" in text
    assert "| depth_3 | 25.0 % |" in text
    assert "error_kinds.png)" in text and "accuracy_by_difficulty.png)" not in text  # only figures that exist
