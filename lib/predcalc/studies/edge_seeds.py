"""Every seed of each model the edge study scores (:data:`SCORED`) retrained with its notebook's stored
parameters, exported at :data:`INPUT_LENGTH` tokens and scored through its files (resumable per seed);
a set needing more tokens than the files read is recorded as not read, never as 0."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import keras
import numpy as np
from tqdm.auto import tqdm

import predcalc.layers  # noqa: F401  (registers the custom layers)
from predcalc.data import get_tokenizer, reference_protocol
from predcalc.deploy import export as E
from predcalc.deploy.export import SIDECAR, export_directory, write_sidecar
from predcalc.deploy.predictor import Predictor
from predcalc.models import get_spec
from predcalc.paths import RUNS, relative, write_if_changed
from predcalc.recommended import on_edges
from predcalc.studies.edges import (
    at_input_length,
    development_suite,
    heldout_suite,
    refusal,
    spacing_check,
    suite_record,
    third_heldout_suite,
    tokens_needed,
)
from predcalc.training.fit import TrainedModel, build, builder_arguments, evaluate, make_tokenizer, run_record, train
from predcalc.training.metrics import exact_accuracy, regression_metrics

INPUT_LENGTH = 159  # tokens: 80 numbers and 79 operators, the held-out suite's longest expressions

# the Answer's arithmetic units, scored like the recommended models but not recommended
UNITS = {"nau_nmu": "11_arithmetic_units", "nau_nmu_dense": "11_arithmetic_units"}
# the recommended models the edge study scores, and the notebook whose stored parameters train them
RECOMMENDED = on_edges()
SCORED = {**RECOMMENDED, **UNITS}
# a partly built model -> the trained model whose fit it finishes (same builder, seed and parameters)
FINISHED_FROM = {"scan_typed_solved": "scan_typed", "scan_typed_readout_solved": "scan_typed"}


def notebook_of(name: str) -> str:
    if name not in SCORED:
        raise KeyError(f"the edge study does not score {name!r}; it scores {', '.join(SCORED)}")
    return SCORED[name]


def at_length(model, spec, tokenizer, length: int, model_kwargs: dict | None = None):
    """``(model, length)``: ``model`` rebuilt for ``length`` tokens with the same weights, or as it is."""
    try:
        resized = at_input_length(model, length)
        if _computes(resized):
            return resized, length
    except (ValueError, TypeError):
        pass
    longer = type(tokenizer)(**{**tokenizer.get_config(), "length": length})
    try:
        rebuilt = spec.build(longer, **(model_kwargs or {}))
    except (ValueError, TypeError):
        return model, tokenizer.length
    old, new = model.get_weights(), rebuilt.get_weights()
    if len(old) != len(new) or any(a.shape != b.shape for a, b in zip(old, new)):
        return model, tokenizer.length
    rebuilt.set_weights(old)
    return (rebuilt, length) if _computes(rebuilt) else (model, tokenizer.length)


def _computes(model) -> bool:
    """Whether ``model`` runs on zeros of its input shape (a rebuild can keep a layer built for the old
    length, which only fails when called)."""
    try:
        model(np.zeros((1, *model.inputs[0].shape[1:]), dtype="float32"))
    except Exception:  # noqa: BLE001 - TensorFlow raises its own error types for mismatched shapes
        return False
    return True


# the suites every seed's files are scored on: kind -> the function that draws it
SUITES = {"development": development_suite, "heldout": heldout_suite, "third_heldout": third_heldout_suite}


def draw_suites(kinds=tuple(SUITES)) -> dict:
    return {kind: SUITES[kind]() for kind in kinds}


def stored_metrics(notebook: str, runs=RUNS) -> dict:
    path = Path(runs) / notebook / "metrics.json"
    if not path.is_file():
        raise FileNotFoundError(f"no stored metrics for {notebook}: {path} does not exist")
    return json.loads(path.read_text())


def training_parameters(name: str, notebook: str, runs=RUNS) -> dict:
    """The :func:`predcalc.training.fit.train` arguments of ``name``'s full run, and its ``data_seed``."""
    stored = stored_metrics(notebook, runs)
    if name not in stored["models"]:
        raise KeyError(f"{notebook} stored no model {name!r}; it has {sorted(stored['models'])}")
    p = stored["parameters"]
    fit = {key: p[key] for key in ("epochs", "patience", "batch_size", "learning_rate")}
    return {**fit, "model_kwargs": (p.get("model_kwargs") or {}).get(name), "data_seed": p["data_seed"]}


