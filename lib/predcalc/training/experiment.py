"""One architecture notebook's work in a few calls: train over seeds, tabulate, plot, export, write.

Example:
    >>> results = run_seeds(["fnn_baseline", "fnn2"], reference_protocol(0), seeds=[0], epochs=5)  # doctest: +SKIP
    >>> comparison_table(results.to_json("01_fnn", parameters))  # doctest: +SKIP
    >>> results.write("outputs/01_fnn", notebook="01_fnn", parameters={...})  # doctest: +SKIP
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime
import hashlib
import json
import multiprocessing
import os
import tempfile
import time
from pathlib import Path

import keras
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from tqdm.auto import tqdm

from predcalc.data import Protocol
from predcalc.models import get_spec
from predcalc.paths import CHECKPOINTS_VARIABLE, save_figure
from predcalc.record import RunRecord
from predcalc.training import metrics as M
from predcalc.training.fit import TrainedModel, build, builder_arguments, evaluate, make_tokenizer, run_record, train

BASELINE = "fnn_baseline"
REPORT_SETS = ("in", "out", "long")


@dataclasses.dataclass
class ModelResults:
    """Every seed's record of one model, and the first seed's model and predictions."""

    first: TrainedModel
    predictions: dict
    runs: list = dataclasses.field(default_factory=list)

    @property
    def spec(self):
        return self.first.spec


@dataclasses.dataclass
class Results:
    protocol: Protocol
    models: dict = dataclasses.field(default_factory=dict)
    exports: dict = dataclasses.field(default_factory=dict)
    kept: dict = dataclasses.field(default_factory=dict)  # stored records of models not retrained

    def keep_stored(self, directory) -> list[str]:
        """Keep the models of the ``metrics.json`` already in ``directory`` that this run did not
        train, each marked ``kept_from`` (that run's date, profile and parameters), so a notebook
        can add models without retraining the others. Returns the kept names."""
        path = Path(directory) / "metrics.json"
        if not path.is_file():
            return []
        stored = json.loads(path.read_text())
        info = Path(directory) / "run.json"
        profile = json.loads(info.read_text()).get("profile") if info.is_file() else None
        for name, model in stored.get("models", {}).items():
            if name not in self.models:
                self.kept[name] = {
                    **model,
                    "kept_from": model.get("kept_from")
                    or {"created": stored.get("created"), "profile": profile, "parameters": stored.get("parameters")},
                }
        return sorted(self.kept)

    @classmethod
    def from_stored(cls, directory, protocol: Protocol, names=None) -> Results:
        """The models of a stored run (``directory``: its ``metrics.json`` and each model's first-seed
        ``export/NAME/model.keras``), reloaded and scored again on ``protocol``'s test sets, with
        every seed's stored record; a model without a stored ``model.keras`` is left out. Redraws a
        run's figures and tables without retraining it (no training history is stored)."""
        directory = Path(directory)
        stored = json.loads((directory / "metrics.json").read_text())["models"]
        results = cls(protocol=protocol)
        for name in names or stored:
            path = directory / "export" / name / "model.keras"
            if name not in stored or not path.is_file():
                continue
            spec, runs = get_spec(name), stored[name]["runs"]
            trained = TrainedModel(
                spec=spec,
                model=keras.saving.load_model(path),
                tokenizer=make_tokenizer(spec),
                seed=runs[0]["seed"],
                history={},
                epochs=runs[0]["epochs"],
                seconds=runs[0].get("train_seconds", 0.0),
            )
            _, predictions = evaluate(trained, protocol.test_sets())
            results.models[name] = ModelResults(first=trained, predictions=predictions, runs=list(runs))
        return results

    def plot_predictions(self, test_sets=REPORT_SETS, path=None):
        """Predicted vs true value of each model's first seed: one row per model (its label above
        the row), one panel per test set; rows shrink so that the figure stays at most 21.5 inches
        (2,365 pixels at 110 dpi) tall."""
        sets = self.protocol.test_sets()
        row_height = min(3.6, 21.5 / max(len(self.models), 1))
        figure = plt.figure(figsize=(4 * len(test_sets), row_height * len(self.models)), layout="constrained")
        for row, result in zip(np.atleast_1d(figure.subfigures(len(self.models), 1)), self.models.values()):
            row.suptitle(f"{result.spec.shown_label} (first seed)", fontsize=10)
            for column, (axis, test_set) in enumerate(zip(np.atleast_1d(row.subplots(1, len(test_sets))), test_sets)):
                truth = sets[test_set].values
                axis.scatter(truth, result.predictions[test_set], s=4, alpha=0.4)
                low, high = truth.min() - 1, truth.max() + 1
                axis.plot([low, high], [low, high], color="black", linewidth=0.8)
                axis.set_title(f"{test_set}: MAE {M.mae(truth, result.predictions[test_set]):.3g}", fontsize=9)
                axis.set_xlabel("true value")
                if column == 0:
                    axis.set_ylabel("predicted")
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            save_figure(figure, path)
        return figure

    def plot_history(self, path=None):
        """Training and validation loss of each model's first seed (log scale), the legend below."""
        figure, axis = plt.subplots(figsize=(6, 3.2 + 0.2 * len(self.models)), layout="constrained")
        draw_losses(axis, self.models.values())
        axis.set_ylabel("MSE loss")
        if path is not None:
            save_figure(figure, path)
        return figure

    def to_json(self, notebook: str, parameters: dict) -> dict:
        return {
            "notebook": notebook,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "backend": keras.backend.backend(),
            "keras": keras.__version__,
            "parameters": parameters,
            "data": {"seed": self.protocol.seed, "counts": self.protocol.counts()},
            "models": {
                name: {
                    "label": r.spec.label,
                    "family": r.spec.family,
                    "reference_row": r.spec.reference_row,
                    "tokenizer": r.spec.tokenizer,
                    "params": r.first.params,
                    "runs": r.runs,
                    "export": self.exports.get(name),
                }
                for name, r in self.models.items()
            }
            | {name: model for name, model in self.kept.items() if name not in self.models},
        }

    def write(self, directory, notebook: str, parameters: dict) -> Path:
        """Write ``metrics.json`` through the typed record (:class:`predcalc.record.RunRecord`):
        what ``predcalc report`` and the tests read."""
        return RunRecord.from_json({**self.to_json(notebook, parameters), "kind": "models"}).write(directory)


def draw_losses(axis, models) -> None:
    """Training (solid) and validation (dashed) loss per epoch of each of ``models`` (their first
    seed) on ``axis``, log scale, one colour per model; the legend, below the axis, names each model
    once and the two line styles."""
    handles = []
    for result in models:
        history = result.first.history
        (line,) = axis.plot(history.get("loss", []), label=result.spec.shown_label)
        if "val_loss" in history:
            axis.plot(history["val_loss"], linestyle="--", color=line.get_color())
        handles.append(line)
    handles += [
        Line2D([], [], color="grey", label="train"),
        Line2D([], [], color="grey", linestyle="--", label="validation"),
    ]
    axis.set_yscale("log")
    axis.set_xlabel("epoch")
    axis.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)


