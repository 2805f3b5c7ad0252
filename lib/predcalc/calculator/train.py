"""Training the calculator: step targets from reference traces, coverage, fitting, checking.

1. Draw expressions from the training world and evaluate them with the engine driven by the
   reference steps, recording every step input (the scratchpad).
2. Coverage: compare the recorded inputs of each step with every input that can occur. The
   coverage-checked recipe adds expressions with digits biased to 7-9 until nothing is missing;
   the uniform recipe keeps what uniform digits gave.
3. Fit each step network on its recorded inputs (reference targets) and check it exhaustively.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from predcalc.calculator.engine import Engine
from predcalc.calculator.nets import check_step, numpy_step, train_step
from predcalc.calculator.rules import RULES, train_control, train_rule
from predcalc.calculator.steps import STEPS, TableStep
from predcalc.data.calculator_families import TRAINING_WORLD, World, draw


def reference_steps() -> dict:
    """The reference's step functions, tabulated on their domains (fast; the same values)."""
    return {name: TableStep(name, step.reference) for name, step in STEPS.items()}


def trace(world: World, n: int, seed: int) -> dict[str, np.ndarray]:
    """Every step input recorded while the reference evaluates ``n`` expressions of ``world``
    (unique rows per step), plus ``sequences``: the token kinds of every reduction round."""
    record: dict = {}
    Engine(reference_steps(), record=record).evaluate([text for text, _ in draw(world, n, seed)])
    out = {
        name: np.unique(np.concatenate(rows), axis=0)
        for name, rows in record.items()
        if name != "sequences" and ":" not in name
    }
    out.update({name: rows for name, rows in record.items() if name == "sequences" or ":" in name})
    return out


def missing(name: str, rows: np.ndarray) -> np.ndarray:
    """Reachable inputs of a step that ``rows`` does not contain."""
    step = STEPS[name]
    seen = set(step.index(rows).tolist()) if len(rows) else set()
    reachable = step.reachable()
    return reachable[[code not in seen for code in step.index(reachable).tolist()]]


def merge(a: dict, b: dict) -> dict:
    out = {}
    for name in set(a) | set(b):
        if name == "sequences" or ":" in name:
            out[name] = list(a.get(name, [])) + list(b.get(name, []))
        else:
            out[name] = np.unique(np.concatenate([x for x in (a.get(name), b.get(name)) if x is not None]), axis=0)
    return out


@dataclasses.dataclass
class Recipe:
    """How the training data is made."""

    expressions: int = 400
    seed: int = 0
    coverage_checked: bool = True
    biased_rounds: int = 200  # the top-ups of biased expressions stop when nothing is missing (or raise here)
    world: World = TRAINING_WORLD


