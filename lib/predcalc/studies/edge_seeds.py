"""Every seed's model of a recommended model, retrained with its notebook's stored parameters.

A notebook keeps only its first seed's model (``reports/runs/NB/export/NAME/model.keras``). To
score all seeds on the edge suites through their exported files, :func:`retrain_seeds` trains
each seed again through :func:`predcalc.training.fit.train` with the parameters stored in the
notebook's ``metrics.json``, keeps each seed's ``model.keras`` and run record (one folder per seed,
so a stopped run resumes at the first unfinished seed), and :func:`reproduction` compares the
retrained records with the stored ones (is training deterministic here?).

Example:
    >>> retrain_seeds("scan_typed", "30_beyond_reference", "build/edges/models")
    >>> reproduction("scan_typed", "30_beyond_reference", "build/edges/models")
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from predcalc.data import get_tokenizer, reference_protocol
from predcalc.deploy import export as E
from predcalc.deploy.export import SIDECAR, export_directory, write_sidecar
from predcalc.deploy.predictor import Predictor
from predcalc.models import get_spec
from predcalc.paths import RUNS, relative, write_if_changed
from predcalc.studies.edge_models import (  # noqa: F401  (RECOMMENDED, FINISHED_FROM: read through this module too)
    FINISHED_FROM,
    INPUT_LENGTH,
    RECOMMENDED,
    SCORED,
    at_length,
    notebook_of,
)
from predcalc.studies.edges import (
    development_suite,
    heldout_suite,
    refusal,
    spacing_check,
    suite_record,
    third_heldout_suite,
    tokens_needed,
)
from predcalc.training.fit import builder_arguments, evaluate, run_record, train
from predcalc.training.metrics import exact_accuracy, regression_metrics

# the suites every seed's files are scored on: kind -> the function that draws it
SUITES = {"development": development_suite, "heldout": heldout_suite, "third_heldout": third_heldout_suite}


def draw_suites(kinds=tuple(SUITES)) -> dict:
    """``{kind: {set: Split}}`` of the suites named (each drawn once, frozen by its seed)."""
    return {kind: SUITES[kind]() for kind in kinds}


def stored_metrics(notebook: str, runs=RUNS) -> dict:
    """The notebook's stored ``metrics.json``."""
    path = Path(runs) / notebook / "metrics.json"
    if not path.is_file():
        raise FileNotFoundError(f"no stored metrics for {notebook}: {path} does not exist")
    return json.loads(path.read_text())


def training_parameters(name: str, notebook: str, runs=RUNS) -> dict:
    """The keyword arguments of :func:`predcalc.training.fit.train` that the notebook's full run used
    for ``name`` (epochs, patience, batch size, learning rate, model kwargs) and its ``data_seed``."""
    stored = stored_metrics(notebook, runs)
    if name not in stored["models"]:
        raise KeyError(f"{notebook} stored no model {name!r}; it has {sorted(stored['models'])}")
    p = stored["parameters"]
    return {
        "epochs": p["epochs"],
        "patience": p["patience"],
        "batch_size": p["batch_size"],
        "learning_rate": p["learning_rate"],
        "model_kwargs": (p.get("model_kwargs") or {}).get(name),
        "data_seed": p["data_seed"],
    }


def seed_folder(models, name: str, seed: int) -> Path:
    return Path(models) / name / f"seed_{seed}"


def retrain_seeds(
    name: str, notebook: str, models, seeds=(0, 1, 2, 3, 4), runs=RUNS, progress: bool = True
) -> list[dict]:
    """Train ``name`` once per seed with the notebook's stored parameters; each seed's folder under
    ``models/NAME/`` gets ``model.keras`` and ``record.json`` (the run record, scored on the seed
    protocol's test sets). A seed whose record exists is not trained again. Returns the records."""

    parameters = training_parameters(name, notebook, runs)
    data_seed = parameters.pop("data_seed")
    protocol = reference_protocol(data_seed)
    records = []
    for seed in tqdm(list(seeds), desc=f"train {name}", disable=not progress):
        folder = seed_folder(models, name, seed)
        record_path = folder / "record.json"
        if record_path.is_file() and (folder / "model.keras").is_file():
            records.append(json.loads(record_path.read_text()))
            continue
        folder.mkdir(parents=True, exist_ok=True)
        trained = train(name, protocol, seed=seed, **parameters)
        scores, _ = evaluate(trained, protocol.test_sets())
        trained.model.save(folder / "model.keras")
        record = {
            **run_record(trained, scores),
            "model": name,
            "notebook": notebook,
            "parameters": {**parameters, "data_seed": data_seed},
        }
        write_if_changed(record_path, json.dumps(record, indent=1))  # last: a record means a finished seed
        records.append(record)
    return records


