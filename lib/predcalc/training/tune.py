"""Hyperparameter search: ``predcalc tune CONFIG`` on keras-tuner, over any registered model.

A config (YAML or JSON)::

    name: fnn2_smoke              # folder under the output root (default: the file's stem)
    model: fnn2                   # a registered model
    tuner: bayesian               # bayesian (default), random or hyperband
    objective: val_loss           # val_loss, val_mae, val_mre (lowest wins) or val_accuracy (highest)
    trials: 3                     # bayesian, random: how many trials; hyperband sets its own
    epochs: 5                     # each trial's epochs (hyperband: the most a trial gets)
    seeds: [0]                    # each trial trains once per seed; the objective is their mean
    space:                        # builder arguments, or learning_rate, batch_size, peak_learning_rate
      units: {choices: [64, 128, 345]}
      learning_rate: {min: 1.0e-4, max: 1.0e-2, log: true}
    final: {seeds: [0, 1, 2], epochs: 200}   # optional: the best trial retrained and scored

Optional keys: ``data_seed`` (0), ``search_seed`` (the tuner's random state, 0), ``batch_size``
(32), ``patience`` (20), ``learning_rate`` (1e-3), ``factor`` (hyperband, 3), ``initial_points``
(bayesian). Each trial is :func:`predcalc.training.fit.train` on the reference protocol's training
split, scored on its validation split; the test sets are read only by the final stage.

Outputs in ``ROOT/NAME/``: ``search/`` (keras-tuner's project: the oracle and every trial, so a
stopped search resumes where it stopped), ``trials.csv``, ``best_hyperparameters.json``,
``tune.json`` (the config, timing and best trial), ``trials.png`` (the objective against each
hyperparameter) and, after the final stage, ``metrics.json`` in the shape of a notebook's (what
``predcalc report --runs ROOT`` reads).

Distributed: keras-tuner's own chief/worker mode. The chief holds the oracle and serves trials
over gRPC; each worker asks for a trial, trains it and reports the score. ``run(...,
workers=N)`` starts a chief and N workers on this machine; on several machines, start the same
command with the environment variables ``KERASTUNER_TUNER_ID`` (``chief``, or a worker's
name), ``KERASTUNER_ORACLE_IP`` and ``KERASTUNER_ORACLE_PORT`` (see docs/sweeps-and-tuning.md).
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from predcalc import paths
from predcalc.paths import relative, write_if_changed
from predcalc.quiet import quiet_tensorflow
from predcalc.training.tune_config import (
    OBJECTIVES,
    PROJECT,
    RUNNER,
    TUNE_BUILD,
    hyperparameters,
    load_config,
    split_hyperparameters,
)
from predcalc.training.tune_results import (  # final_comparison, repeated_trials: read by notebook 24
    best_trial,
    final_comparison,  # noqa: F401
    finished_trials,
    hyperparameter_effects,
    plot_trials,
    repeated_trials,  # noqa: F401
    short_value,
    trial_table,
)


class Search:
    """One config's search: the protocol, the scoring of a trial, and the keras-tuner tuner."""

    bar = None  # the progress bar of a search in this process

    def __init__(self, config: dict, root=TUNE_BUILD):
        self.config = config
        self.folder = Path(root) / config["name"]
        self._protocol = None
        self.started = datetime.datetime.now(datetime.timezone.utc)
        self._clock = time.perf_counter()

    def session(self) -> dict:
        """This call's start (UTC) and seconds so far."""
        return {
            "started": self.started.isoformat(timespec="seconds"),
            "seconds": round(time.perf_counter() - self._clock, 1),
        }

    @property
    def protocol(self):
        if self._protocol is None:
            from predcalc.data import reference_protocol

            self._protocol = reference_protocol(self.config["data_seed"])
        return self._protocol

    def score(self, values: dict) -> dict:
        """Train the trial's hyperparameters once per seed; the validation metrics' means, the
        epochs trained and the seconds taken."""
        import numpy as np  # arrays only when a trial is scored

        from predcalc.training.fit import evaluate, train

        config = self.config
        training, model_kwargs = split_hyperparameters(values)
        epochs = int(values.get("tuner/epochs", config["epochs"]))
        rows = []
        for seed in config["seeds"]:
            start = time.perf_counter()
            trained = train(
                config["model"],
                self.protocol,
                seed=seed,
                epochs=epochs,
                patience=config["patience"],
                batch_size=int(training.get("batch_size", config["batch_size"])),
                learning_rate=float(training.get("learning_rate", config["learning_rate"])),
                model_kwargs=model_kwargs,
            )
            scores = evaluate(trained, {"validation": self.protocol.validation})[0]["validation"]
            loss = min(trained.history["val_loss"])
            rows.append(
                {
                    "val_loss": loss if math.isfinite(loss) else 1e30,
                    "val_mae": scores["mae"],
                    "val_mre": scores["mre"],
                    "val_accuracy": scores["accuracy"],
                    "epochs": trained.epochs,
                    "seconds": time.perf_counter() - start,
                    "params": trained.params,
                }
            )
        means = {key: float(np.mean([row[key] for row in rows])) for key in rows[0]}
        return {key: (value if math.isfinite(value) else 1e30) for key, value in means.items()}

    def tuner(self):
        """The keras-tuner tuner over ``search/`` (reloaded when it exists: a stopped search resumes)."""
        import keras_tuner  # only when a search runs: checking a config needs no tuner

        config, search = self.config, self

        class ProtocolTuner(keras_tuner.Tuner):
            """A tuner whose trial is predcalc's own training run (no hypermodel to build)."""

            def run_trial(self, trial, *args, **kwargs):
                # which tuner ran it (the chief's folder holds it where the worker shares that folder)
                write_if_changed(
                    Path(self.get_trial_dir(trial.trial_id)) / RUNNER, json.dumps({"tuner": self.tuner_id})
                )
                return search.score(trial.hyperparameters.values)

            def on_trial_end(self, trial):
                super().on_trial_end(trial)
                if role() is None:  # a worker's oracle is the chief's, over gRPC; the chief summarises
                    summarise(search, self.oracle)  # the results so far, on disk after every trial
                if search.bar is not None:
                    search.bar.update()

        objective = keras_tuner.Objective(config["objective"], OBJECTIVES[config["objective"]])
        common = dict(
            objective=objective,
            hyperparameters=hyperparameters(config["space"]),
            seed=config["search_seed"],
            tune_new_entries=False,
            allow_new_entries=False,
        )
        if config["tuner"] == "hyperband":
            oracle = keras_tuner.oracles.HyperbandOracle(
                max_epochs=config["epochs"], factor=config.get("factor", 3), **common
            )
        elif config["tuner"] == "random":
            oracle = keras_tuner.oracles.RandomSearchOracle(max_trials=config["trials"], **common)
        else:
            oracle = keras_tuner.oracles.BayesianOptimizationOracle(
                max_trials=config["trials"], num_initial_points=config.get("initial_points"), **common
            )
        self.folder.mkdir(parents=True, exist_ok=True)
        with contextlib.redirect_stdout(io.StringIO()):  # "Reloading Tuner from ..."
            tuner = ProtocolTuner(oracle=oracle, directory=str(self.folder), project_name=PROJECT)
        # keras-tuner reloads the oracle only with the tuner of the same id (tuner0 here, chief or a worker's
        # name in a distributed search): read it whichever process wrote it, unless the chief serves it
        if (
            (role() is None or "chief" in role())
            and Path(oracle._get_oracle_fname()).is_file()
            and not Path(tuner._get_tuner_fname()).is_file()
        ):
            oracle.reload()
        return tuner

    def search(self, progress: bool = True) -> None:
        """Run every trial not yet finished (in this process, or as keras-tuner's chief or worker
        when its environment variables say so)."""
        from tqdm.auto import tqdm  # the progress bar only while a search runs

        tuner = self.tuner()
        total = self.config.get("trials")
        if role() is None:
            done = len(finished_trials(tuner.oracle))
            self.bar = tqdm(
                total=total, initial=done, desc=f"tune {self.config['name']}", unit="trial", disable=not progress
            )
        try:
            tuner.search(verbose=0)
        finally:
            if self.bar is not None:
                self.bar.close()
                self.bar = None


