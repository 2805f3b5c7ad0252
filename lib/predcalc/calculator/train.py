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
from predcalc.calculator.nets import DenseStep, check_step, train_step
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
    out = {name: np.unique(np.concatenate(rows), axis=0) for name, rows in record.items()
           if name != "sequences" and ":" not in name}
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
        report[name] = {"seen": int(len(rows)), "reachable": int(len(STEPS[name].reachable())),
                        "missing": int(len(missing(name, rows)))}
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
        checks[name] = check_step(name, DenseStep.from_model(model))
        if progress:
            progress(name, info, checks[name])
    return {"networks": networks, "stats": stats, "checks": checks, "coverage": coverage,
            "seconds": time.perf_counter() - start, "data": data}


def engine_from(networks: dict, tabulate: bool = True, **kwargs) -> Engine:
    """An engine running trained networks (tabulated on their input domain, or a forward pass per call)."""
    steps = {}
    for name, model in networks.items():
        function = DenseStep.from_model(model) if hasattr(model, "get_weights") else model  # Keras -> NumPy
        steps[name] = TableStep(name, function) if tabulate else function
    return Engine(steps, **kwargs)
