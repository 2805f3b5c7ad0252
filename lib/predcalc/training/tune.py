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
(bayesian). Each trial is :func:`predcalc.training.fit.train` on the seed protocol's training
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
name), ``KERASTUNER_ORACLE_IP`` and ``KERASTUNER_ORACLE_PORT`` (see the README's "Tuning").
"""

from __future__ import annotations

import contextlib
import datetime
import inspect
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
from predcalc.training.metrics import sign_test, spread
from predcalc.training.sweep import SweepConfigError, check_keys, is_int, read_config_file

TUNE_BUILD = paths.SCRATCH / "tune"
TUNE_REPORTS = paths.REPORTS / "tune"
TUNERS = ("bayesian", "random", "hyperband")
OBJECTIVES = {"val_loss": "min", "val_mae": "min", "val_mre": "min", "val_accuracy": "max"}
TRAINING_HYPERPARAMETERS = ("learning_rate", "batch_size", "peak_learning_rate")
CONFIG_KEYS = (
    "name",
    "model",
    "tuner",
    "objective",
    "trials",
    "epochs",
    "seeds",
    "space",
    "final",
    "data_seed",
    "search_seed",
    "batch_size",
    "patience",
    "learning_rate",
    "factor",
    "initial_points",
)
FINAL_KEYS = ("seeds", "epochs", "patience")
PROJECT = "search"
RUNNER = "runner.json"  # in each trial's folder: the tuner (process) that ran it
ROLE_VARIABLES = ("KERASTUNER_TUNER_ID", "KERASTUNER_ORACLE_IP", "KERASTUNER_ORACLE_PORT")


class TuneConfigError(SweepConfigError):
    """A tune config that cannot be read or does not follow the schema (one line, naming the file)."""


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _seeds(value, fail, key: str) -> list[int]:
    if not isinstance(value, list) or not value or not all(is_int(x) for x in value):
        fail(
            f"'{key}' is a non-empty list of integers. Received: {value!r}"
            + (f" (write {key.split('.')[-1]}: [{value}])" if is_int(value) else "")
        )
    return list(value)


def _check_dimension(name: str, spec, fail) -> dict:
    """One search dimension as ``{"choices": [...]}`` or ``{"min", "max", "log", "step"}``."""
    if isinstance(spec, list):
        spec = {"choices": spec}
    if not isinstance(spec, dict):
        fail(f"space.{name} is {{choices: [...]}} or {{min: .., max: .., log: true|false}}. Received: {spec!r}")
    if "choices" in spec:
        choices = spec["choices"]
        if set(spec) - {"choices"}:
            fail(f"space.{name}: 'choices' stands alone. Received keys: {sorted(spec)}")
        if not isinstance(choices, list) or not choices:
            fail(f"space.{name}.choices is a non-empty list. Received: {choices!r}")
        kinds = {type(c) for c in choices}
        if len(kinds) > 1 and not kinds <= {int, float}:
            fail(f"space.{name}.choices mixes types: {choices!r}")
        if len(set(choices)) != len(choices):
            fail(f"space.{name}.choices repeats a value: {choices!r}")
        return {"choices": [float(c) for c in choices] if kinds == {int, float} else list(choices)}
    unknown = set(spec) - {"min", "max", "log", "step"}
    if unknown or "min" not in spec or "max" not in spec:
        fail(
            f"space.{name} is {{choices: [...]}} or {{min: .., max: .., log: true|false, step: ..}}. "
            f"Received keys: {sorted(spec)}"
        )
    low, high, log = spec["min"], spec["max"], spec.get("log", False)
    if not (_is_number(low) and _is_number(high)) or not low < high:
        fail(f"space.{name}: min and max are numbers with min < max. Received: min={low!r}, max={high!r}")
    if not isinstance(log, bool):
        fail(f"space.{name}.log is true or false. Received: {log!r}")
    if log and low <= 0:
        fail(f"space.{name}: a log-scale range needs min > 0. Received: min={low!r}")
    step = spec.get("step")
    if step is not None and not (_is_number(step) and step > 0):
        fail(f"space.{name}.step is a positive number. Received: {step!r}")
    return {"min": low, "max": high, "log": log, "step": step}


def check_config(config, where: str = "the tune config") -> dict:
    """The schema of a tune config, checked (see the module's docstring); returns it with its defaults."""
    from predcalc.models import get_spec  # the registry loads the model builders (Keras) only when a config is checked

    def fail(message):
        raise TuneConfigError(f"{where}: {message}")

    check_keys(config, CONFIG_KEYS, "tune", fail)
    config = {
        "tuner": "bayesian",
        "objective": "val_loss",
        "seeds": [0],
        "data_seed": 0,
        "search_seed": 0,
        "batch_size": 32,
        "patience": 20,
        "learning_rate": 1e-3,
        **config,
    }
    name = config.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip() or "/" in name or name.startswith(".")):
        fail(f"'name' is a folder name (text without '/', not starting with '.'). Received: {name!r}")
    if not isinstance(config.get("model"), str):
        fail(f"'model' names a registered model (e.g. model: fnn2). Received: {config.get('model')!r}")
    try:
        spec = get_spec(config["model"])
    except ValueError as error:
        fail(str(error))
    if config["tuner"] not in TUNERS:
        fail(f"'tuner' is one of {', '.join(TUNERS)}. Received: {config['tuner']!r}")
    if config["objective"] not in OBJECTIVES:
        fail(f"unknown objective {config['objective']!r}; known: {', '.join(OBJECTIVES)} (validation metrics)")
    hyperband = config["tuner"] == "hyperband"
    if hyperband and "trials" in config:
        fail("'trials' is not used by hyperband (its brackets set the trials: use 'epochs' and 'factor')")
    if not hyperband and not (is_int(config.get("trials")) and config["trials"] >= 1):
        fail(f"'trials' is a positive integer. Received: {config.get('trials')!r}")
    for key in ("epochs", "batch_size", "patience"):
        if not (is_int(config.get(key)) and config[key] >= 1):
            fail(f"'{key}' is a positive integer. Received: {config.get(key)!r}")
    for key, minimum in (("factor", 2), ("initial_points", 1)):
        if key in config and not (is_int(config[key]) and config[key] >= minimum):
            fail(f"'{key}' is an integer of at least {minimum}. Received: {config[key]!r}")
    if "factor" in config and not hyperband:
        fail("'factor' is a hyperband setting")
    if "initial_points" in config and config["tuner"] != "bayesian":
        fail("'initial_points' is a bayesian setting")
    if not (_is_number(config["learning_rate"]) and config["learning_rate"] > 0):
        fail(f"'learning_rate' is a positive number. Received: {config['learning_rate']!r}")
    for key in ("data_seed", "search_seed"):
        if not is_int(config[key]):
            fail(f"'{key}' is an integer. Received: {config[key]!r}")
    config["seeds"] = _seeds(config["seeds"], fail, "seeds")
    space = config.get("space")
    if not space:
        fail("'space' is empty: name at least one hyperparameter (e.g. space: {units: {choices: [64, 128]}})")
    if not isinstance(space, dict):
        fail(f"'space' maps hyperparameter names to ranges or choices. Received: {type(space).__name__}")
    builder = inspect.signature(spec.build).parameters
    open_builder = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in builder.values())
    arguments = [n for n in builder if n != "tokenizer" and builder[n].kind is not inspect.Parameter.VAR_KEYWORD]
    for key in space:
        if key in TRAINING_HYPERPARAMETERS:
            if key == "peak_learning_rate" and spec.optimizer.name != "adamw_seed":
                fail(
                    f"space.peak_learning_rate sets the seed schedule of adamw_seed models; {spec.name} trains "
                    f"with {spec.optimizer.name!r} (tune learning_rate instead)"
                )
        elif not (key in arguments or (open_builder and isinstance(key, str) and key.isidentifier())):
            fail(
                f"space.{key} is neither an argument of {spec.name}'s builder ({', '.join(arguments) or 'none'}) "
                f"nor one of {', '.join(TRAINING_HYPERPARAMETERS)}"
            )
    config["space"] = {key: _check_dimension(key, value, fail) for key, value in space.items()}
    final = config.get("final")
    if final is not None:
        if not isinstance(final, dict) or set(final) - set(FINAL_KEYS):
            fail(f"'final' is a mapping of {', '.join(FINAL_KEYS)}. Received: {final!r}")
        final = {"seeds": config["seeds"], "epochs": config["epochs"], "patience": config["patience"], **final}
        final["seeds"] = _seeds(final["seeds"], fail, "final.seeds")
        for key in ("epochs", "patience"):
            if not (is_int(final[key]) and final[key] >= 1):
                fail(f"'final.{key}' is a positive integer. Received: {final[key]!r}")
        config["final"] = final
    return config