def run_seeds(
    model_names,
    protocol: Protocol,
    seeds=(0,),
    epochs: int = 200,
    patience: int = 20,
    batch_size: int = 32,
    learning_rate: float = 1e-3,
    model_kwargs: dict | None = None,
    progress: bool = True,
    extra_test_sets: dict | None = None,
    workers: int = 1,
    checkpoints=None,
) -> Results:
    """Train and evaluate each model once per seed on the protocol.

    Args:
        model_kwargs: ``{model_name: {kwarg: value}}`` passed to the model builders.
        extra_test_sets: ``{name: Split}`` scored beside the protocol's test sets, in every
            seed's record (e.g. the extended suite's families).
        workers: training runs at a time. Above 1, each (model, seed) run trains in its own
            spawned process (small models on a CPU are bound by per-step overhead, so several
            processes finish sooner than one); the first seed's weights come back through a
            temporary ``.weights.h5`` file. Records keep the order of the sequential path.
        checkpoints: a folder (default: the ``PREDCALC_CHECKPOINTS`` environment variable, which
            ``predcalc run`` sets; none if unset) where each finished (model, seed) run leaves its
            record, predictions and history (and the first seed its weights), so a run that was
            stopped resumes at the first unfinished run. A checkpoint is reused only when the job
            (model, seed, epochs, patience, batch size, learning rate, model kwargs), every split's
            expressions and values, and the Keras backend and version are the same; a changed
            model builder is not detected (delete the folder after changing one).
    """
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    if int(workers) < 1:
        raise ValueError(f"workers must be at least 1. Received: workers={workers}")
    clash = set(protocol.test_sets()) & set(extra_test_sets or {})
    if clash:
        raise ValueError(f"extra_test_sets must not reuse the protocol's names. Received: {sorted(clash)}")
    test_sets = {**protocol.test_sets(), **(extra_test_sets or {})}
    settings = {"epochs": epochs, "patience": patience, "batch_size": batch_size, "learning_rate": learning_rate}
    jobs = [
        {"name": name, "seed": seed, **settings, "model_kwargs": (model_kwargs or {}).get(name)}
        for name in model_names
        for seed in seeds
    ]
    results = Results(protocol=protocol)
    folder = checkpoints if checkpoints is not None else os.environ.get(CHECKPOINTS_VARIABLE)
    store = _Checkpoints(Path(folder), protocol, test_sets) if folder else None

    with tempfile.TemporaryDirectory(prefix="predcalc-seeds-") as scratch:
        weights = _weights_paths(jobs, store, Path(scratch))
        outcomes = [store.load(job) if store else None for job in jobs]
        missing = [index for index, outcome in enumerate(outcomes) if outcome is None]
        if int(workers) == 1:
            for index in tqdm(missing, desc="train", disable=not progress):
                outcomes[index] = _train_job(jobs[index], protocol, test_sets, weights[index])
                if store:
                    store.save(jobs[index], outcomes[index])
        else:
            _train_in_processes(jobs, missing, outcomes, protocol, test_sets, int(workers), progress, weights, store)
        for job, outcome in zip(jobs, outcomes):
            first = _restore(job, outcome) if outcome["weights"] else None  # only a first seed saved weights
            _collect(results, job["name"], first, outcome["predictions"], outcome["record"])
    return results


