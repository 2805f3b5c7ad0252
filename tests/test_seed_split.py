"""Seed-split sweeps in the findings, and the every-seed table of the stabilised layers."""

import json

import pytest
from test_runner_and_report import _model, _record

from predcalc.report import findings
from predcalc.report.seed_split import seed_split_records


def _seed_run(root, seed, mae_in, parameters=None, error=None):
    folder = root / "slow" / f"06_transformer__s{seed}"
    folder.mkdir(parents=True)
    model = _model("slow transformer", mae_in, seeds=1, reference_row="transformer5")
    model["runs"][0]["seed"] = seed
    (folder / "run.json").write_text(
        json.dumps(
            {
                "error": error,
                "parameters": {
                    "models": ["slow"],
                    "epochs": 200,
                    "patience": 200,
                    "seeds": [seed],
                    "output_dir": str(folder),
                    **(parameters or {}),
                },
            }
        )
    )
    (folder / "metrics.json").write_text(json.dumps(_record("06_transformer", {"slow": model})))


def test_a_seed_split_sweep_is_one_record_with_every_finished_seed(tmp_path):
    _seed_run(tmp_path, 2, 0.3)
    _seed_run(tmp_path, 0, 0.1)
    _seed_run(tmp_path, 1, 9.0, error="KeyboardInterrupt")  # interrupted: not counted
    [record] = seed_split_records(tmp_path, names=("slow", "absent"))
    runs = record["models"]["slow"]["runs"]
    assert [r["seed"] for r in runs] == [0, 2] and runs[1]["metrics"]["in"]["mae"] == pytest.approx(0.3)
    assert record["parameters"] == {"models": ["slow"], "epochs": 200, "patience": 200, "seeds": [0, 2]}
    assert record["_profile"] == "200 epochs, no early stopping, one seed per run of sweep slow"
    table = findings.model_table([record])
    row = table[table.source.str.startswith("06_transformer (200 epochs")].iloc[0]
    assert row["MAE in"] == pytest.approx(0.2) and row["source"].endswith("sweep slow, 2 seeds)")
    assert "transformer5" in list(table.model)  # its published row beside it


def test_a_seed_split_sweep_can_list_its_model_under_the_registered_name(tmp_path):
    _seed_run(tmp_path, 0, 0.1)
    [record] = seed_split_records(tmp_path, names={"slow": {"slow": "transformer4_local_bounded"}})
    assert list(record["models"]) == ["transformer4_local_bounded"]
    model = record["models"]["transformer4_local_bounded"]
    assert model["label"].startswith("transformer4, local tanh-bounded") and [r["seed"] for r in model["runs"]] == [0]


def test_a_seed_split_sweep_must_differ_only_in_its_seeds(tmp_path):
    _seed_run(tmp_path, 0, 0.1)
    _seed_run(tmp_path, 1, 0.1, parameters={"epochs": 100})
    with pytest.raises(ValueError, match="differ in more than the seed"):
        seed_split_records(tmp_path, names=("slow",))


def test_the_findings_list_a_seed_split_sweep_with_its_command(tmp_path):
    runs, reports = tmp_path / "runs", tmp_path / "reports"
    (runs / "01_fnn").mkdir(parents=True)
    (runs / "01_fnn" / "metrics.json").write_text(
        json.dumps(_record("01_fnn", {"fnn_baseline": _model("baseline", 0.4)}))
    )
    _seed_run(reports / "sweeps", 0, 0.1)
    (reports / "sweeps" / "transformer5_reference").mkdir()
    (reports / "sweeps" / "slow").rename(reports / "sweeps" / "transformer5_reference")
    findings.build(runs=runs, reports=reports, readme=None)
    text = (reports / "findings.md").read_text()
    assert (
        "| slow transformer | 06_transformer (200 epochs, no early stopping, one seed per run of sweep "
        "transformer5_reference, 1 seed) |" in text
    )
    assert (
        "- sweep `transformer5_reference` in `reports/sweeps/transformer5_reference/` (`predcalc sweep "
        "sweeps/transformer5_reference.yaml`"
    ) in text
    assert (
        "- slow transformer: 1 seed so far, trained by `predcalc sweep sweeps/transformer5_reference.yaml` (one seed "
        "per run; it resumes at the next seed). MAE in / out / long per seed: seed 0: 0.1 / 1 / 2."
    ) in text


def test_every_seed_of_a_stabilised_layer_beside_the_first_one():
    first = _model("mLSTM", 0.5, seeds=3)
    stable = _model("mLSTM, stable", 0.1, seeds=3)
    for run, accuracy in zip(first["runs"], (0.35, 0.07, 0.9)):
        run["metrics"]["in"]["accuracy"] = accuracy
    table = findings.stability_table([_record("09_xlstm", {"mlstm": first, "mlstm_stable": stable})])
    rows = table.set_index("model")
    assert rows.loc["mLSTM", "exact in per seed (%)"] == "35.0 / 7.0 / 90.0"
    assert rows.loc["mLSTM", "worst exact in"] == "7.0 %"
    assert rows.loc["mLSTM, stable", "worst MAE out"] == pytest.approx(1.0)  # out = 10 x mae_in in _model
    assert rows.loc["mLSTM, stable", "seeds"] == "0 1 2"
    assert findings.stability_table([_record("09_xlstm", {"mlstm": first})]).empty  # nothing stabilised yet


def test_a_notebook_run_on_every_seed_supersedes_the_sweep_row(tmp_path):
    from predcalc.report.seed_split import not_superseded

    _seed_run(tmp_path, 0, 0.1)
    _seed_run(tmp_path, 1, 0.2)
    [split] = seed_split_records(tmp_path, names=("slow",))

    def notebook(seeds, epochs=200, kept=None):
        model = _model("slow transformer", 0.1, seeds=len(seeds))
        for run, seed in zip(model["runs"], seeds):
            run["seed"] = seed
        if kept:
            model["kept_from"] = {"parameters": kept}
        return {**_record("06_transformer", {"slow": model}), "parameters": {"epochs": epochs, "patience": 200}}

    assert not_superseded([split], [notebook([0, 1, 2])]) == []
    assert not_superseded([split], [notebook([0])]) == [split]  # seed 1 only in the sweep
    assert not_superseded([split], [notebook([0, 1], epochs=100)]) == [split]  # trained differently
    assert not_superseded([split], [notebook([0, 1], epochs=100, kept={"epochs": 200, "patience": 200})]) == []