def role() -> str | None:
    """This process's keras-tuner role (``chief`` or a worker's id) in a distributed search, else None."""
    return os.environ.get("KERASTUNER_TUNER_ID") if os.environ.get("KERASTUNER_ORACLE_IP") else None


def summarise(search: Search, oracle=None, record_session: bool = True) -> dict:
    """Write ``trials.csv``, ``trials.png``, ``best_hyperparameters.json`` and ``tune.json`` from the
    oracle (default: the tuner's project, reloaded); returns the summary (``tune.json``'s content).
    ``record_session`` adds this call's wall time to the sessions (not for a call that ran no trial)."""
    config, folder = search.config, search.folder
    oracle = oracle if oracle is not None else search.tuner().oracle
    table = trial_table(oracle, config)
    write_if_changed(folder / "trials.csv", table.to_csv(index=False))
    best = best_trial(oracle)
    summary_path = folder / "tune.json"
    previous = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    finished = table[table["status"] == "COMPLETED"] if len(table) else table
    session = search.session()
    sessions = [s for s in previous.get("sessions", []) if s["started"] != session["started"]] + (
        [session] if record_session else []
    )
    summary = {
        "name": config["name"],
        "model": config["model"],
        "config": config,
        "trials_finished": int(len(finished)),
        "trials_failed": int(table["status"].isin(["FAILED", "INVALID"]).sum()) if len(table) else 0,
        # a trial stopped midway (RUNNING) runs again when the search resumes
        "trials_unfinished": int(table["status"].isin(["RUNNING", "IDLE"]).sum()) if len(table) else 0,
        # the trials' own training time summed (over every worker of a parallel search), and each
        # `predcalc tune` call's wall time
        "trial_seconds": round(float(finished["seconds"].fillna(0).sum()), 1) if len(finished) else 0.0,
        "sessions": sessions,
        "effects": hyperparameter_effects(table, config),
        "best": None
        if best is None
        else {
            "trial": best.trial_id,
            config["objective"]: best.score,
            "hyperparameters": _plain(best.hyperparameters.values, config),
        },
    }
    write_if_changed(summary_path, json.dumps(summary, indent=1) + "\n")
    if best is not None:
        write_if_changed(
            folder / "best_hyperparameters.json", json.dumps(summary["best"]["hyperparameters"], indent=1) + "\n"
        )
        plot_trials(table, config, folder / "trials.png")
    return summary