def finish_seeds(
    name: str, fitted: str, models, seeds=(0, 1, 2, 3, 4), runs=RUNS, notebook: str | None = None
) -> list[dict]:
    """The seeds of a model whose spec only adds a ``finish`` step to ``fitted`` (the same builder,
    fit and parameters, e.g. ``scan_typed_solved`` after ``scan_typed``): each retrained ``fitted``
    seed's weights, finished by ``name``'s step on the training split, saved and scored like
    :func:`retrain_seeds` (the fit is not run twice). Needs ``fitted``'s seeds in ``models``."""
    import keras

    import predcalc.layers  # noqa: F401  (registers the custom layers)
    from predcalc.data import reference_protocol
    from predcalc.training.fit import TrainedModel, build, evaluate, run_record

    notebook = notebook or notebook_of(name)
    parameters = training_parameters(name, notebook, runs)
    if training_parameters(fitted, notebook, runs) != parameters:
        raise ValueError(f"{name} and {fitted} were trained with different parameters in {notebook}")
    protocol = reference_protocol(parameters["data_seed"])
    records = []
    for seed in seeds:
        folder, source = seed_folder(models, name, seed), seed_folder(models, fitted, seed)
        if (folder / "record.json").is_file() and (folder / "model.keras").is_file():
            records.append(json.loads((folder / "record.json").read_text()))
            continue
        if not (source / "record.json").is_file():
            raise FileNotFoundError(f"{fitted} seed {seed} is not trained yet: {source} has no record.json")
        spec, model, tokenizer = build(name, seed=seed)
        if spec.finish is None:
            raise ValueError(f"{name} has no finish step; train it with retrain_seeds")
        model.set_weights(keras.saving.load_model(source / "model.keras").get_weights())
        x_train = tokenizer.encode_batch(protocol.train.expressions)
        spec.finish(model, x_train, spec.encode_targets(protocol.train.values, tokenizer))
        base = json.loads((source / "record.json").read_text())
        trained = TrainedModel(
            spec=spec,
            model=model,
            tokenizer=tokenizer,
            seed=seed,
            history={"val_loss": [base["best_val_loss"]]},
            epochs=base["epochs"],
            seconds=base["train_seconds"],
        )
        scores, _ = evaluate(trained, protocol.test_sets())
        folder.mkdir(parents=True, exist_ok=True)
        model.save(folder / "model.keras")
        record = {
            **run_record(trained, scores),
            "model": name,
            "notebook": notebook,
            "finished_from": fitted,
            "parameters": parameters,
        }
        write_if_changed(folder / "record.json", json.dumps(record, indent=1))
        records.append(record)
    return records


def reproduction(name: str, notebook: str, models, runs=RUNS) -> dict:
    """Per seed, how far the retrained run lies from the stored one: epochs (stored, retrained),
    best validation loss (both, relative difference) and, per test set, the accuracy and MAE of both
    and their absolute and relative MAE difference. Seeds not yet retrained are left out."""
    stored = {run["seed"]: run for run in stored_metrics(notebook, runs)["models"][name]["runs"]}
    report = {}
    for seed, old in sorted(stored.items()):
        path = seed_folder(models, name, seed) / "record.json"
        if not path.is_file():
            continue
        new = json.loads(path.read_text())
        sets = {}
        for test_set, before in old["metrics"].items():
            after = new["metrics"].get(test_set)
            if after is None:
                continue
            sets[test_set] = {
                "accuracy": [before["accuracy"], after["accuracy"]],
                "mae": [before["mae"], after["mae"]],
                "mae_difference": abs(after["mae"] - before["mae"]),
                "mae_relative_difference": _relative(before["mae"], after["mae"]),
            }
        report[seed] = {
            "epochs": [old["epochs"], new["epochs"]],
            "best_val_loss": [old["best_val_loss"], new["best_val_loss"]],
            "val_loss_relative_difference": _relative(old["best_val_loss"], new["best_val_loss"]),
            "sets": sets,
        }
    return report


