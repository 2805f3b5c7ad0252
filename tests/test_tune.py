"""predcalc tune: config checks, a local search, a resume after a stop, a chief and two workers."""

import json

import pandas as pd
import pytest

from predcalc import cli
from predcalc.training import tune, tune_config, tune_results

SMOKE = (
    "model: fnn2\nobjective: val_mae\ntrials: 3\nepochs: 2\nseeds: [0]\n"
    "space:\n  units: {choices: [8, 16, 32]}\n  learning_rate: {min: 1.0e-3, max: 1.0e-2, log: true}\n"
)


def _config(tmp_path, text=SMOKE, name="smoke"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text, message",
    [
        ("model: no_such_model\ntrials: 1\nepochs: 1\nspace: {units: [1]}\n", "unknown model 'no_such_model'"),
        ("model: fnn2\ntrials: 1\nepochs: 1\nspace: {}\n", "'space' is empty"),
        ("model: fnn2\ntrials: 1\nepochs: 1\n", "'space' is empty"),
        ("model: fnn2\nobjective: val_r2\ntrials: 1\nepochs: 1\nspace: {units: [1]}\n", "unknown objective 'val_r2'"),
        ("model: fnn2\ntrials: 1\nepochs: 1\nspace: {width: [1]}\n", "space.width is neither an argument of fnn2"),
        (
            "model: fnn2\ntrials: 1\nepochs: 1\nspace: {peak_learning_rate: {min: 1, max: 2}}\n",
            "peak_learning_rate sets the reference schedule",
        ),
        ("model: fnn2\ntrials: 1\nepochs: 1\nspace: {learning_rate: {min: 0, max: 1, log: true}}\n", "needs min > 0"),
        ("model: fnn2\ntrials: 1\nepochs: 1\nspace: {units: {min: 8, max: 4}}\n", "min < max"),
        ("model: fnn2\ntuner: hyperband\ntrials: 3\nepochs: 1\nspace: {units: [1]}\n", "not used by hyperband"),
        ("model: fnn2\ntrials: 0\nepochs: 1\nspace: {units: [1]}\n", "'trials' is a positive integer"),
        ("model: fnn2\ntrials: 1\nepochs: 1\nseeds: 3\nspace: {units: [1]}\n", "write seeds: \\[3\\]"),
        ("model: fnn2\ntrials: 1\nepochs: 1\nspace: {units: [1]}\nfinal: {seed: [0]}\n", "'final' is a mapping"),
        ("model: fnn2\ntrials: 1\nepochs: 1\nspace: {units: [1]}\nworkers: 2\n", "unknown tune config keys"),
    ],
)
def test_bad_configs_are_one_line_errors_with_exit_2(tmp_path, capsys, text, message):
    path = _config(tmp_path, text, "bad")
    with pytest.raises(tune_config.TuneConfigError, match=message):
        tune.load_config(path)
    assert cli.main(["tune", str(path), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("predcalc tune: error: ") and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_space_becomes_keras_tuner_hyperparameters(tmp_path):
    config = tune.load_config(_config(tmp_path, SMOKE + "  batch_size: {min: 16, max: 64, step: 16}\n"))
    hp = tune.hyperparameters(config["space"])
    kinds = {p.name: type(p).__name__ for p in hp.space}
    assert kinds == {"units": "Choice", "learning_rate": "Float", "batch_size": "Int"}
    assert hp.space[1].sampling == "log" and hp.space[2].step == 16
    training, model_kwargs = tune.split_hyperparameters(
        {"units": 8, "learning_rate": 0.002, "batch_size": 16, "tuner/epochs": 3, "peak_learning_rate": 1e-4}
    )
    assert training == {"learning_rate": 0.002, "batch_size": 16}
    assert model_kwargs == {"units": 8, "peak_learning_rate": 1e-4}  # run_seeds pops the peak off model_kwargs


def test_the_shipped_configs_load():
    smoke = tune.load_config(tune.paths.ROOT / "tuning" / "fnn2_smoke.yaml")
    assert (smoke["model"], smoke["trials"]) == ("fnn2", 3)
    reference_space = tune.load_config(tune.paths.ROOT / "tuning" / "transformer5_reference_space.yaml")
    assert reference_space["trials"] == 50 and reference_space["objective"] == "val_loss"
    assert reference_space["space"]["num_heads"] == {"choices": [2, 4, 8]}
    assert reference_space["space"]["peak_learning_rate"] == {"min": 1e-7, "max": 1e-2, "log": True, "step": None}
    assert reference_space["final"]["seeds"] == [0, 1, 2, 3, 4] and reference_space["final"]["epochs"] == 200


def _finished(folder):
    table = pd.read_csv(folder / "trials.csv")
    return table[table["status"] == "COMPLETED"]


@pytest.mark.slow
def test_a_local_search_writes_its_results_and_a_rerun_repeats_no_trial(tmp_path, capsys):
    path = _config(tmp_path, SMOKE + "final: {seeds: [0, 1], epochs: 2}\n")
    assert cli.main(["tune", str(path), "--output", str(tmp_path / "out")]) == 0
    folder = tmp_path / "out" / "smoke"
    out = capsys.readouterr().out
    assert "3 trials finished (0 failed); best: trial" in out
    finished = _finished(folder)
    assert len(finished) == 3 and set(finished["tuner"]) == {"tuner0"}
    assert finished["units"].isin([8, 16, 32]).all() and finished["learning_rate"].between(1e-3, 1e-2).all()
    summary = json.loads((folder / "tune.json").read_text())
    best = json.loads((folder / "best_hyperparameters.json").read_text())
    assert best == summary["best"]["hyperparameters"] and set(best) == {"units", "learning_rate"}
    assert summary["best"]["val_mae"] == pytest.approx(finished["val_mae"].min())
    assert (folder / "trials.png").stat().st_size > 1000

    metrics = json.loads((folder / "metrics.json").read_text())
    model = metrics["models"]["fnn2"]
    assert [run["seed"] for run in model["runs"]] == [0, 1]
    assert {"in", "out", "long"} <= set(model["runs"][0]["metrics"])
    assert metrics["tune"]["hyperparameters"] == best and "tuned" in model["label"]
    from predcalc.report import findings

    table = findings.model_table(findings.load_runs(tmp_path / "out"))  # what `predcalc report --runs` reads
    row = table[table["model"] == model["label"]].iloc[0]
    assert row["source"].startswith("tune/smoke") and row["MAE in"] > 0

    assert cli.main(["tune", str(path), "--output", str(tmp_path / "out"), "--probe"]) == 0
    probe = json.loads((folder / "probe_metrics.json").read_text())
    assert probe["tune"]["probe"] is True and [r["seed"] for r in probe["models"]["fnn2"]["runs"]] == [0]
    assert probe["parameters"]["epochs"] == 2 and "probe" in probe["models"]["fnn2"]["label"]
    assert len(json.loads((folder / "tune.json").read_text())["sessions"]) == 1  # a probe runs no trial

    trial_files = {p: p.read_text() for p in (folder / "search").glob("trial_*/trial.json")}
    assert cli.main(["tune", str(path), "--output", str(tmp_path / "out"), "--search-only"]) == 0
    assert {p: p.read_text() for p in (folder / "search").glob("trial_*/trial.json")} == trial_files
    assert len(_finished(folder)) == 3
    stored = (folder / "metrics.json").read_text()
    assert cli.main(["tune", str(path), "--output", str(tmp_path / "out")]) == 0
    assert (folder / "metrics.json").read_text() == stored  # the same best trial is not trained again


@pytest.mark.slow
def test_a_stopped_search_resumes_without_repeating_finished_trials(tmp_path, monkeypatch):
    path = _config(tmp_path)
    scored = []
    original = tune.Search.score

    def stop_at_the_second_trial(self, values):
        if len(scored) == 1:
            raise KeyboardInterrupt  # as Ctrl-C in the middle of a trial
        scored.append(values)
        return original(self, values)

    monkeypatch.setattr(tune.Search, "score", stop_at_the_second_trial)
    with pytest.raises(KeyboardInterrupt):
        tune.run(path, root=tmp_path / "out", search_only=True, progress=False)
    folder = tmp_path / "out" / "smoke"
    first = (folder / "search" / "trial_0" / "trial.json").read_text()
    assert json.loads(first)["status"] == "COMPLETED"
    stopped = tune.summarise(tune.Search(tune.load_config(path), tmp_path / "out"), record_session=False)
    assert (stopped["trials_finished"], stopped["trials_unfinished"], stopped["trials_failed"]) == (1, 1, 0)

    monkeypatch.setattr(tune.Search, "score", lambda self, values: (scored.append(values), original(self, values))[1])
    summary = tune.run(path, root=tmp_path / "out", search_only=True, progress=False)
    assert summary["trials_finished"] == 3 and len(scored) == 3  # 1 before the stop, 2 after it
    assert (folder / "search" / "trial_0" / "trial.json").read_text() == first
    assert len(summary["sessions"]) == 2


@pytest.mark.slow
def test_trials_run_on_a_chief_and_two_worker_processes(tmp_path):
    path = _config(tmp_path, SMOKE.replace("trials: 3", "trials: 4"))
    summary = tune.run(path, root=tmp_path / "out", workers=2, search_only=True, progress=False)
    assert summary["trials_finished"] == 4
    finished = _finished(tmp_path / "out" / "smoke")
    assert set(finished["tuner"]) == {"worker0", "worker1"}  # both worker processes trained trials
    logs = tune.paths.LOGS / "tune" / "smoke"
    assert {p.name for p in logs.glob("*.log")} >= {"chief.log", "worker0.log", "worker1.log"}


def test_effects_rank_each_hyperparameter_against_the_objective(tmp_path):
    config = tune.load_config(_config(tmp_path))
    table = pd.DataFrame(
        {
            "status": ["COMPLETED"] * 5 + ["FAILED"],
            "units": [8, 16, 32, 8, 16, 32],
            "learning_rate": [1e-3, 2e-3, 3e-3, 4e-3, 5e-3, 6e-3],
            "val_mae": [5.0, 4.0, 3.0, 2.0, 1.0, None],
        }
    )
    effects = tune.hyperparameter_effects(table, config)
    assert effects["learning_rate"] == -1.0  # a higher rate, a lower error, every time
    assert -1.0 < effects["units"] < 0.0
    assert tune.hyperparameter_effects(table.head(3), config) == {"units": None, "learning_rate": None}


def _searched(tmp_path):
    """A finished search's tune.json and a probe's record, as `predcalc tune` writes them."""
    config = tune.load_config(_config(tmp_path))
    summary = {
        "config": config,
        "trials_finished": 3,
        "trials_failed": 1,
        "trial_seconds": 600.0,
        "sessions": [{"started": "a", "seconds": 420.0}, {"started": "b", "seconds": 300.0}],
        "effects": {"units": 0.2, "learning_rate": -0.9},
        "best": {"trial": "2", "val_mae": 0.5, "hyperparameters": {"units": 16, "learning_rate": 0.004}},
    }
    (tmp_path / "tune.json").write_text(json.dumps(summary))
    runs = [{"seed": 0, "epochs": 2, "metrics": {"in": {"mae": 0.25}}}]
    (tmp_path / "probe_metrics.json").write_text(
        json.dumps({"parameters": {"epochs": 2}, "models": {"fnn2": {"runs": runs}}})
    )


def _final(folder, maes):
    runs = [
        {"seed": seed, "epochs": 100 + seed, "train_seconds": 60.0, "metrics": {"in": {"mae": mae}}}
        for seed, mae in enumerate(maes)
    ]
    (folder / "metrics.json").write_text(json.dumps({"models": {"fnn2": {"runs": runs}}}))


@pytest.mark.parametrize(
    "maes, verdict",
    [
        ([0.01, 0.02, 0.015, 0.012, 0.018], "better"),
        ([0.05, 0.06, 0.04, 0.07, 0.05], "worse"),
        ([0.01, 0.06, 0.04, 0.02, 0.05], "not resolved"),
    ],
)
def test_the_final_stage_is_judged_by_its_seeds_not_its_mean(tmp_path, maes, verdict):
    """ "Better" than a published mean only when every seed is (the exact sign test), with the
    per-seed min-max."""
    _searched(tmp_path)
    _final(tmp_path, maes)
    final = tune.final_comparison(tmp_path, 0.03)
    assert final["test"]["verdict"] == verdict
    assert final["spread"] == (pytest.approx(sum(maes) / 5), min(maes), max(maes))
    assert final["train_minutes"] == 5.0


def test_no_final_stage_no_comparison(tmp_path):
    assert tune.final_comparison(tmp_path, 0.03) is None


def test_near_repeats_are_found_by_choices_and_a_relative_rate(tmp_path):
    config = tune.load_config(_config(tmp_path))  # units: choices, learning_rate: a log range
    (tmp_path / "trials.csv").write_text(
        "trial,status,units,learning_rate,val_mae\n"
        "0,COMPLETED,16,0.0010,2.0\n"
        "1,COMPLETED,16,0.00105,5.0\n"  # 5 % apart: a near repeat of 0
        "2,COMPLETED,16,0.0020,1.0\n"  # the same units, twice the rate: not
        "3,COMPLETED,32,0.0010,3.0\n"  # another width: not
        "4,FAILED,16,0.0010,\n"  # not finished: not
    )
    assert tune_results.repeated_trials(tmp_path, config) == [(["0", "1"], [2.0, 5.0])]
    assert tune_results.repeated_trials(tmp_path, config, tolerance=0.01) == []
