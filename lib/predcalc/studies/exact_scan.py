"""The sign scan, trained signs in a built form (issue 40): ``scan_exact``, its ablation, and its files
scored on a held-out suite drawn after its design froze. :data:`CHOICES` says which data chose what;
the claim is the third held-out suite (seed 5151), read only through each seed's ONNX and LiteRT files."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import multiprocessing
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from predcalc.data import Split, get_tokenizer, reference_protocol, signed_terms
from predcalc.data.expressions import format_expression
from predcalc.deploy.export import export_trained, write_export_record
from predcalc.deploy.formats import get_format
from predcalc.deploy.predictor import Predictor
from predcalc.paths import save_keras_if_changed
from predcalc.studies.edges import edge_scores, heldout_suite, suite_record, third_heldout_suite
from predcalc.training.exact import ABLATIONS, MODEL, ExactRecipe, ablated, signed_sum_weights, train_exact
from predcalc.training.fit import TrainedModel, build, train
from predcalc.training.metrics import exact_accuracy

# the first held-out edge suite's sets that a type-gated scan can read: development data here
DEVELOPMENT_SETS = ("digits_exactly_3", "digits_exactly_4", "terms_80", "terms_30_digits_3", "nines")
PROTOCOL_SETS = ("in", "out", "long")
FILES = {"onnx": "model.onnx", "litert": "model_float32.tflite"}  # scored through each seed's files
EXPORT_FORMATS = ("float32", "onnx")
# the transformer side probe's sets: those its 15 numeric tokens hold (no rebuild at a longer length)
TRANSFORMER_SETS = ("in", "out", "long", "digits_exactly_3", "digits_exactly_4", "nines")
LONG_TERMS = 300
LONG_SEED = 300  # the rng of the 300-term expression each file answers

CHOICES = {
    "recipe": (
        "the elements and their settings (straight-through gates, closed start, clamp, regulariser ramped over "
        "steps 2,000-5,000 of 10,000, learning rate decayed to 1e-7, float64, no candidate bias) came from a NumPy "
        "probe scored on 3- and 6-digit numbers, 300 terms and 9...9 chains, and were kept unchanged after one Keras "
        "check on the first held-out edge suite (development data here)"
    ),
    "revision": (
        "a first full run scored on the second held-out suite (seed 4040) left 3 of 10 seeds stuck inside the "
        "training box; the soft write gradient and the fixed gate offset were then added, chosen on the protocol's "
        "in and long test sets over 10 seeds (10,000 steps), so the second held-out suite is development data too"
    ),
    "correction": (
        "after the claim was first scored, the candidate, initial state and readout were found to share one random "
        "draw (one Keras initializer object draws the same values on every call); each now draws its own, and "
        "every seed, choosing and fresh, was retrained with the recipe otherwise unchanged; the third held-out "
        "suite had been scored once on the shared starts, and nothing was chosen from that"
    ),
    "ablation": (
        "scored on the development data: the protocol's in, out and long test sets and the first held-out edge "
        "suite's digits_exactly_3, digits_exactly_4, terms_80, terms_30_digits_3 and nines"
    ),
    "claim": (
        "the third held-out suite (seed 5151), drawn after the final design was frozen and scored only through the "
        "exported files, on fresh seeds (10-19 in the full profile) trained with the frozen recipe unchanged; seeds "
        "0-9, on which the revision was chosen, are reported beside them and are not the claim"
    ),
}


def development_sets(protocol, count: int = 0) -> dict[str, Split]:
    """The ablation's development data: the protocol's test sets and :data:`DEVELOPMENT_SETS`."""
    first = heldout_suite(data_seed=protocol.seed)
    sets = {**{n: protocol.test_sets()[n] for n in PROTOCOL_SETS}, **{n: first[n] for n in DEVELOPMENT_SETS}}
    if count > 0:
        sets = {n: split.subset(np.arange(len(split)) < count, split.name) for n, split in sets.items()}
    return sets


def encode_any_length(tokenizer, expressions) -> np.ndarray:
    """Typed tokens padded to the longest expression (at least the tokeniser's own length)."""
    length = max([tokenizer.length, *(len(signed_terms(e)) for e in expressions)])
    return type(tokenizer)(**{**tokenizer.get_config(), "length": length}).encode_batch(list(expressions))


def keras_scores(model, tokenizer, sets: dict[str, Split]) -> dict[str, float]:
    scores = {}
    for name, split in sets.items():
        inputs = encode_any_length(tokenizer, split.expressions)
        predictions = np.concatenate(  # called eagerly: a predict function per length would retrace
            [np.asarray(model(inputs[i : i + 1024]), dtype=np.float64).reshape(-1) for i in range(0, len(inputs), 1024)]
        )
        scores[name] = exact_accuracy(split.values, predictions)
    return scores


def initial_scores(seeds, sets: dict[str, Split], recipe: ExactRecipe | None = None) -> dict[int, dict]:
    """Each seed's model at its initialisation, never trained, scored on ``sets`` (its gates start shut)."""
    recipe = recipe or ExactRecipe()
    scores = {}
    for seed in seeds:
        _, model, tokenizer = build(MODEL, seed=seed, **recipe.layer_arguments())
        scores[int(seed)] = {"scores": keras_scores(model, tokenizer, sets), "weights": signed_sum_weights(model)}
    return scores


def _train_job(data_seed: int, seed: int, fields: dict, sets: dict[str, Split]) -> dict:
    """One training run scored on ``sets``, as a worker process returns it (the weights as arrays)."""
    protocol = reference_protocol(data_seed)
    trained = train_exact(protocol, seed=seed, recipe=ExactRecipe(**fields))
    return {
        "arrays": trained.model.get_weights(),
        "history": trained.history,
        "seconds": trained.seconds,
        "record": {
            "train_seconds": round(trained.seconds, 2),
            "final_loss": trained.history["loss"][-1],
            "weights": signed_sum_weights(trained.model),
            "scores": keras_scores(trained.model, trained.tokenizer, sets),
        },
    }


def _run_jobs(protocol, jobs, sets, workers: int, desc: str, progress: bool) -> list[dict]:
    """:func:`_train_job` per ``(seed, recipe)``, in order, in ``workers`` processes (each run is deterministic)."""
    arguments = [(protocol.seed, int(seed), dataclasses.asdict(recipe), sets) for seed, recipe in jobs]
    bar = tqdm(total=len(arguments), desc=desc, disable=not progress)
    if workers <= 1:
        results = []
        for args in arguments:
            results.append(_train_job(*args))
            bar.update()
    else:
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
            futures = [pool.submit(_train_job, *args) for args in arguments]
            for _ in concurrent.futures.as_completed(futures):
                bar.update()
            results = [future.result() for future in futures]
    bar.close()
    return results


def train_seeds(protocol, seeds, recipe: ExactRecipe, sets: dict[str, Split], progress: bool = True, workers: int = 1):
    """``scan_exact`` trained once per seed: ``({seed: TrainedModel}, {seed: record})``."""
    results = _run_jobs(protocol, [(seed, recipe) for seed in seeds], sets, workers, "train", progress)
    models, records = {}, {}
    for seed, result in zip(seeds, results):
        spec, model, tokenizer = build(MODEL, seed=int(seed), **recipe.layer_arguments())
        model.set_weights(result["arrays"])
        history, epochs = result["history"], recipe.steps // 100
        models[int(seed)] = TrainedModel(spec, model, tokenizer, int(seed), history, epochs, result["seconds"])
        records[int(seed)] = result["record"]
    return models, records


def run_ablation(
    protocol, seeds, recipe: ExactRecipe, sets, names=tuple(ABLATIONS), full=None, progress=True, workers=1
):
    """Each ablation on the same ``seeds``: ``{ablation: {seed: {set: exact accuracy}}}``."""
    runs = {}
    jobs = [(name, seed) for name in names for seed in seeds if not (name == "full" and full)]
    recipes = [(seed, ablated(recipe, name)) for name, seed in jobs]
    results = _run_jobs(protocol, recipes, sets, workers, "ablation", progress)
    for (name, seed), result in zip(jobs, results):
        runs.setdefault(name, {})[int(seed)] = result["record"]["scores"]
    if full:
        runs["full"] = {int(s): full[int(s)]["scores"] for s in seeds}
    return {name: runs[name] for name in names if name in runs}


def exact_on_every_set(per_seed: dict) -> list:
    return [seed for seed, scores in per_seed.items() if all(v == 1.0 for v in scores.values())]


def exact_counts(per_seed: dict) -> dict[str, int]:
    sets = next(iter(per_seed.values()), {})
    return {name: sum(scores[name] == 1.0 for scores in per_seed.values()) for name in sets}


def export_seed(trained, directory, protocol, check: int = 0) -> dict:
    """One seed's ``model.keras``, ONNX and float32 LiteRT files, each checked against Keras."""
    directory = Path(directory)
    test_sets = protocol.test_sets()
    if check:
        test_sets = {n: s.subset(np.arange(len(s)) < check, s.name) for n, s in test_sets.items()}
    report = export_trained(
        trained, directory, test_sets, protocol.train.expressions, formats=EXPORT_FORMATS, saved_model=False
    )
    save_keras_if_changed(trained.model, directory / "model.keras")
    write_export_record(directory, trained.spec, report, {"data_seed": protocol.seed})
    return {
        fmt: {k: record.get(k) for k in ("bytes", "verdict", "reason", "max_abs_diff", "converter", "cast")}
        for fmt, record in report.items()
    }


def file_scores(directory, suite: dict[str, Split]) -> dict[str, dict[str, float]]:
    predictors = {fmt: Predictor(Path(directory) / filename) for fmt, filename in FILES.items()}
    return {
        fmt: {name: exact_accuracy(split.values, predictor.predict(split.expressions)) for name, split in suite.items()}
        for fmt, predictor in predictors.items()
    }


def fresh_seed_run(protocol, seeds, recipe: ExactRecipe, suite, development, output, check=0, workers=1) -> dict:
    """The frozen recipe on fresh ``seeds``, each exported and scored through its files: the ``fresh`` entry."""
    record = {"seeds": [int(s) for s in seeds], "records": {}, "exports": {}}
    record |= {key: {fmt: {} for fmt in FILES} for key in ("heldout", "development")}
    if not seeds:
        return record
    trained, records = train_seeds(protocol, seeds, recipe, development, workers=workers)
    record["records"] = records
    for seed, model in tqdm(trained.items(), desc="fresh exports"):
        folder = Path(output) / "export" / f"scan_exact_fresh_seed_{seed}"
        record["exports"][seed] = export_seed(model, folder, protocol, check=check)
        for key, sets in (("heldout", suite), ("development", development)):
            for fmt, scores in file_scores(folder, sets).items():
                record[key][fmt][seed] = scores
    return record


def long_expression(terms: int = LONG_TERMS, seed: int = LONG_SEED) -> str:
    rng = np.random.default_rng(seed)
    return format_expression(rng.integers(-5, 6, size=terms).tolist(), rng.choice(["+", "-"], size=terms - 1).tolist())


def long_answers(directory, expression: str) -> dict:
    return {fmt: float(Predictor(Path(directory) / f).predict([expression])[0]) for fmt, f in FILES.items()}


def float32_bound(directory) -> dict:
    """The float32 LiteRT file on ``2^24 + 1`` written two ways, and the predictor's refusal of it."""
    directory = Path(directory)
    path = directory / FILES["litert"]
    info = json.loads((directory / "predcalc.json").read_text())
    tokenizer = get_tokenizer(info["tokenizer"], **info.get("tokenizer_config", {}))
    runner = get_format("float32").open(path)
    bound = int(info["float32_exact_below"])
    probes = [f"{bound - 1} + 2", f"{bound} + 1", f"{bound // 2} + {bound // 2 - 1}"]
    answers = {e: float(np.asarray(runner(tokenizer.encode_batch([e]))).reshape(-1)[0]) for e in probes}
    refusal = None
    try:
        Predictor(path).predict([probes[0]])
    except ValueError as error:
        refusal = str(error)
    exact = {e: float(sum(map(int, e.split(" + ")))) for e in probes}
    return {"bound": bound, "answers": answers, "exact": exact, "refusal": refusal}


def transformer_probe(protocol, names, seeds, epochs: int, sets: dict[str, Split], progress=True) -> dict:
    """The gated-readout transformer with and without the scan's readout elements, at a small budget."""
    runs = {}
    sets = {n: split for n, split in sets.items() if n in TRANSFORMER_SETS}
    for name, seed in tqdm([(n, s) for n in names for s in seeds], desc="transformer", disable=not progress):
        trained = train(name, protocol, seed=int(seed), epochs=epochs, patience=epochs)
        scores = edge_scores(trained, sets)
        runs.setdefault(name, {})[int(seed)] = {n: (None if v is None else v["accuracy"]) for n, v in scores.items()}
    return runs


def heldout(count: int, data_seed: int = 0) -> dict[str, Split]:
    return third_heldout_suite(count=count, data_seed=data_seed)


def suite_description(suite: dict[str, Split]) -> dict:
    return suite_record("third_heldout", suite)


def recipe_record(recipe: ExactRecipe) -> dict:
    return dataclasses.asdict(recipe)


NOTEBOOK = "33_trained_exact_scan"


def heldout_texts(records: dict, fresh: dict, heldout: dict, seeds, fresh_seeds, training: int) -> dict[str, str]:
    out = {}
    for fmt in ("onnx", "litert"):
        out[f"fresh_{fmt}"] = f"{len(exact_on_every_set(fresh['heldout'][fmt]))} of {len(fresh_seeds)}"
        out[f"fresh_development_{fmt}"] = f"{len(exact_on_every_set(fresh['development'][fmt]))} of {len(fresh_seeds)}"
        out[f"choosing_{fmt}"] = f"{len(exact_on_every_set(heldout[fmt]))} of {len(seeds)}"
    in_exact = [seed for seed, r in records.items() if r["scores"]["in"] == 1.0]
    stuck = [str(s) for s, r in fresh["records"].items() if r["scores"]["in"] < 1.0]
    return {
        **out,
        "fresh_seeds": ", ".join(map(str, fresh_seeds)) or "none",
        "choosing_seeds": ", ".join(map(str, seeds)),
        "training": f"{training:,}",
        "fresh_stuck": ", ".join(stuck) or "none",
        "in_exact": f"{len(in_exact)}",
        "in_exact_heldout": f"{len(set(in_exact) & set(exact_on_every_set(heldout['onnx'])))}",
    }


def long_texts(long: dict, bound: dict) -> dict[str, str]:
    probe = f"{bound['bound']} + 1"  # 2^24 + 1: the first integer float32 cannot hold
    return {
        "long_exact": f"{long['exact']:.0f}",
        "long_onnx": f"{long['answers']['onnx']:.0f}",
        "long_litert": f"{long['answers']['litert']:.0f}",
        "float32_bound": f"{bound['bound']:,}",
        "float32_probe": probe,
        "float32_answer": f"{bound['answers'][probe]:.0f}",
        "float32_exact": f"{bound['exact'][probe]:.0f}",
    }