def _relative(before: float, after: float) -> float:
    scale = max(abs(before), abs(after))
    return 0.0 if scale == 0 else abs(after - before) / scale


RUNTIME_FILES = {"onnx": "model.onnx", "litert": "model_float32.tflite"}


def seeds_folder(name: str, runs=RUNS) -> Path:
    """Where each seed's exported files of a scored model are written (git keeps their scores)."""
    return Path(runs) / notebook_of(name) / "export" / name / "seeds"


def export_at_length(
    model,
    spec,
    tokenizer,
    directory,
    length: int = INPUT_LENGTH,
    data_seed: int = 0,
    label: dict | None = None,
    source=None,
    model_kwargs: dict | None = None,
) -> dict:
    """Write ``model_float32.tflite`` and ``model.onnx`` of ``model`` rebuilt for ``length`` tokens
    (:func:`predcalc.studies.edge_models.at_length`: at its trained length where a weight depends on
    the length; ``model_kwargs`` go to its builder) with their ``predcalc.json``, and check each file,
    read through :class:`predcalc.deploy.predictor.Predictor`, against the Keras model at its trained
    length on the reference protocol's test sets. Writes and returns ``export.json``'s record; raises
    RuntimeError where a file does not match Keras (the export limits of
    :mod:`predcalc.deploy.export`)."""

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    resized, length = at_length(model, spec, tokenizer, length, model_kwargs)
    longer = type(tokenizer)(**{**tokenizer.get_config(), "length": length})
    E.write_sidecar(directory, spec, longer, {"trained_length": tokenizer.length})
    sets = reference_protocol(data_seed).test_sets()
    keras_values = {
        name: np.asarray(
            spec.predict_values(model, tokenizer.encode_batch(list(split.expressions))), dtype=np.float64
        ).reshape(-1)
        for name, split in sets.items()
    }
    scale = max(1.0, *(float(np.max(np.abs(v))) for v in keras_values.values()))
    E.export_litert(resized, directory / RUNTIME_FILES["litert"], "float32")
    try:
        onnx = E.export_onnx(resized, directory / RUNTIME_FILES["onnx"])
    except Exception:  # noqa: BLE001 - tf2onnx fails in many ways; what it cannot convert, the PyTorch backend may
        onnx = E.export_onnx_torch(resized, directory / RUNTIME_FILES["onnx"])
    report = {}
    for runtime, file in RUNTIME_FILES.items():
        predictor = Predictor(directory / file)
        diffs, change = [], {}
        for name, split in sets.items():
            values = predictor.predict(split.expressions)
            diffs.append(float(np.max(np.abs(values - keras_values[name]))))
            change[name] = exact_accuracy(split.values, values) - exact_accuracy(split.values, keras_values[name])
        record = {
            "bytes": (directory / file).stat().st_size,
            "max_abs_diff": max(diffs),
            "accuracy_change": change,
            "limits": E.input_limits(spec, longer),
        }
        matches = (
            record["max_abs_diff"] <= E.PARITY_RELATIVE_DIFF * scale and min(change.values()) >= -E.PARITY_ACCURACY
        )
        if not matches:
            raise RuntimeError(f"{directory / file} does not match Keras: {record}")
        record.update(verdict="use", reason=f"matches Keras at {tokenizer.length} tokens, read at {length}")
        if runtime == "onnx":
            record.update(batch=onnx["batch"], converter=onnx.get("converter", "tf2onnx"))
        report[runtime] = record
    return E.write_export_record(
        directory,
        spec,
        report,
        {"data_seed": data_seed, **(label or {}), "trained_length": tokenizer.length, "input_length": length},
        source=source,
    )