def load_config(path) -> dict:
    """Reads and checks a tune config (``.yaml``/``.yml`` or ``.json``); errors are one line."""
    path = Path(path)
    config = check_config(read_config_file(path, "tune", TuneConfigError), str(path))
    config["name"] = config.get("name") or path.stem
    return config


def hyperparameters(space: dict):
    """The checked ``space`` as keras-tuner ``HyperParameters`` (Choice, Int or Float)."""
    import keras_tuner  # only when a search runs: checking a config needs no tuner

    hp = keras_tuner.HyperParameters()
    for name, dimension in space.items():
        if "choices" in dimension:
            hp.Choice(name, dimension["choices"])
            continue
        low, high, step = dimension["min"], dimension["max"], dimension["step"]
        sampling = "log" if dimension["log"] else "linear"
        if is_int(low) and is_int(high) and (step is None or is_int(step)):
            hp.Int(name, low, high, step=None if dimension["log"] else (step or 1), sampling=sampling)
        else:
            hp.Float(name, float(low), float(high), step=step, sampling=sampling)
    return hp


def split_hyperparameters(values: dict) -> tuple[dict, dict]:
    """A trial's values as (the training arguments, the builder's ``model_kwargs``); keras-tuner's
    own ``tuner/...`` entries are dropped, and ``peak_learning_rate`` rides on ``model_kwargs``."""
    training = {k: v for k, v in values.items() if k in ("learning_rate", "batch_size")}
    model_kwargs = {k: v for k, v in values.items() if not k.startswith("tuner/") and k not in training}
    return training, model_kwargs


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
            from predcalc.data import seed_protocol

            self._protocol = seed_protocol(self.config["data_seed"])
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

    def tuner(self, overwrite: bool = False):
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
            tuner = ProtocolTuner(oracle=oracle, directory=str(self.folder), project_name=PROJECT, overwrite=overwrite)
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