def seed_folder(models, name: str, seed: int) -> Path:
    return Path(models) / name / f"seed_{seed}"


def _kept(folder: Path) -> dict | None:
    path = folder / "record.json"
    return json.loads(path.read_text()) if path.is_file() and (folder / "model.keras").is_file() else None


def _save(folder: Path, trained, protocol, **about) -> dict:
    scores, _ = evaluate(trained, protocol.test_sets())
    folder.mkdir(parents=True, exist_ok=True)
    trained.model.save(folder / "model.keras")
    record = {**run_record(trained, scores), **about}
    write_if_changed(folder / "record.json", json.dumps(record, indent=1))  # last: a record means a finished seed
    return record


def retrain_seeds(
    name: str, notebook: str, models, seeds=(0, 1, 2, 3, 4), runs=RUNS, progress: bool = True
) -> list[dict]:
    """Train ``name`` per seed with the notebook's stored parameters into ``models/NAME/seed_N`` (resumable)."""
    parameters = training_parameters(name, notebook, runs)
    data_seed = parameters.pop("data_seed")
    protocol = reference_protocol(data_seed)
    records = []
    for seed in tqdm(list(seeds), desc=f"train {name}", disable=not progress):
        folder = seed_folder(models, name, seed)
        record = _kept(folder)
        if record is None:
            trained = train(name, protocol, seed=seed, **parameters)
            about = {"model": name, "notebook": notebook, "parameters": {**parameters, "data_seed": data_seed}}
            record = _save(folder, trained, protocol, **about)
        records.append(record)
    return records


def finish_seeds(
    name: str, fitted: str, models, seeds=(0, 1, 2, 3, 4), runs=RUNS, notebook: str | None = None
) -> list[dict]:
    """A partly built model's seeds: each retrained ``fitted`` seed finished, saved and scored."""
    notebook = notebook or notebook_of(name)
    parameters = training_parameters(name, notebook, runs)
    if training_parameters(fitted, notebook, runs) != parameters:
        raise ValueError(f"{name} and {fitted} were trained with different parameters in {notebook}")
    protocol = reference_protocol(parameters["data_seed"])
    records = []
    for seed in seeds:
        folder, source = seed_folder(models, name, seed), seed_folder(models, fitted, seed)
        if (record := _kept(folder)) is not None:
            records.append(record)
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
        history = {"val_loss": [base["best_val_loss"]]}
        trained = TrainedModel(spec, model, tokenizer, seed, history, base["epochs"], base["train_seconds"])
        about = {"model": name, "notebook": notebook, "finished_from": fitted, "parameters": parameters}
        records.append(_save(folder, trained, protocol, **about))
    return records