def export_seeds(
    name: str, models, seeds=(0, 1, 2, 3, 4), runs=RUNS, length: int = INPUT_LENGTH, progress: bool = True
) -> dict:
    """:func:`export_at_length` of each retrained seed into :func:`seeds_folder` ``/seed_N`` (skipping a
    seed whose ``export.json`` exists). Returns ``{seed: record}``."""
    import keras
    from tqdm.auto import tqdm

    import predcalc.layers  # noqa: F401  (registers the custom layers)
    from predcalc.models import get_spec
    from predcalc.training.fit import make_tokenizer

    spec = get_spec(name)
    model_kwargs, _ = builder_arguments(training_parameters(name, notebook_of(name), runs)["model_kwargs"])
    records = {}
    for seed in tqdm(list(seeds), desc=f"export {name}", disable=not progress):
        target = seeds_folder(name, runs) / f"seed_{seed}"
        if (target / "export.json").is_file():
            records[seed] = json.loads((target / "export.json").read_text())
            continue
        source = seed_folder(models, name, seed) / "model.keras"
        records[seed] = export_at_length(
            keras.saving.load_model(source),
            spec,
            make_tokenizer(spec),
            target,
            length,
            label={"seed": seed},
            source=source,
            model_kwargs=model_kwargs,
        )
    return records


def score_exported(directory, suite: dict) -> dict:
    """Each set of ``suite`` (``{name: Split}``) answered by the exported files in ``directory``:
    ``{set: {"accuracy", "mae", "mre", "n", "tokens", "input_length", "runtime": "onnx",
    "litert": {"accuracy", "mae"}, "runtimes_max_abs_diff"}}``, or ``{set: {"not_in_input_language":
    reason}}`` where the tokeniser cannot encode the set, or ``{"too_long": ...}`` where the files'
    input length is too short."""

    directory = Path(directory)
    runners = {runtime: Predictor(directory / file) for runtime, file in RUNTIME_FILES.items()}
    tokenizer = runners["onnx"].tokenizer
    base = type(tokenizer)(**{**tokenizer.get_config(), "length": 1})
    scores = {}
    for name, split in suite.items():
        reason = refusal(tokenizer, split.expressions)
        if reason is not None:
            scores[name] = {"not_in_input_language": reason}
            continue
        tokens = tokens_needed(base, split.expressions)
        if tokens > tokenizer.length:
            scores[name] = {"too_long": f"needs {tokens} tokens; the files read {tokenizer.length}"}
            continue
        values = {runtime: runner.predict(split.expressions) for runtime, runner in runners.items()}
        onnx, litert = (regression_metrics(split.values, values[r]) for r in ("onnx", "litert"))
        scores[name] = {
            "accuracy": onnx["accuracy"],
            "mae": onnx["mae"],
            "mre": onnx["mre"],
            "n": onnx["n"],
            "tokens": tokens,
            "input_length": tokenizer.length,
            "runtime": "onnx",
            "litert": {"accuracy": litert["accuracy"], "mae": litert["mae"]},
            "runtimes_max_abs_diff": float(np.max(np.abs(values["onnx"] - values["litert"]))),
        }
    return scores


def suite_scores(kind: str, suite: dict, scores: dict, models, runs=RUNS) -> dict:
    """The stored record of one suite: its definition (:func:`predcalc.studies.edges.suite_record`)
    and a sentence on it; under ``models`` each model's ``{seed: {set: score}}``
    (``scores[model][seed][kind]``, from :func:`score_exported`); under ``about`` its label, kind
    (trained, or partly built: a closed-form finish after training), notebook, files, whether unspaced
    forms apply to its tokeniser (checked on the suite) and the retraining's :func:`reproduction` of
    the stored runs."""

    record = {"suite": suite_record(kind, suite), "description": _description(kind, suite), "models": {}, "about": {}}
    for name, by_seed in scores.items():
        spec = get_spec(name)
        tokenizer = get_tokenizer(spec.tokenizer, **{**spec.tokenizer_config, "length": files_length(by_seed)})
        expressions = [e for split in suite.values() for e in split.expressions]
        record["models"][name] = {
            int(seed): by_kind[kind] for seed, by_kind in sorted(by_seed.items(), key=lambda item: int(item[0]))
        }
        record["about"][name] = {
            "label": spec.label,
            "kind": "partly built" if spec.finish is not None else "trained",
            "notebook": notebook_of(name),
            "files": f"{relative(seeds_folder(name, runs))}/seed_N",
            "input_length": files_length(by_seed),
            "unspaced_forms": spacing_check(tokenizer, expressions),
            "reproduction": reproduction(name, notebook_of(name), models, runs),
        }
    return record


