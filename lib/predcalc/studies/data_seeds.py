"""Does a result hold on another draw of the protocol's data? The models exact on the protocol's three
test sets, retrained on data seeds 1 and 2 with their stored parameters, 5 seeds each, scored in Keras;
nothing is chosen from it. Each run is one file under ``reports/data_seeds/MODEL/`` (resumable)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tqdm.auto import tqdm

from predcalc.data import reference_protocol
from predcalc.paths import DATA_SEEDS, write_if_changed
from predcalc.studies.edge_seeds import training_parameters
from predcalc.training.exact import MODEL as EXACT_MODEL
from predcalc.training.exact import ExactRecipe, train_exact
from predcalc.training.fit import evaluate, train

# the protocol-exact models that train in under a minute a seed -> the notebook of their parameters
MODELS = {"scan_typed": "30_beyond_reference", "nau_nmu": "11_arithmetic_units", EXACT_MODEL: None}
DATA_SEEDS_STUDIED = (1, 2)
SEEDS = (0, 1, 2, 3, 4)
TEST_SETS = ("in", "out", "long")


def run_path(model: str, data_seed: int, seed: int, out=DATA_SEEDS) -> Path:
    return Path(out) / model / f"data_{data_seed}_seed_{seed}.json"


def train_one(model: str, data_seed: int, seed: int) -> dict:
    """One run on data seed ``data_seed`` with training seed ``seed``, scored on that draw's test sets."""
    protocol = reference_protocol(data_seed)
    if model == EXACT_MODEL:
        trained = train_exact(protocol, seed=seed, recipe=ExactRecipe())
    else:
        if model not in MODELS:
            raise ValueError(f"model must be one of {sorted(MODELS)}. Received: {model!r}")
        parameters = training_parameters(model, MODELS[model])
        parameters.pop("data_seed")
        trained = train(model, protocol, seed=seed, **parameters)
    sets = {name: split for name, split in protocol.test_sets().items() if name in TEST_SETS}
    metrics, _ = evaluate(trained, sets)
    return {
        "model": model,
        "data_seed": data_seed,
        "seed": seed,
        "accuracy": {name: metrics[name]["accuracy"] for name in TEST_SETS},
        "epochs": trained.epochs,
        "train_seconds": round(trained.seconds, 1),
    }


def run_study(models=tuple(MODELS), data_seeds=DATA_SEEDS_STUDIED, seeds=SEEDS, out=DATA_SEEDS) -> int:
    """Train every missing (model, data seed, seed) run and write its file; returns how many ran."""
    for model in models:
        if model not in MODELS:
            raise ValueError(f"model must be one of {sorted(MODELS)}. Received: {model!r}")
    jobs = [(m, d, s) for m in models for d in data_seeds for s in seeds if not run_path(m, d, s, out).is_file()]
    for model, data_seed, seed in tqdm(jobs, desc="data seeds", unit="run"):
        record = train_one(model, data_seed, seed)
        path = run_path(model, data_seed, seed, out)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_if_changed(path, json.dumps(record, indent=1))
    return len(jobs)


def summary(out=DATA_SEEDS) -> dict:
    """``{model: {data seed: {seeds, exact_seeds, low, high}}}`` from the stored runs."""
    result: dict = {}
    for path in sorted(Path(out).glob("*/data_*_seed_*.json")):
        record = json.loads(path.read_text())
        by_seed = result.setdefault(record["model"], {}).setdefault(str(record["data_seed"]), [])
        by_seed.append(record)
    for by_data in result.values():
        for data_seed, records in by_data.items():
            exact = [r["seed"] for r in records if all(r["accuracy"][n] == 1.0 for n in TEST_SETS)]
            by_data[data_seed] = {
                "seeds": sorted(r["seed"] for r in records),
                "exact_seeds": sorted(exact),
                "low": {n: min(r["accuracy"][n] for r in records) for n in TEST_SETS},
                "high": {n: max(r["accuracy"][n] for r in records) for n in TEST_SETS},
            }
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m predcalc.studies.data_seeds")
    parser.add_argument("models", nargs="*", default=list(MODELS))
    args = parser.parse_args(argv)
    run_study(tuple(args.models))
    for model, by_data in summary().items():
        for data_seed, about in by_data.items():
            print(f"{model} data seed {data_seed}: {len(about['exact_seeds'])}/{len(about['seeds'])} exact")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
