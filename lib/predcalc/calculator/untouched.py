"""The restart recipe's fresh seeds scored end to end on a family draw never scored before.

The fresh study (:mod:`predcalc.calculator.fresh`) scored seeds 300-309 on notebook 40's held-out draw
(family seed 7777), a draw scored before on the design seeds and on the one-start seeds whose failures
prompted the restarts. Here the same seeds are trained again with the frozen recipe, exactly as the fresh
study trains them, and scored on a draw of a family seed chosen after the recipe was frozen
(:data:`UNTOUCHED_SEED`). Each retrained seed is checked against its stored fresh part (:func:`reproduction`);
with ``--litert`` its steps are also exported as one LiteRT file and its calculator scored through that file.

Run: ``python -m predcalc.calculator.untouched [--litert]``, caching each seed's part under
``reports/calculator/parts/untouched/`` (:data:`PARTS`) and writing :data:`RECORD_PATH`.
"""

from __future__ import annotations

if __name__ == "__main__":  # run as a command: TensorFlow's start-up lines off before the imports below load it
    from predcalc.quiet import quiet_tensorflow

    quiet_tensorflow()

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path

from predcalc.calculator.cache import cached, code_versions
from predcalc.calculator.fresh import DRAW_N, FRESH_MODULES, FRESH_SEEDS, RECORD, held_out_draw
from predcalc.calculator.fresh import PARTS as FRESH_PARTS
from predcalc.calculator.restarts import RECIPE, covering_rows, seed_part, train_step_with_recipe
from predcalc.calculator.steps import STEPS
from predcalc.calculator.tables import error_bound
from predcalc.calculator.train import trace
from predcalc.data.calculator_families import TRAINING_WORLD
from predcalc.paths import REPORTS, relative

#: The family seed of the untouched draw: chosen after the restart recipe and the fresh seeds' record were
#: committed, and before anything was scored on it; none of 8317 to 8335 (the seeds its families are drawn
#: with, ``seed + index``) was used as a seed anywhere in lib/, notebooks/, reports/ or tests/ (searched
#: before: the only match is the digits of a measured error in a report).
UNTOUCHED_SEED = 8317
#: Where each seed's part is cached, and the record written.
PARTS = REPORTS / "calculator" / "parts" / "untouched"
RECORD_PATH = RECORD / "calculator_untouched.json"
#: What a retrained step must match of its stored fresh part to count as reproduced: the start kept, the
#: starts taken, the row draws, training-row exactness and the wrong decisions on its reachable inputs.
MATCHED = ("chosen", "starts", "draws", "train_exact", "wrong", "held_out_wrong")
#: What :func:`summary` counts the seeds of where a seed's row says so: every step exact on every input, the
#: steps reproduced, every start's record identical.
COUNTED = ("complete", "reproduced", "tries_identical")


def stored_fresh(seed: int, folder: Path = FRESH_PARTS) -> dict | None:
    """The fresh study's stored part of ``seed`` (``fresh_SEED-DIGEST.json``), None where there is not one."""
    found = sorted(Path(folder).glob(f"fresh_{int(seed)}-*.json"))
    return json.loads(found[0].read_text())["result"] if len(found) == 1 else None


def _decisive(step: dict) -> dict:
    return {
        "chosen": step["chosen"],
        "starts": len(step["tries"]),
        "draws": step.get("draws", 1),
        "train_exact": step["train_exact"],
        "wrong": step["wrong"],
        "held_out_wrong": step["held_out_wrong"],
    }


def reproduction(part: dict, stored: dict | None) -> dict:
    """Whether each retrained step of ``part`` matches its stored fresh part on :data:`MATCHED` (and whether
    every start's record, offsets and value errors included, is identical): ``{"reproduced", "steps",
    "tries_identical"}``; ``reproduced`` is None without a stored part."""
    if stored is None:
        return {"reproduced": None, "steps": {}, "tries_identical": None}
    steps = {
        name: name in stored["steps"] and _decisive(step) == _decisive(stored["steps"][name])
        for name, step in part["steps"].items()
    }
    same_names = set(part["steps"]) == set(stored["steps"])
    identical = same_names and all(
        step["tries"] == stored["steps"][name]["tries"] for name, step in part["steps"].items()
    )
    return {"reproduced": same_names and all(steps.values()), "steps": steps, "tries_identical": identical}