class _Checkpoints:
    """Finished (model, seed) runs in a folder, keyed by the job, the data and the backend."""

    def __init__(self, folder: Path, protocol: Protocol, test_sets: dict):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        for name, split in {"train": protocol.train, "validation": protocol.validation, **test_sets}.items():
            digest.update(json.dumps([name, list(split.expressions), [float(v) for v in split.values]]).encode())
        self.context = {"data": digest.hexdigest(), "backend": keras.backend.backend(), "keras": keras.__version__}

    def stem(self, job: dict) -> Path:
        key = hashlib.sha256(json.dumps({**job, **self.context}, sort_keys=True).encode()).hexdigest()[:12]
        return self.folder / f"{job['name']}-seed{job['seed']}-{key}"

    def weights(self, job: dict) -> str:
        return str(self.stem(job)) + ".weights.h5"

    def load(self, job: dict) -> dict | None:
        """The stored outcome of ``job``, or None if it has not finished (or lacks the weights it needs)."""

        stem = self.stem(job)
        record = stem.with_suffix(".json")
        if not record.is_file():
            return None
        outcome = json.loads(record.read_text())
        if outcome["weights"] is not None:
            if not Path(self.weights(job)).is_file():
                return None
            outcome["weights"] = self.weights(job)
        with np.load(stem.with_suffix(".npz")) as predictions:
            outcome["predictions"] = {name: predictions[name] for name in predictions.files}
        return outcome

    def save(self, job: dict, outcome: dict) -> None:
        """Store a finished outcome; its JSON is written last, so a half-written one is never loaded."""

        stem = self.stem(job)
        np.savez(stem.with_suffix(".npz"), **outcome["predictions"])
        stored = {key: value for key, value in outcome.items() if key != "predictions"}
        stored["weights"] = None if outcome["weights"] is None else Path(outcome["weights"]).name
        temporary = stem.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(stored))
        temporary.replace(stem.with_suffix(".json"))


