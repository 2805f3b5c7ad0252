"""The typed metrics.json record: one writer, one reader, the kind stored, clear errors."""

import json
import os

import pytest

from predcalc.record import RecordError, RunRecord

RUN = {
    "seed": 0,
    "epochs": 3,
    "train_seconds": 1.5,
    "best_val_loss": 0.1,
    "metrics": {"in": {"mae": 0.1, "accuracy": 1.0}},
}
MODELS = {
    "notebook": "01_fnn",
    "kind": "models",
    "parameters": {"epochs": 3},
    "data": {"seed": 0},
    "models": {
        "fnn2": {
            "label": "FNN2",
            "params": 10,
            "runs": [RUN],
            "export": None,
            "family": "FNN",
            "reference_row": None,
            "tokenizer": "numeric",
        }
    },
}


def test_a_models_record_round_trips_and_keeps_unknown_run_keys():
    record = RunRecord.from_json(MODELS)
    assert record.kind == "models" and record.models["fnn2"].runs[0].extra == {"best_val_loss": 0.1}
    again = RunRecord.from_json(record.to_json())
    assert again.to_json() == record.to_json()
    assert again.to_json()["models"]["fnn2"]["runs"][0]["best_val_loss"] == 0.1


def test_an_old_file_without_a_kind_is_named_from_its_entry_once():
    study = RunRecord.from_json({"notebook": "21_parallel_scan", "models": {}, "speed": {"speedups": []}})
    assert study.kind == "study" and study.to_json()["kind"] == "study" and "speed" in study.to_json()
    assert RunRecord.from_json({k: v for k, v in MODELS.items() if k != "kind"}).kind == "models"


@pytest.mark.parametrize(
    "data, message",
    [
        ({"models": {}}, "needs its notebook's name"),
        ({"notebook": "x", "kind": "other", "models": {}}, "kind must be one of"),
        ({"notebook": "x", "kind": "study", "models": {}}, "a study record needs one of the entries"),
        ({"notebook": "x", "models": {"m": {"label": "M", "runs": []}}}, "x/m: a model needs 'params'"),
        (
            {"notebook": "x", "models": {"m": {"label": "M", "params": 1, "runs": [{"seed": 0}]}}},
            "needs a seed and a metrics",
        ),
    ],
)
def test_a_bad_record_says_what_is_missing(data, message):
    with pytest.raises(RecordError, match=message):
        RunRecord.from_json(data)


def test_a_rerun_with_the_same_numbers_writes_nothing(tmp_path):
    path = RunRecord.from_json(MODELS).write(tmp_path)
    stored = json.loads(path.read_text())
    assert stored["schema"] == 1 and stored["created"]
    os.utime(path, (1, 1))
    RunRecord.from_json({**MODELS, "created": "later"}).write(tmp_path)  # only the time differs
    assert path.stat().st_mtime == 1 and json.loads(path.read_text())["created"] == stored["created"]
    changed = json.loads(json.dumps(MODELS))
    changed["models"]["fnn2"]["runs"][0]["metrics"]["in"]["mae"] = 0.2
    RunRecord.from_json(changed).write(tmp_path)
    assert json.loads(path.read_text())["models"]["fnn2"]["runs"][0]["metrics"]["in"]["mae"] == 0.2


def test_every_stored_run_reads_as_a_typed_record():
    from predcalc.paths import ROOT

    paths = sorted((ROOT / "reports" / "runs").glob("*/metrics.json"))
    assert paths
    kinds = {path.parent.name: RunRecord.load(path).kind for path in paths}
    assert kinds["01_fnn"] == "models" and kinds["21_parallel_scan"] == "study"