def finished_trials(oracle) -> list:
    return [t for t in oracle.trials.values() if t.status == "COMPLETED"]


def trial_table(oracle, config: dict):
    """Every trial as a row (pandas): its id, status, the tuner that ran it (where known),
    hyperparameters, metrics, epochs trained, seconds and parameter count."""
    import pandas as pd  # tables only when the trials are written

    rows = []
    metric_names = (*OBJECTIVES, "epochs", "seconds", "params")
    for trial_id, trial in sorted(oracle.trials.items()):
        values = trial.hyperparameters.values
        runner = Path(oracle._get_trial_dir(trial_id)) / RUNNER
        row = {
            "trial": trial_id,
            "status": trial.status,
            "tuner": json.loads(runner.read_text())["tuner"] if runner.is_file() else None,
        }
        row.update({name: values.get(name) for name in config["space"]})
        if "tuner/epochs" in values:
            row["budget_epochs"] = values["tuner/epochs"]
        for name in metric_names:
            row[name] = trial.metrics.get_last_value(name) if trial.metrics.exists(name) else None
        rows.append(row)
    return pd.DataFrame(rows)


def hyperparameter_effects(table, config: dict) -> dict:
    """Spearman's rank correlation of each hyperparameter with the objective over the finished
    trials (choices ranked in the config's order; None where a column is constant or fewer than
    4 trials finished): a first look at which ones mattered, not a test."""
    from scipy.stats import spearmanr  # statistics only when the trials are summarised

    finished = table[table["status"] == "COMPLETED"] if len(table) else table
    effects = {}
    for name, dimension in config["space"].items():
        if len(finished) < 4:
            effects[name] = None
            continue
        values = finished[name].tolist()
        ranks = (
            [[str(c) for c in dimension["choices"]].index(str(v)) for v in values] if "choices" in dimension else values
        )
        rho = spearmanr(ranks, finished[config["objective"]].astype(float)).statistic
        effects[name] = None if not math.isfinite(rho) else round(float(rho), 3)
    return effects