def _scored_part(seed: int, draw: dict) -> dict:
    began = time.perf_counter()
    part = seed_part(seed, RECIPE, draw=draw, names=None, options=None)  # as the fresh study trains each seed
    return {**part, "seconds": round(time.perf_counter() - began, 1)}


def run_seeds(seeds=FRESH_SEEDS, folder: Path | None = PARTS, family_seed: int = UNTOUCHED_SEED, n: int = DRAW_N):
    """Each seed trained with :data:`~predcalc.calculator.restarts.RECIPE` and scored end to end on the draw
    of ``family_seed`` (:func:`~predcalc.calculator.fresh.held_out_draw`: ``n`` a family), cached as
    ``folder/untouched_SEED-DIGEST.json``, with a progress bar."""
    from tqdm.auto import tqdm  # only when seeds are trained

    draw = held_out_draw(n, family_seed)
    out = {}
    for seed in tqdm(list(seeds), desc="calculator untouched seeds", leave=False):
        parameters = {
            "seed": int(seed),
            "recipe": dataclasses.asdict(RECIPE),
            "options": {},
            "draw_n": n,
            "draw_seed": family_seed,
        }
        out[str(seed)] = cached(
            folder,
            f"untouched_{seed}",
            lambda seed=seed: _scored_part(seed, draw),
            parameters=parameters,
            modules=FRESH_MODULES,
        )
    return out


def per_seed_rows(parts: dict, stored: dict) -> dict:
    """Per seed: the exact answers per family and over the draw, seconds taken, and :func:`reproduction`
    against ``stored`` (``{seed: fresh part or None}``)."""
    rows = {}
    for seed in sorted(parts, key=int):
        scored = parts[seed]["end_to_end"]
        rows[seed] = {
            "exact": scored["exact"],
            "n": scored["n"],
            "families": scored["families"],
            "complete": all(step["wrong"] == 0 for step in parts[seed]["steps"].values()),
            "seconds": parts[seed].get("seconds"),
            **reproduction(parts[seed], stored.get(seed)),
        }
    return rows


def summary(rows: dict, confidence: float = 0.95) -> dict:
    """Over seeds: how many answer the whole draw exactly, the lowest and highest share, the one-sided
    Clopper-Pearson lower bound on the share of seeds exact on all (:func:`~predcalc.calculator.tables.error_bound`,
    as the fresh study's), how many have every step exact on every input and how many reproduced."""
    seeds = sorted(rows, key=int)
    exact = [rows[s]["exact"] for s in seeds]
    n = rows[seeds[0]]["n"]
    if any(rows[s]["n"] != n for s in seeds):
        raise ValueError("every seed must be scored on the same draw")
    exact_seeds = sum(e == n for e in exact)
    return {
        "seeds": [int(s) for s in seeds],
        "n": n,
        "exact": exact,
        "exact_seeds": exact_seeds,
        "min": min(exact) / n,
        "max": max(exact) / n,
        "confidence": confidence,
        "lower_bound": 1 - error_bound(len(seeds) - exact_seeds, len(seeds), confidence),
        **{key: sum(rows[s].get(key) is True for s in seeds) for key in COUNTED},
    }


def litert_part(seed: int, draw: dict, expressions: int = 200) -> dict:
    """``seed``'s steps trained again as :func:`~predcalc.calculator.restarts.seed_part` trains them (the same
    rows and recipe), exported as one LiteRT file (:func:`~predcalc.calculator.export.export_litert`) and its
    calculator scored through that file on ``draw`` (forward passes, :class:`~predcalc.calculator.runtime.Calculator`,
    as notebook 40 scores its files): the start kept per step, the inputs each step's signature decides
    otherwise than its network (:func:`~predcalc.calculator.export.parity`, every input of its domain), and the
    exact answers per family."""
    from predcalc.calculator.export import export_litert, parity  # TensorFlow and LiteRT only when files are scored
    from predcalc.calculator.runtime import Calculator
    from predcalc.calculator.study import score_families

    began = time.perf_counter()
    rows, _ = covering_rows(trace(TRAINING_WORLD, expressions, seed), seed)
    networks, chosen = {}, {}
    for name in STEPS:
        networks[name], info = train_step_with_recipe(name, rows[name], seed, RECIPE, None)
        chosen[name] = info["chosen"]
    with tempfile.TemporaryDirectory() as folder:
        path = export_litert(networks, Path(folder) / "calculator.tflite", info={"seed": int(seed)})
        mismatches = parity(networks, path)
        scores = score_families(Calculator(path).answers, draw)
    families = {name: {"exact": round(v["exact"] * v["n"]), "n": v["n"]} for name, v in scores.items()}
    return {
        "seed": int(seed),
        "chosen": chosen,
        "parity": mismatches,
        "end_to_end": {
            "exact": sum(v["exact"] for v in families.values()),
            "n": sum(v["n"] for v in families.values()),
            "families": families,
        },
        "seconds": round(time.perf_counter() - began, 1),
    }