def training_data(recipe: Recipe) -> tuple[dict, dict]:
    """Step inputs for training and a coverage report (inputs seen / reachable, per step)."""
    data = trace(recipe.world, recipe.expressions, recipe.seed)

    def incomplete() -> bool:
        empty = {n: np.zeros((0, len(STEPS[n].inputs)), np.int64) for n in STEPS}
        return any(len(missing(n, data.get(n, empty[n]))) for n in STEPS if n != "control")

    rounds = 0
    if recipe.coverage_checked:
        biased = dataclasses.replace(recipe.world, bias_high_digits=0.5, repeat=0.3)
        while incomplete():
            if rounds == recipe.biased_rounds:
                raise RuntimeError(f"step inputs still missing after {rounds} top-ups of biased expressions")
            rounds += 1
            data = merge(data, trace(biased, recipe.expressions // 4, 10_000 * (recipe.seed + 1) + rounds))
    report = {}
    for name in STEPS:
        rows = data.get(name, np.zeros((0, len(STEPS[name].inputs)), np.int64))
        report[name] = {
            "seen": int(len(rows)),
            "reachable": int(len(STEPS[name].reachable())),
            "missing": int(len(missing(name, rows))),
        }
    report["biased_rounds"] = rounds
    return data, report


def train_calculator(recipe: Recipe, seed: int, names=tuple(STEPS), progress=None) -> dict:
    """Train every step network; returns networks, training stats, exhaustive checks and timings."""
    start = time.perf_counter()
    data, coverage = training_data(recipe)
    networks, stats, checks = {}, {}, {}
    for name in names:
        began = time.perf_counter()
        model, info = train_step(name, data[name], seed=seed)
        info["seconds"] = time.perf_counter() - began
        info["examples"] = int(len(data[name]))
        networks[name] = model
        stats[name] = info
        checks[name] = check_step(name, numpy_step(model))
        if progress:
            progress(name, info, checks[name])
    return {
        "networks": networks,
        "stats": stats,
        "checks": checks,
        "coverage": coverage,
        "seconds": time.perf_counter() - start,
        "data": data,
    }


def engine_from(networks: dict, tabulate: bool = True, **kwargs) -> Engine:
    """An engine running trained networks (tabulated on their input domain, or a forward pass per call)."""
    steps = {}
    for name, model in networks.items():
        function = numpy_step(model) if hasattr(model, "get_weights") else model  # Keras -> NumPy
        steps[name] = TableStep(name, function) if tabulate else function
    return Engine(steps, **kwargs)


#: Steps with at most this many reachable inputs are tiny tables: trained on every row, called memorised.
TINY = 50
#: A step with more reachable inputs is trained on at most this share of them.
SHARE = 1 / 3


def rule_training_rows(data: dict, seed: int) -> dict[str, np.ndarray]:
    """Per step, the distinct inputs it is trained on: for a step of more than :data:`TINY` reachable
    inputs, at most a third of them, drawn (fixed by ``seed``) from those the traces showed; a tiny
    table's every row."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, step in STEPS.items():
        reachable = step.reachable()
        if len(reachable) <= TINY:
            out[name] = reachable
            continue
        seen = data.get(name, np.zeros((0, len(step.inputs)), np.int64))
        seen = seen[np.isin(step.index(seen), step.index(reachable))]  # the traced inputs that can occur
        keep = min(len(seen), int(len(reachable) * SHARE))
        out[name] = seen[np.sort(rng.choice(len(seen), keep, replace=False))]
    return out


def train_rules(seed: int, expressions: int = 200, world: World = TRAINING_WORLD, progress=None) -> dict:
    """Rung 2 of the ladder: the digit steps as rule networks and the control as pair scores over
    relations of kind features (:mod:`predcalc.calculator.rules`), each on at most a third of its reachable
    inputs taken from traces of ``expressions`` short expressions (no coverage top-ups); the tiny
    tables (sign, xor, lead) on all their rows, memorised.

    Returns networks, the rows each was trained on, per-step records (reachable, trained_on,
    held_out_wrong, wrong, memorised; the control also its training margin and level thresholds) and
    timings."""

    start = time.perf_counter()
    data = trace(world, expressions, seed)
    rows = rule_training_rows(data, seed)
    networks, steps = {}, {}
    for name, step in STEPS.items():
        began = time.perf_counter()
        if name in RULES:
            model, info = train_rule(name, rows[name], seed=seed)
        elif name == "control":
            model, info = train_control(rows[name], seed=seed)
        else:
            model, info = train_step(name, rows[name], seed=seed)
        networks[name] = model
        reachable = step.reachable()
        function = numpy_step(model)
        wrong = ~np.all(np.asarray(function(reachable)) == step.reference(reachable), axis=1)
        held_out = ~np.isin(step.index(reachable), step.index(rows[name]))
        steps[name] = {
            "reachable": int(len(reachable)),
            "trained_on": int(len(np.unique(rows[name], axis=0))),
            "held_out_wrong": int((wrong & held_out).sum()),
            "wrong": int(wrong.sum()),
            "memorised": bool(len(reachable) <= TINY),
            "parameters": int(model.count_params()),
            "epochs": info["epochs"],
            "train_exact": info["train_exact"],
            "seconds": round(time.perf_counter() - began, 1),
        }
        if name == "control":  # the smallest training margin and the two learned level thresholds
            steps[name].update(margin=round(info["margin"], 3), thresholds=[round(t, 3) for t in info["thresholds"]])
        if progress:
            progress(name, steps[name])
    return {"networks": networks, "steps": steps, "rows": rows, "seconds": time.perf_counter() - start}