def final_comparison(folder, published: float) -> dict | None:
    """The final stage's in-range MAE per seed (``metrics.json``) against a published mean: the
    seeds' MAEs, (mean, min, max), the exact sign test over seeds (:func:`metrics.sign_test`: "better"
    only when every seed beats it) and the final stage's training minutes. None before it ran."""
    path = Path(folder) / "metrics.json"
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    runs = next(iter(record["models"].values()))["runs"]
    maes = [r["metrics"]["in"]["mae"] for r in runs]
    return {
        "seeds": [r["seed"] for r in runs],
        "mae": maes,
        "spread": spread(maes),
        "test": sign_test(maes, published),
        "epochs": [r["epochs"] for r in runs],
        "train_minutes": sum(r.get("train_seconds", 0.0) for r in runs) / 60,
        "published": published,
    }


def repeated_trials(folder, config: dict, tolerance: float = 0.1) -> list[tuple[list[str], list[float]]]:
    """Pairs of finished trials (``trials.csv``) that the tuner drew almost alike: every choice and
    integer the same, every continuous value within ``tolerance`` of each other (relative). Their
    objectives, side by side, show how noisy one trial's objective is. (ids, objectives) per pair."""
    import pandas as pd  # tables only when a search is summarised

    path = Path(folder) / "trials.csv"
    if not path.is_file():
        return []
    table = pd.read_csv(path, dtype={"trial": str})
    table = table[table["status"] == "COMPLETED"].reset_index(drop=True)
    space = config["space"]
    continuous = [n for n, d in space.items() if "choices" not in d and not all(map(is_int, (d["min"], d["max"])))]
    discrete = [n for n in space if n not in continuous]
    pairs = []
    for i in range(len(table)):
        for j in range(i + 1, len(table)):
            a, b = table.iloc[i], table.iloc[j]
            if all(a[n] == b[n] for n in discrete) and all(
                abs(a[n] - b[n]) <= tolerance * max(abs(a[n]), abs(b[n])) for n in continuous
            ):
                pairs.append(([a["trial"], b["trial"]], [float(a[config["objective"]]), float(b[config["objective"]])]))
    return pairs


def search_facts(folder, published: float | None = None, published_label: str = "published") -> list[str]:
    """A search's results as sentences (from its ``tune.json``, and ``probe_metrics.json`` or
    ``metrics.json`` where written), for a report: trials, time, the best trial, the
    hyperparameters' rank correlations, the final stage's in-range MAE over seeds against
    ``published`` where given (its verdict by :func:`final_comparison`)."""
    folder = Path(folder)
    summary = json.loads((folder / "tune.json").read_text())
    config, best = summary["config"], summary["best"]
    objective = config["objective"]
    wall = sum(s["seconds"] for s in summary["sessions"])
    facts = [
        f"{config['tuner']} search of {config['model']}: {summary['trials_finished']} of "
        f"{config.get('trials', 'hyperband')} trials finished ({summary['trials_failed']} failed), "
        f"{config['epochs']} epochs each on seed(s) {config['seeds']}, {wall / 60:.0f} min of wall time "
        f"in {len(summary['sessions'])} call(s) ({summary['trial_seconds'] / 60:.0f} min of trial training)"
    ]
    if best is not None:
        facts.append(
            f"best trial {best['trial']}: {objective} {best[objective]:.4g} with "
            + ", ".join(f"{k} {_short_value(v)}" for k, v in best["hyperparameters"].items())
        )
    effects = {k: v for k, v in (summary.get("effects") or {}).items() if v is not None}
    if effects:
        ranked = sorted(effects.items(), key=lambda item: -abs(item[1]))
        facts.append(
            f"rank correlation with {objective} (Spearman, {summary['trials_finished']} trials): "
            + ", ".join(f"{k} {v:+.2f}" for k, v in ranked)
        )
    repeats = repeated_trials(folder, config)
    if repeats:
        facts.append(
            "trials the tuner drew almost alike (the same choices, rates within 10 %) scored "
            + "; ".join(
                f"{' and '.join(trials)}: {' vs '.join(f'{v:.3g}' for v in values)}" for trials, values in repeats
            )
            + f" ({objective}): one trial's objective moves that much between near-identical settings (noise or a "
            "sharp optimum; one run each cannot tell), so the ranking of close trials is weak evidence"
        )
    final = final_comparison(folder, published) if published is not None else None
    if final is not None:
        mean, low, high = final["spread"]
        test = final["test"]
        words = {"better": "below it on every seed", "worse": "above it on every seed"}
        facts.append(
            f"final: the best trial trained on {len(final['mae'])} seeds ({min(final['epochs'])}-"
            f"{max(final['epochs'])} epochs, {final['train_minutes']:.0f} min): in-range MAE {mean:.4g} "
            f"[{low:.4g}-{high:.4g}] against {published_label} {published}: "
            + words.get(test["verdict"], f"not resolved ({test['better']} of {len(final['mae'])} seeds below it)")
        )
    probe = folder / "probe_metrics.json"
    if final is None and probe.is_file():
        runs = json.loads(probe.read_text())["models"][config["model"]]["runs"]
        maes = [r["metrics"]["in"]["mae"] for r in runs]
        facts.append(
            f"probe: best trial trained on {len(runs)} seed(s), {runs[0]['epochs']} epochs: in-range MAE "
            f"{sum(maes) / len(maes):.4g} (a probe at trial length, not like for like with {published_label})"
        )
    return facts