def _plain(values: dict, config: dict) -> dict:
    return {name: values[name] for name in config["space"] if name in values}


def final_results(search: Search, progress: bool = True, probe: bool = False):
    """Train the best hyperparameters on the final seeds through :func:`run_seeds` (checkpointed per
    seed) and write ``metrics.json``; returns its path. A ``probe`` trains them as a trial did (its
    first seed, its epochs) into ``probe_metrics.json``, which ``predcalc report`` does not read."""
    from predcalc.training.experiment import run_seeds  # training only for the final stage

    config = search.config
    trial_like = {"seeds": config["seeds"][:1], "epochs": config["epochs"], "patience": config["patience"]}
    final = trial_like if probe else config["final"] or {**trial_like, "seeds": config["seeds"]}
    summary = json.loads((search.folder / "tune.json").read_text())
    if summary["best"] is None:
        raise RuntimeError(f"tune {config['name']}: no finished trial to train")
    best = summary["best"]["hyperparameters"]
    path = search.folder / ("probe_metrics.json" if probe else "metrics.json")
    if path.is_file():  # written before for the same best trial and final stage: nothing to train
        stored = json.loads(path.read_text())
        if (
            stored.get("tune", {}).get("hyperparameters") == best
            and {k: stored["parameters"].get(k) for k in final} == final
        ):
            return path
    training, model_kwargs = split_hyperparameters(best)
    checkpoints = search.folder / ".checkpoints"
    results = run_seeds(
        [config["model"]],
        search.protocol,
        seeds=final["seeds"],
        epochs=final["epochs"],
        patience=final["patience"],
        batch_size=int(training.get("batch_size", config["batch_size"])),
        learning_rate=float(training.get("learning_rate", config["learning_rate"])),
        model_kwargs={config["model"]: model_kwargs},
        progress=progress,
        checkpoints=checkpoints,
    )
    write_metrics(search.folder, results, config, summary, final, best, probe=probe)
    shutil.rmtree(checkpoints, ignore_errors=True)
    return path


def write_metrics(folder, results, config: dict, summary: dict, final: dict, best: dict, probe: bool = False) -> Path:
    """``metrics.json`` of a search, through the typed record (:class:`predcalc.record.RunRecord`,
    kind ``models``): notebook ``tune/NAME``, created, backend, keras, parameters (the final stage's
    seeds, epochs, patience, batch size, learning rate, data seed and the best hyperparameters),
    data, models (the one model, labelled as tuned, with every seed's run) and the ``tune`` entry
    (tuner, objective, trials finished, trial epochs, the best trial, its objective and
    hyperparameters, ``probe``). A probe goes to ``probe_metrics.json``, which the report does not read."""
    record = results.to_json(
        f"tune/{config['name']}",
        {
            "models": [config["model"]],
            "seeds": final["seeds"],
            "epochs": final["epochs"],
            "patience": final["patience"],
            "batch_size": best.get("batch_size", config["batch_size"]),
            "learning_rate": best.get("learning_rate", config["learning_rate"]),
            "data_seed": config["data_seed"],
            "hyperparameters": best,
        },
    )
    model = record["models"][config["model"]]
    model["label"] = f"{model['label']}, tuned ({', '.join(f'{k} {short_value(v)}' for k, v in best.items())})"
    record["tune"] = {
        "tuner": config["tuner"],
        "objective": config["objective"],
        "trials": summary["trials_finished"],
        "trial_epochs": config["epochs"],
        "best_trial": summary["best"]["trial"],
        "best_objective": summary["best"][config["objective"]],
        "hyperparameters": best,
        "probe": probe,
    }
    if probe:
        model["label"] += f", probe ({len(final['seeds'])} seed, {final['epochs']} epochs)"
    from predcalc.record import RunRecord  # the record only when the final stage writes it

    checked = RunRecord.from_json({**record, "kind": "models"})  # "tune" is one of the record's entries
    if not probe:
        return checked.write(folder)
    path = Path(folder) / "probe_metrics.json"
    write_if_changed(path, json.dumps(checked.to_json(), indent=1) + "\n")
    return path


