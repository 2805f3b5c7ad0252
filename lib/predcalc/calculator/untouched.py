"""The restart recipe's fresh seeds scored end to end on a family draw never scored before.

The fresh study (:mod:`predcalc.calculator.fresh`) scored seeds 300-309 on notebook 40's held-out draw
(family seed 7777), a draw scored before on the design seeds and on the one-start seeds whose failures
prompted the restarts. Here the same seeds are trained again with the frozen recipe, exactly as the fresh
study trains them, and scored on a draw of a family seed chosen after the recipe was frozen
(:data:`UNTOUCHED_SEED`).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from predcalc.calculator.cache import cached, code_versions
from predcalc.calculator.fresh import DRAW_N, FRESH_MODULES, FRESH_SEEDS, RECORD, held_out_draw
from predcalc.calculator.fresh import PARTS as FRESH_PARTS
from predcalc.calculator.prose import error_bound
from predcalc.calculator.restarts import RECIPE, seed_part
from predcalc.paths import REPORTS, relative
from predcalc.quiet import quiet_tensorflow

#: The family seed of the untouched draw: chosen after the restart recipe and the fresh seeds' record were
#: committed, and before anything was scored on it; no integer from 8317 to 8335 (the seeds its families are
#: drawn with, ``seed + index``) appears anywhere else in lib/, notebooks/, reports/ or tests/.
UNTOUCHED_SEED = 8317
#: Where each seed's part is cached, and the record written.
PARTS = REPORTS / "calculator" / "parts" / "untouched"
RECORD_PATH = RECORD / "calculator_untouched.json"
#: What a retrained step must match of its stored fresh part to count as reproduced: the start kept, the
#: starts taken, the row draws, training-row exactness and the wrong decisions on its reachable inputs.
MATCHED = ("chosen", "starts", "draws", "train_exact", "wrong", "held_out_wrong")


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
    import dataclasses

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


def seed_rows(parts: dict, stored: dict) -> dict:
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
    Clopper-Pearson lower bound on the share of seeds exact on all (:func:`~predcalc.calculator.prose.error_bound`,
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
        "complete": sum(rows[s]["complete"] for s in seeds),
        "reproduced": sum(rows[s]["reproduced"] is True for s in seeds),
        "tries_identical": sum(rows[s]["tries_identical"] is True for s in seeds),
    }


def record(parts: dict, family_seed: int = UNTOUCHED_SEED, n: int = DRAW_N, folder: Path | None = PARTS) -> dict:
    """The untouched draw's record: the draw, the recipe, per-seed rows, the summary and the parts."""
    import dataclasses

    import keras  # the backend the parts were trained on

    rows = seed_rows(parts, {seed: stored_fresh(int(seed)) for seed in parts})
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
    }


def main(argv=None) -> int:
    """``python -m predcalc.calculator.untouched [--seeds 300,301]``: the fresh seeds retrained and scored
    on the untouched draw; writes ``reports/runs/40_calculator/calculator_untouched.json``."""
    parser = argparse.ArgumentParser(prog="python -m predcalc.calculator.untouched")
    parser.add_argument("--seeds", default=None, help="comma-separated seeds (default: the fresh seeds 300-309)")
    args = parser.parse_args(argv)
    quiet_tensorflow()  # TensorFlow's start-up lines off, deterministic kernels (as the fresh parts were trained)
    try:
        seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else list(FRESH_SEEDS)
    except ValueError:
        parser.error(f"--seeds must be comma-separated integers, got {args.seeds!r}")
    payload = record(run_seeds(seeds))
    RECORD_PATH.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")
    print(f"wrote {relative(RECORD_PATH)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
