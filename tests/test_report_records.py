"""The report's typed records: where a record lies and how it ran are attributes, never ``_`` keys, and a
study record's kind picks the section that renders it."""

import json

import pytest
from test_runner_and_report import _model, _record
from test_studies_report import _speed_record, _timeseries_record

from predcalc.record import RunRecord
from predcalc.report import findings, studies
from predcalc.report.records import StoredRecord


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


def test_the_kind_not_the_keys_picks_the_section(monkeypatch, tmp_path):
    rendered = []
    for name in studies.SECTIONS:
        monkeypatch.setitem(studies.SECTIONS, name, lambda record, folder, name=name: rendered.append(name) or [name])
    both = StoredRecord.of({**_speed_record(), "notebook": "40_calculator", "calculator": {}}, folder=tmp_path)
    records = [
        StoredRecord.of(_speed_record(), folder=tmp_path),
        StoredRecord.of(_timeseries_record(), folder=tmp_path),
        both,
        StoredRecord.of(_record("02_rnn", {"rnn": _model("RNN", 0.8)}), folder=tmp_path),  # not a study
    ]
    lines = studies.studies_markdown(records, {r.notebook: "runs/" + r.notebook for r in records})
    assert rendered == ["speed", "timeseries", "calculator"]
    assert lines == ["## Studies", "", "speed", "timeseries", "calculator"]


def test_the_real_sections_render_from_typed_records(tmp_path):
    records = [
        StoredRecord.of(_speed_record(), folder=tmp_path, profile="full"),
        StoredRecord.of(_timeseries_record(), folder=tmp_path, profile="quick"),
    ]
    text = "\n".join(studies.studies_markdown(records, {r.notebook: r.notebook for r in records}))
    assert "### Parallel scan vs step loop vs Keras (21_parallel_scan, full)" in text
    assert "### One-step-ahead forecasting of real series (22_timeseries, quick)" in text
    assert "(tensorflow backend)" in text