def _weights_paths(jobs: list, store: _Checkpoints | None, scratch: Path) -> list:
    """Where each job saves its weights: only the first seed of each model does (into the
    checkpoint folder if there is one, else into ``scratch``)."""
    paths, seen = [], set()
    for index, job in enumerate(jobs):
        first = job["name"] not in seen
        seen.add(job["name"])
        paths.append(None if not first else store.weights(job) if store else str(scratch / f"{index}.weights.h5"))
    return paths


def add_pretrained(results: Results, name: str, extra_test_sets: dict | None = None) -> Results:
    """Score a model whose builder loads trained weights (e.g. ``fnn2_reference_weights``) without
    training it, as one run (seed 0, 0 epochs) beside the trained ones in ``results``."""

    spec, model, tokenizer = build(name)
    trained = TrainedModel(spec=spec, model=model, tokenizer=tokenizer, seed=0, history={}, epochs=0, seconds=0.0)
    start = time.perf_counter()
    scores, predictions = evaluate(trained, {**results.protocol.test_sets(), **(extra_test_sets or {})})
    trained.seconds = time.perf_counter() - start
    record = {**run_record(trained, scores), "pretrained": True}
    _collect(results, name, trained, predictions, record)
    return results


def _train_kwargs(job: dict, protocol: Protocol) -> TrainedModel:
    return train(
        job["name"],
        protocol,
        seed=job["seed"],
        epochs=job["epochs"],
        patience=job["patience"],
        batch_size=job["batch_size"],
        learning_rate=job["learning_rate"],
        model_kwargs=job["model_kwargs"],
    )


def _collect(results: Results, name: str, trained: TrainedModel | None, predictions: dict, record: dict) -> None:
    """Append a run's record; a model's first run also keeps its model and predictions."""
    if name not in results.models:
        results.models[name] = ModelResults(first=trained, predictions=predictions)
    results.models[name].runs.append(record)


def _train_job(job: dict, protocol: Protocol, test_sets: dict, weights: str | None) -> dict:
    """One (model, seed) run in a worker process: its record, predictions, history and (if asked) weights."""
    trained = _train_kwargs(job, protocol)
    scores, predictions = evaluate(trained, test_sets)
    if weights is not None:
        trained.model.save_weights(weights)
    return {
        "record": run_record(trained, scores),
        "predictions": predictions,
        "history": trained.history,
        "epochs": trained.epochs,
        "seconds": trained.seconds,
        "weights": weights,
    }


def _train_in_processes(
    jobs: list,
    missing: list,
    outcomes: list,
    protocol: Protocol,
    test_sets: dict,
    workers: int,
    progress: bool,
    weights: list,
    store: _Checkpoints | None,
) -> None:
    """Train ``jobs[i]`` for each ``i`` in ``missing``, each in a spawned process, ``workers`` at a
    time, into ``outcomes[i]`` (and the checkpoint store, as each finishes)."""

    context = multiprocessing.get_context("spawn")  # a fork would copy the parent's backend threads
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {
            pool.submit(_train_job, jobs[index], protocol, test_sets, weights[index]): index for index in missing
        }
        for future in tqdm(
            concurrent.futures.as_completed(futures), total=len(futures), desc="train", disable=not progress
        ):
            index = futures[future]
            outcomes[index] = future.result()
            if store:
                store.save(jobs[index], outcomes[index])


def _restore(job: dict, outcome: dict) -> TrainedModel:
    """Rebuild a worker's model in this process and load the weights it trained."""

    spec, model, tokenizer = build(job["name"], seed=job["seed"], **builder_arguments(job["model_kwargs"])[0])
    model.load_weights(outcome["weights"])
    return TrainedModel(
        spec=spec,
        model=model,
        tokenizer=tokenizer,
        seed=job["seed"],
        history=outcome["history"],
        epochs=outcome["epochs"],
        seconds=outcome["seconds"],
    )