def _free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def run_workers(
    config_path: Path, search: Search, workers: int, host: str = "127.0.0.1", progress: bool = True
) -> None:
    """A keras-tuner chief and ``workers`` workers on this machine, each its own process, until the
    search is done; their output goes to ``build/logs/tune/NAME/``. Progress from the trial files."""
    from tqdm.auto import tqdm  # the progress bar only while a search runs

    port = _free_port(host)
    logs = paths.LOGS / "tune" / search.config["name"]
    logs.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "predcalc.cli",
        "tune",
        str(config_path),
        "--output",
        str(search.folder.parent),
        "--search-only",
    ]
    base = {
        **os.environ,
        "KERASTUNER_ORACLE_IP": host,
        "KERASTUNER_ORACLE_PORT": str(port),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(paths.ROOT / "lib"), os.environ.get("PYTHONPATH")])),
    }
    processes = []
    try:
        for name in ["chief"] + [f"worker{i}" for i in range(workers)]:
            with open(logs / f"{name}.log", "w") as log:
                processes.append(
                    subprocess.Popen(
                        command, env={**base, "KERASTUNER_TUNER_ID": name}, stdout=log, stderr=subprocess.STDOUT
                    )
                )
        project = search.folder / PROJECT
        with tqdm(
            total=search.config.get("trials"),
            desc=f"tune {search.config['name']} ({workers} workers)",
            unit="trial",
            disable=not progress,
        ) as bar:
            while processes[0].poll() is None:
                bar.update(_completed_on_disk(project) - bar.n)
                if all(p.poll() is not None for p in processes[1:]):
                    # the chief ends once every worker has been told to stop; not if a worker died mid-trial
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        processes[0].wait(timeout=30)
                    break
                time.sleep(1)
            bar.update(_completed_on_disk(project) - bar.n)
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
                process.wait()
    names = ["chief"] + [f"worker{i}" for i in range(workers)]
    failed = [f"{name} (exit {p.returncode})" for name, p in zip(names, processes) if p.returncode != 0]
    if failed:
        raise RuntimeError(
            f"tune {search.config['name']}: {', '.join(failed)} failed (finished trials are kept; "
            f"the same command resumes); logs in {relative(logs)}/"
        )


def _completed_on_disk(project: Path) -> int:
    count = 0
    for path in project.glob("trial_*/trial.json"):
        with contextlib.suppress(OSError, json.JSONDecodeError):
            count += json.loads(path.read_text()).get("status") == "COMPLETED"
    return count


def run(
    config_path,
    root=TUNE_BUILD,
    workers: int = 1,
    search_only: bool = False,
    progress: bool = True,
    probe: bool = False,
    final_only: bool = False,
) -> dict:
    """``predcalc tune``: search (here, on ``workers`` local processes, or as the chief or a worker
    that the environment names), then summarise and, unless ``search_only``, train the best trial
    on the final seeds. A ``probe`` runs no trial: it scores the best trial so far on the test
    sets as a trial trained it; ``final_only`` runs no trial either and trains the best trial so far
    on the final seeds (:func:`final_results`). Returns the summary (None for a worker)."""
    config = load_config(config_path)
    search = Search(config, root)
    if probe or final_only:
        summary = summarise(search, record_session=False)
        summary["metrics"] = relative(final_results(search, progress=progress, probe=probe))
        return summary
    if workers < 1:
        raise ValueError(f"--workers must be at least 1. Received: {workers}")
    if role() is not None and workers > 1:
        raise ValueError("--workers starts its own chief and workers; unset KERASTUNER_ORACLE_IP to use it")
    quiet_tensorflow()
    if workers > 1:
        run_workers(Path(config_path), search, workers, progress=progress)
    else:
        search.search(progress=progress)
    if role() is not None and "chief" not in role():
        return None  # a worker: the chief keeps the results
    summary = summarise(search)
    if not search_only:
        summary["metrics"] = relative(final_results(search, progress=progress))
    return summary
