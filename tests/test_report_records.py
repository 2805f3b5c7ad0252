"""The report's typed records: where a record lies and how it ran are attributes, never ``_`` keys, and a
study record's kind names its study."""

import json

import pytest
from test_runner_and_report import _model, _record

from predcalc.record import RunRecord
from predcalc.report import findings
from predcalc.report.records import StoredRecord


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


def _write(runs, record, run_info=None):
    folder = runs / record["notebook"]
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps(record))
    if run_info is not None:
        (folder / "run.json").write_text(json.dumps(run_info))
    return folder


def test_a_loaded_record_carries_its_folder_profile_and_overrides_as_attributes(tmp_path):
    record = _record("02_rnn", {"rnn": _model("RNN", 0.8)})
    folder = _write(tmp_path, record, {"profile": "full with epochs=3", "overrides": {"epochs": 3}})
    _write(tmp_path, _speed_record())  # no run.json: the notebook's defaults
    rnn, speed = findings.load_runs(tmp_path)
    assert (rnn.folder, rnn.profile, rnn.overrides, rnn.sweep) == (folder, "full with epochs=3", {"epochs": 3}, None)
    assert (speed.profile, speed.overrides) == ("notebook defaults", {})
    for loaded, path in ((rnn, folder / "metrics.json"), (speed, tmp_path / "21_parallel_scan" / "metrics.json")):
        stored = loaded.to_json()
        assert not [key for key in stored if key.startswith("_")]  # the record's JSON form gains no key
        assert stored == RunRecord.load(path).to_json()
    assert rnn.models["rnn"].runs[0].metrics["in"]["mae"] == pytest.approx(0.8)


def test_a_record_a_notebook_passes_as_json_is_typed_and_says_this_run():
    record = StoredRecord.of(_record("02_rnn", {"rnn": _model("RNN", 0.8)}))
    assert record.profile == "this run" and record.folder is None and record.kind == "models"
    assert StoredRecord.of(record) is record
    moved = StoredRecord.of(record, profile="quick")
    assert moved.profile == "quick" and record.profile == "this run"  # a copy, the original unchanged


def test_a_study_records_kind_names_its_study():
    assert StoredRecord.of(_speed_record()).study == "speed"
    assert StoredRecord.of(_timeseries_record()).study == "timeseries"
    both = {**_speed_record(), "notebook": "40_calculator", "calculator": {"summary": {}}}
    assert StoredRecord.of(both).study == "calculator"  # the calculator's record also stores its speed
    assert StoredRecord.of(_record("02_rnn", {"rnn": _model("RNN", 0.8)})).study is None