def run_litert(seeds=FRESH_SEEDS, folder: Path | None = PARTS, family_seed: int = UNTOUCHED_SEED, n: int = DRAW_N):
    """:func:`litert_part` of each seed on the draw of ``family_seed``, cached as ``folder/litert_SEED-DIGEST.json``."""
    from tqdm.auto import tqdm  # only when seeds are trained

    draw = held_out_draw(n, family_seed)
    out = {}
    for seed in tqdm(list(seeds), desc="calculator untouched seeds, LiteRT", leave=False):
        parameters = {"seed": int(seed), "recipe": dataclasses.asdict(RECIPE), "draw_n": n, "draw_seed": family_seed}
        out[str(seed)] = cached(
            folder,
            f"litert_{seed}",
            lambda seed=seed: litert_part(seed, draw),
            parameters=parameters,
            modules=FRESH_MODULES,
        )
    return out


def litert_rows(litert: dict, parts: dict) -> dict:
    """Per seed scored through its LiteRT file: exact answers, signature mismatches, and whether the starts
    kept are those of its NumPy-table part."""
    rows = {}
    for seed in sorted(litert, key=int):
        scored = litert[seed]["end_to_end"]
        part = parts.get(seed)
        rows[seed] = {
            "exact": scored["exact"],
            "n": scored["n"],
            "families": scored["families"],
            "mismatches": sum(litert[seed]["parity"].values()),
            "same_starts": part is not None
            and litert[seed]["chosen"] == {name: step["chosen"] for name, step in part["steps"].items()},
            "seconds": litert[seed].get("seconds"),
        }
    return rows


def record(
    parts: dict, family_seed: int = UNTOUCHED_SEED, n: int = DRAW_N, folder: Path | None = PARTS, litert=None
) -> dict:
    """The untouched draw's record: the draw, the recipe, per-seed rows, the summary and the parts; with
    ``litert`` (:func:`run_litert` of the same seeds) also the scores through each seed's LiteRT file."""
    import keras  # the backend the parts were trained on

    rows = per_seed_rows(parts, {seed: stored_fresh(int(seed)) for seed in parts})
    extra = {}
    if litert and set(litert) == set(parts):
        through = litert_rows(litert, parts)
        extra = {
            "litert": {
                "per_seed": through,
                "summary": {
                    **{k: v for k, v in summary(through).items() if k not in COUNTED},
                    "mismatches": sum(r["mismatches"] for r in through.values()),
                    "same_starts": sum(r["same_starts"] for r in through.values()),
                },
                "seeds": litert,
            }
        }
    return {
        "kind": "untouched",
        "draw": {
            "family_seed": family_seed,
            "n": n,
            "families": sorted(next(iter(parts.values()))["end_to_end"]["families"]),
        },
        "recipe": dataclasses.asdict(RECIPE),
        "runtime": "numpy tables",
        "backend": keras.backend.backend(),
        "matched": list(MATCHED),
        "per_seed": rows,
        "summary": summary(rows),
        "seeds": parts,
        "code_versions": code_versions(folder) if folder and Path(folder).is_dir() else [],
        **extra,
    }


def main(argv=None) -> int:
    """``python -m predcalc.calculator.untouched [--seeds 300,301]``: the fresh seeds retrained and scored
    on the untouched draw; writes ``reports/runs/40_calculator/calculator_untouched.json``."""
    parser = argparse.ArgumentParser(prog="python -m predcalc.calculator.untouched")
    parser.add_argument("--seeds", default=None, help="comma-separated seeds (default: the fresh seeds 300-309)")
    parser.add_argument("--litert", action="store_true", help="also score each seed through its exported LiteRT file")
    args = parser.parse_args(argv)
    try:
        seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else list(FRESH_SEEDS)
    except ValueError:
        parser.error(f"--seeds must be comma-separated integers, got {args.seeds!r}")
    payload = record(run_seeds(seeds), litert=run_litert(seeds) if args.litert else None)
    RECORD_PATH.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")
    print(f"wrote {relative(RECORD_PATH)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