def files_length(by_seed: dict) -> int:
    """The input length (tokens) a model's exported files read, from their stored scores
    (``{seed: {kind: {set: score}}}``); :data:`INPUT_LENGTH` where no set was read."""
    lengths = {
        score["input_length"]
        for by_kind in by_seed.values()
        for sets in by_kind.values()
        for score in sets.values()
        if "input_length" in score
    }
    if len(lengths) > 1:
        raise ValueError(f"the seeds' files read different input lengths: {sorted(lengths)}")
    return lengths.pop() if lengths else INPUT_LENGTH


# the formats a first seed is re-exported in: full-integer int8 was unsuitable for every recommended
# model at its trained length (it lost 84 to 97 points of exact accuracy), so it is not retried
FIRST_SEED_FORMATS = ("float32", "float16", "int8_dynamic", "onnx")


def reexport_first_seed(name: str, runs=RUNS, length: int = INPUT_LENGTH, formats=FIRST_SEED_FORMATS) -> dict:
    """Rebuild the notebook's stored first-seed ``model.keras`` of ``name`` for ``length`` tokens (the
    same function on every input it read before, :func:`predcalc.studies.edges.at_input_length`), save it
    in place with its ``predcalc.json``, and re-export every format beside it with
    :func:`predcalc.deploy.export.export_directory` (each file checked against Keras on the seed
    protocol; ``export.json`` and the run's ``metrics.json`` updated). Returns the export record."""
    import keras

    import predcalc.layers  # noqa: F401  (registers the custom layers)
    from predcalc.data import get_tokenizer
    from predcalc.models import get_spec
    from predcalc.studies.edges import at_input_length

    folder = Path(runs) / notebook_of(name) / "export" / name
    info = json.loads((folder / SIDECAR).read_text())
    tokenizer = get_tokenizer(info["tokenizer"], **info["tokenizer_config"])
    if tokenizer.length != length:
        model = keras.saving.load_model(folder / "model.keras")
        if int(model.inputs[0].shape[1]) != tokenizer.length:
            raise ValueError(
                f"{folder}: model.keras reads {model.inputs[0].shape[1]} tokens, predcalc.json says {tokenizer.length}"
            )
        at_input_length(model, length).save(folder / "model.keras")
        longer = type(tokenizer)(**{**tokenizer.get_config(), "length": length})
        write_sidecar(folder, get_spec(name), longer, {"trained_length": tokenizer.length})
    return export_directory(folder / "model.keras", formats=formats)


SCORES_FILE = "scores.json"  # beside each seed's exported files: its scores on both suites
MODELS = Path("build") / "edges" / "models"  # each retrained seed's model.keras (git-ignored)
EDGES = Path("reports") / "edges"  # development.json and heldout.json


def score_seed(name: str, seed: int | None, suites: dict, runs=RUNS, refresh: bool = False) -> dict:
    """:func:`score_exported` of one seed's exported files on each suite (``{kind: {set: Split}}``),
    written to ``scores.json`` beside them; a suite it already holds is kept unless ``refresh`` (files
    written again: every suite is scored through the new files). ``seed`` None: the notebook's stored
    first seed, re-exported by :func:`reexport_first_seed`. Returns ``{kind: scores}``."""
    folder = seeds_folder(name, runs).parent if seed is None else seeds_folder(name, runs) / f"seed_{seed}"
    path = folder / SCORES_FILE
    scores = {} if refresh or not path.is_file() else json.loads(path.read_text())
    missing = [kind for kind in suites if kind not in scores]
    if missing:
        scores.update({kind: score_exported(folder, suites[kind]) for kind in missing})
        write_if_changed(path, json.dumps(scores, indent=1))
    return scores


def _description(kind: str, suite: dict) -> str:
    """One sentence on the suite: its seed, size and boxes."""

    about = suite_record(kind)
    boxes = "; ".join(f"`{name}` {box}" for name, box in about["sets"].items())
    role = {
        "development": "the probe that helped choose the recommended variants (its scores are not claims)",
        "heldout": "never used to choose the models it scores (it was development data for the trained exact "
        "scan's recipe, which is claimed on a later suite); no expression is in the development "
        "suite or the reference protocol's training and validation splits",
        "third_heldout": "the one held-out suite every model of the Answer is scored on, through its exported "
        "files: drawn after the trained exact scan's final design froze, never used to choose any model; no "
        "expression is in the development suite, the first or second held-out suite or the reference "
        "protocol's training and validation splits",
    }[kind]
    return (
        f"The {kind.replace('_', ' ')} suite (seed {about['seed']}, {len(next(iter(suite.values())))} expressions a set) is "
        f"{role}: {boxes}."
    )


