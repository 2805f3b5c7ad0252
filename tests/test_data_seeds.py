"""The data-seed study: resumable per-run files, their summary, and what the Appendix says."""

import json

import pytest

from predcalc.studies import data_seeds as D


def _write(out, model, data_seed, seed, accuracy):
    path = D.run_path(model, data_seed, seed, out)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"model": model, "data_seed": data_seed, "seed": seed, "accuracy": accuracy}
    path.write_text(json.dumps(record))


EXACT = {"in": 1.0, "out": 1.0, "long": 1.0}


def test_summary_counts_seeds_exact_on_every_set(tmp_path):
    _write(tmp_path, "scan_typed", 1, 0, EXACT)
    _write(tmp_path, "scan_typed", 1, 1, {"in": 1.0, "out": 0.25, "long": 1.0})
    _write(tmp_path, "scan_typed", 2, 0, EXACT)
    about = D.summary(tmp_path)["scan_typed"]
    assert about["1"]["seeds"] == [0, 1] and about["1"]["exact_seeds"] == [0]
    assert about["1"]["low"]["out"] == 0.25 and about["1"]["high"]["out"] == 1.0
    assert about["2"]["exact_seeds"] == [0]


def test_finished_runs_are_not_run_again(tmp_path, monkeypatch):
    _write(tmp_path, "nau_nmu", 1, 0, EXACT)
    ran = []
    monkeypatch.setattr(
        D,
        "train_one",
        lambda m, d, s: ran.append((m, d, s)) or {"model": m, "data_seed": d, "seed": s, "accuracy": EXACT},
    )
    assert D.run_study(("nau_nmu",), data_seeds=(1,), seeds=(0, 1), out=tmp_path) == 1
    assert ran == [("nau_nmu", 1, 1)] and D.run_path("nau_nmu", 1, 1, tmp_path).is_file()


def test_unknown_model_is_refused_in_one_line(tmp_path):
    with pytest.raises(ValueError, match="model must be one of"):
        D.run_study(("transformer4_local_bounded",), out=tmp_path)