def best_trial(oracle):
    trials = oracle.get_best_trials(1)
    return trials[0] if trials else None


def plot_trials(table, config: dict, path=None):
    """The objective of every finished trial against each hyperparameter (one panel each; log
    axes where the range is on a log scale; the best trial in red)."""
    import matplotlib.pyplot as plt  # plotting only when the figure is drawn
    import numpy as np
    from matplotlib import ticker

    finished = table[table["status"] == "COMPLETED"]
    objective = config["objective"]
    names = list(config["space"])
    columns = min(3, len(names))
    rows = math.ceil(len(names) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.2 * rows), squeeze=False)
    values = finished[objective].astype(float).to_numpy()
    best = (np.argmin(values) if OBJECTIVES[objective] == "min" else np.argmax(values)) if len(values) else None
    for index, name in enumerate(names):
        axis = axes[index // columns][index % columns]
        dimension = config["space"][name]
        column = finished[name].tolist()
        if "choices" in dimension:
            labels = [str(c) for c in dimension["choices"]]
            x = np.array([labels.index(str(v)) for v in column], dtype=float)
            rng = np.random.default_rng(0)
            x = x + rng.uniform(-0.12, 0.12, len(x))  # spread equal choices so every trial shows
            axis.set_xticks(range(len(labels)), labels)
            axis.set_xlim(-0.5, len(labels) - 0.5)  # every choice shown, tried or not
        else:
            x = np.array(column, dtype=float)
            low, high = dimension["min"], dimension["max"]
            if dimension["log"]:
                axis.set_xscale("log")
                axis.set_xlim(low / 1.5, high * 1.5)  # the whole range searched
            else:
                axis.set_xlim(low - 0.05 * (high - low), high + 0.05 * (high - low))
        axis.scatter(x, values, s=22, alpha=0.7, color="#4477aa")
        if best is not None:
            axis.scatter([x[best]], [values[best]], s=60, color="#cc3311", label="best")
        if objective != "val_accuracy" and len(values) and np.all(values > 0):
            axis.set_yscale("log")
            plain = ticker.FuncFormatter(lambda value, _: f"{value:.3g}")
            axis.yaxis.set_major_formatter(plain)
            axis.yaxis.set_minor_formatter(plain)
        axis.set_xlabel(name)
        axis.set_ylabel(objective)
    for index in range(len(names), rows * columns):
        axes[index // columns][index % columns].axis("off")
    figure.suptitle(
        f"{config['model']}: {len(finished)} trials ({config['tuner']}), {objective} against each hyperparameter",
        fontsize=10,
    )
    figure.tight_layout()
    if path is not None:
        paths.save_figure(figure, path)
    plt.close(figure)
    return figure


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
    model["label"] = f"{model['label']}, tuned ({', '.join(f'{k} {_short_value(v)}' for k, v in best.items())})"
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


def _short_value(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def quiet_tensorflow() -> None:
    """TensorFlow's Python warnings (retracing notices) off the terminal."""
    import logging  # only when the terminal is quietened for a run

    logging.getLogger("tensorflow").setLevel(logging.ERROR)


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
