"""Runs too long for one session, trained one seed per sweep run and listed as one record.

A sweep named in :data:`SEED_SPLIT_SWEEPS` trains one model with one set of parameters, one seed
per run (``predcalc sweep`` resumes an interrupted sweep at the next unfinished seed, so the seeds
of a slow model accumulate over sessions). :func:`seed_split_records` merges each such sweep's
finished runs into one record shaped like a notebook's ``metrics.json`` (every seed's runs under
each model), so the findings list it beside the notebook runs, with the seeds it has so far.
"""

from __future__ import annotations

from pathlib import Path

from predcalc.models.registry import get_spec
from predcalc.report.recipe_ablation import how_trained, trained_parameters
from predcalc.training.sweep import collect

# sweeps/<name>.yaml: the prior report's transformer5 recipe (about 35 minutes a seed on a 2-core CPU),
# transformer4_local (about 15) and transformer4_local with squash_features, which is the registered
# transformer4_local_bounded (the sweep predates that name): sweep -> {model trained: listed as}
SEED_SPLIT_SWEEPS = {
    "transformer5_reference": {},
    "transformer4_local": {},
    "transformer4_local_squash": {"transformer4_local": "transformer4_local_bounded"},
}


def seed_split_records(sweeps: Path, names=SEED_SPLIT_SWEEPS) -> list[dict]:
    """One record per sweep in ``names`` with at least one finished run (see the module doc).

    ``names`` maps each sweep to the models it lists under another registered name (whose label
    the record then carries): a model trained with builder arguments that a registered model fixes.

    Raises ``ValueError`` when the runs of a sweep differ in anything but their seed (they could
    not be averaged as one model's seeds) or repeat a seed.
    """

    names = names if isinstance(names, dict) else dict.fromkeys(names, {})
    records = []
    for name, renamed in names.items():
        runs = collect(name, Path(sweeps))
        if not runs:
            continue
        settings = [{k: v for k, v in run["parameters"].items() if k not in ("seeds", "output_dir")} for run in runs]
        if any(s != settings[0] for s in settings):
            raise ValueError(
                f"sweep {name}: its runs differ in more than the seed; a seed-split sweep "
                "trains one model with one set of parameters"
            )
        models: dict[str, dict] = {}
        for run in runs:
            for model_name, model in run["metrics"]["models"].items():
                if model_name in renamed:
                    model_name = renamed[model_name]
                    model = {**model, "label": get_spec(model_name).label}
                models.setdefault(model_name, {**model, "runs": []})["runs"].extend(model["runs"])
        for model_name, model in models.items():
            seeds = [r["seed"] for r in model["runs"]]
            if len(set(seeds)) != len(seeds):
                raise ValueError(f"sweep {name}: {model_name} has seed(s) trained twice: {sorted(seeds)}")
            model["runs"].sort(key=lambda r: r["seed"])
        first = runs[0]["metrics"]
        seeds = sorted(seed for run in runs for seed in run["parameters"].get("seeds", []))
        records.append(
            {
                **first,
                "models": models,
                "parameters": {**settings[0], "seeds": seeds},
                "_dir": Path(sweeps) / name,
                "_sweep": name,
                "_overrides": {},
                "_profile": f"{how_trained(settings[0])}, one seed per run of sweep {name}",
            }
        )
    return records


def not_superseded(split_records: list[dict], notebook_records: list[dict]) -> list[dict]:
    """The seed-split records less each model that a notebook run of the same notebook trained
    for the same epochs and patience on every seed the sweep has (that run then carries the row,
    and the sweep's "so far" line would only be stale); a record left with no model is dropped."""

    def covered(record, name, model):
        for other in notebook_records:
            theirs = other.get("models", {}).get(name)
            if other.get("notebook") != record.get("notebook") or not theirs or other.get("_sweep"):
                continue
            parameters = trained_parameters(other, theirs)
            same = all(parameters.get(key) == record["parameters"].get(key) for key in ("epochs", "patience"))
            if same and {r["seed"] for r in model["runs"]} <= {r["seed"] for r in theirs.get("runs", [])}:
                return True
        return False

    kept = []
    for record in split_records:
        models = {name: model for name, model in record["models"].items() if not covered(record, name, model)}
        if models:
            kept.append({**record, "models": models})
    return kept


def seed_split_lines(records: list[dict]) -> list[str]:
    """One line per seed-split sweep: how many seeds it has, and each seed's MAE in / out / long."""
    lines = []
    for record in records:
        if not record.get("_sweep"):
            continue
        for model in record["models"].values():
            runs = model["runs"]
            per_seed = "; ".join(
                f"seed {r['seed']}: " + " / ".join(f"{r['metrics'][t]['mae']:.4g}" for t in ("in", "out", "long"))
                for r in runs
            )
            lines.append(
                f"- {model['label']}: {len(runs)} seed{'s' * (len(runs) != 1)} so far, trained by "
                f"`predcalc sweep sweeps/{record['_sweep']}.yaml` (one seed per run; it resumes at the next "
                f"seed). MAE in / out / long per seed: {per_seed}."
            )
    return lines + [""] if lines else []