def reproduction(name: str, notebook: str, models, runs=RUNS) -> dict:
    """Per retrained seed, how far its epochs, validation loss and test scores lie from the stored run."""
    stored = {run["seed"]: run for run in stored_metrics(notebook, runs)["models"][name]["runs"]}
    report = {}
    for seed, old in sorted(stored.items()):
        path = seed_folder(models, name, seed) / "record.json"
        if not path.is_file():
            continue
        new = json.loads(path.read_text())
        sets = {
            test_set: {
                "accuracy": [before["accuracy"], after["accuracy"]],
                "mae": [before["mae"], after["mae"]],
                "mae_difference": abs(after["mae"] - before["mae"]),
                "mae_relative_difference": _relative(before["mae"], after["mae"]),
            }
            for test_set, before in old["metrics"].items()
            if (after := new["metrics"].get(test_set)) is not None
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
    """``model``'s LiteRT and ONNX files at ``length`` tokens, each checked against Keras: ``export.json``'s record."""
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
    about = {"data_seed": data_seed, **(label or {}), "trained_length": tokenizer.length, "input_length": length}
    return E.write_export_record(directory, spec, report, about, source=source)


def export_seeds(
    name: str, models, seeds=(0, 1, 2, 3, 4), runs=RUNS, length: int = INPUT_LENGTH, progress: bool = True
) -> dict:
    spec = get_spec(name)
    model_kwargs, _ = builder_arguments(training_parameters(name, notebook_of(name), runs)["model_kwargs"])
    records = {}
    for seed in tqdm(list(seeds), desc=f"export {name}", disable=not progress):
        target = seeds_folder(name, runs) / f"seed_{seed}"
        if (target / "export.json").is_file():
            records[seed] = json.loads((target / "export.json").read_text())
            continue
        source = seed_folder(models, name, seed) / "model.keras"
        about = {"label": {"seed": seed}, "source": source, "model_kwargs": model_kwargs}
        records[seed] = export_at_length(
            keras.saving.load_model(source), spec, make_tokenizer(spec), target, length, **about
        )
    return records


def score_exported(directory, suite: dict) -> dict:
    """Each set of ``suite`` answered by the files in ``directory``, or why it was not read."""
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
            **{key: onnx[key] for key in ("accuracy", "mae", "mre", "n")},
            "tokens": tokens,
            "input_length": tokenizer.length,
            "runtime": "onnx",
            "litert": {"accuracy": litert["accuracy"], "mae": litert["mae"]},
            "runtimes_max_abs_diff": float(np.max(np.abs(values["onnx"] - values["litert"]))),
        }
    return scores


def suite_scores(kind: str, suite: dict, scores: dict, models, runs=RUNS) -> dict:
    """One suite's stored record: its definition, each model's ``{seed: {set: score}}`` and ``about``."""
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
    """The stored first-seed model rebuilt for ``length`` tokens, saved in place, every format re-exported."""
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
    """One seed's file scores on each suite ``scores.json`` lacks (``seed`` None: the stored first seed)."""
    folder = seeds_folder(name, runs).parent if seed is None else seeds_folder(name, runs) / f"seed_{seed}"
    path = folder / SCORES_FILE
    scores = {} if refresh or not path.is_file() else json.loads(path.read_text())
    missing = [kind for kind in suites if kind not in scores]
    if missing:
        scores.update({kind: score_exported(folder, suites[kind]) for kind in missing})
        write_if_changed(path, json.dumps(scores, indent=1))
    return scores


def _description(kind: str, suite: dict) -> str:
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
    """Keep the stored reproduction where the retrained seeds (``build/``) are not on this machine."""
    if not Path(path).is_file():
        return
    before = json.loads(Path(path).read_text()).get("about") or {}
    for name, about in record["about"].items():
        if not about["reproduction"] and (before.get(name) or {}).get("reproduction"):
            about["reproduction"] = before[name]["reproduction"]


def write_suite_records(names=tuple(SCORED), models=MODELS, out=EDGES, runs=RUNS, suites=None) -> list[Path]:
    """One record per suite in ``out``: every scored seed, and the stored first seed's scores."""
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
    suites = draw_suites() if args.step in ("first", "export") else None
    for name in args.names:
        if args.step == "train":
            if fitted := FINISHED_FROM.get(name):
                finish_seeds(name, fitted, MODELS, seeds=seeds)
            else:
                retrain_seeds(name, notebook_of(name), MODELS, seeds=seeds)
        elif args.step == "first":
            if not args.score_only:
                record = reexport_first_seed(name)
                print(name, {fmt: r.get("verdict") for fmt, r in record["formats"].items()})
            score_seed(name, None, suites)
        else:
            for seed in seeds:  # files written now: every suite is scored through them again
                fresh = not (seeds_folder(name) / f"seed_{seed}" / "export.json").is_file()
                export_seeds(name, MODELS, seeds=[seed], progress=False)
                score_seed(name, seed, suites, refresh=fresh)
                print(f"{name} seed {seed}: exported" if fresh else f"{name} seed {seed}: scored")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