def _keep_reproduction(record: dict, path: Path) -> None:
    """Where the retrained seeds' records are not on this machine (``build/`` is not kept), keep the
    reproduction the stored record at ``path`` already holds instead of writing an empty one."""
    if not Path(path).is_file():
        return
    before = json.loads(Path(path).read_text()).get("about") or {}
    for name, about in record["about"].items():
        if not about["reproduction"] and (before.get(name) or {}).get("reproduction"):
            about["reproduction"] = before[name]["reproduction"]


def write_suite_records(names=tuple(SCORED), models=MODELS, out=EDGES, runs=RUNS, suites=None) -> list[Path]:
    """``development.json``, ``heldout.json`` and ``third_heldout.json`` in ``out`` (one per suite of
    ``suites``, default :func:`draw_suites`): :func:`suite_scores` of every seed of ``names`` whose
    ``scores.json`` exists, and under ``stored_first_seed`` the scores of each notebook's stored first
    seed (the model its metrics describe) through its re-exported files, where they were scored."""

    suites = suites or draw_suites()
    scores = {}
    for name in names:
        found = sorted(seeds_folder(name, runs).glob(f"seed_*/{SCORES_FILE}"))
        if found:
            scores[name] = {int(p.parent.name.split("_")[1]): json.loads(p.read_text()) for p in found}
    first = {
        name: json.loads((seeds_folder(name, runs).parent / SCORES_FILE).read_text())
        for name in names
        if (seeds_folder(name, runs).parent / SCORES_FILE).is_file()
    }
    paths = []
    for kind, suite in suites.items():
        path = Path(out) / f"{kind}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        scored = {name: by_seed for name, by_seed in scores.items() if all(kind in k for k in by_seed.values())}
        record = suite_scores(kind, suite, scored, models, runs)
        _keep_reproduction(record, path)
        record["stored_first_seed"] = {name: by_kind[kind] for name, by_kind in first.items() if kind in by_kind}
        write_if_changed(path, json.dumps(record, indent=1))
        paths.append(path)
    return paths


def main(argv=None) -> int:
    """``python -m predcalc.studies.edge_seeds STEP NAME [SEEDS]``: ``train`` (retrain, or finish a
    partly built model from its fitted seeds), ``export`` (files at 159 tokens, then their scores),
    ``first`` (re-export the notebook's stored first seed at 159 tokens, or only score its files on a
    suite they miss with ``--score-only``) or ``write`` (the suite records). SEEDS: comma-separated,
    default 0,1,2,3,4."""

    parser = argparse.ArgumentParser(prog="python -m predcalc.studies.edge_seeds")
    parser.add_argument("step", choices=["train", "export", "first", "write"])
    parser.add_argument("names", nargs="*", default=list(SCORED))
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--score-only", action="store_true", help="first: score the stored files, no re-export")
    args = parser.parse_intermixed_args(argv)  # options before or after the names
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.step == "write":
        for path in write_suite_records(args.names):
            print(f"wrote {relative(path)}")
        return 0
    suites = None
    for name in args.names:
        if args.step == "train":
            fitted = FINISHED_FROM.get(name)
            if fitted:
                finish_seeds(name, fitted, MODELS, seeds=seeds)
            else:
                retrain_seeds(name, notebook_of(name), MODELS, seeds=seeds)
        elif args.step == "first":
            if not args.score_only:
                record = reexport_first_seed(name)
                print(name, {fmt: r.get("verdict") for fmt, r in record["formats"].items()})
            suites = suites or draw_suites()
            score_seed(name, None, suites)
        else:
            suites = suites or draw_suites()
            for seed in seeds:  # files written now: every suite is scored through them again
                fresh = not (seeds_folder(name) / f"seed_{seed}" / "export.json").is_file()
                export_seeds(name, MODELS, seeds=[seed], progress=False)
                score_seed(name, seed, suites, refresh=fresh)
                print(f"{name} seed {seed}: exported" if fresh else f"{name} seed {seed}: scored")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
