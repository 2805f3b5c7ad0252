"""Training the rule rung's steps with restarts selected by their training rows, and scoring a seed.

The training rows (:func:`covering_rows`): the shipped draw of a third of each step's traced inputs,
drawn again only where a rule step's rows miss a region of its staircase that the traces show.

:class:`Restarts` (the recipe, :data:`RECIPE`): each step trained from a random start is trained
from the seed's own start first (so a seed whose first start fits is unchanged); where that start
does not meet the step's own stopping rule within its budget (every training row right, the trainer
stopping before its step cap: :func:`fits`), it is trained again from another start
(``seed + stride x i``), up to ``tries`` starts; the first start that fits is kept, else the one with
the most training rows right (the earliest on a tie, :func:`best_try`). Only the training rows
select. The control starts from zero weights (a deterministic fit), so it is trained once.
:func:`seed_part` trains every step of one seed this way, checks each on every reachable input and
scores the seed's calculator end to end on a draw (:func:`score_draw`).
Why restarts, and which data chose them: :mod:`predcalc.calculator.fresh`.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from predcalc.calculator.engine import Engine, answer_text
from predcalc.calculator.given_ablations import RULE_STEPS, held_out_check
from predcalc.calculator.nets import numpy_step, train_step
from predcalc.calculator.rules import RULES, train_control, train_rule
from predcalc.calculator.steps import STEPS
from predcalc.calculator.train import SHARE, engine_from, rule_training_rows, trace
from predcalc.data.calculator_families import TRAINING_WORLD
from predcalc.data.exact_answers import score_answers

#: The step caps of the trainers (their defaults): a start that runs to the cap has not met its stopping rule.
RULE_CAP, TABLE_CAP = 4000, 2000


@dataclasses.dataclass(frozen=True)
class Restarts:
    """How many starts a step may take and how they are seeded (try ``i`` starts from ``seed + stride x i``)."""

    tries: int = 10
    stride: int = 1000
    #: a rule step's start fits only where its value unit, before rounding, is this close to its integer
    #: target on every training row (half the rounding's 0.5: a unit at the edge of rounding has not found
    #: the rule's weights); None: not checked
    value_margin: float | None = 0.25

    def __post_init__(self):
        if not isinstance(self.tries, int) or self.tries < 1:
            raise ValueError(f"Restarts.tries must be a positive integer, got {self.tries!r}")
        if not isinstance(self.stride, int) or self.stride < 1:
            raise ValueError(f"Restarts.stride must be a positive integer, got {self.stride!r}")
        if self.value_margin is not None and not 0 < self.value_margin <= 0.5:
            raise ValueError(f"Restarts.value_margin must lie in (0, 0.5] or be None, got {self.value_margin!r}")

    def seeds(self, seed: int) -> list[int]:
        return [int(seed) + self.stride * i for i in range(self.tries)]


#: The recipe the fresh seeds are trained with (frozen before any of them was trained).
RECIPE = Restarts()


def fits(info: dict, cap: int, margin: float | None = None) -> bool:
    """A start met its trainer's stopping rule (every training row right, stopped before the step cap) and,
    given a ``margin`` and a rule step's ``value_error`` (the largest distance of its value unit from its
    target on the training rows), its value unit lies within ``margin`` of the target on every training row."""
    close = margin is None or info.get("value_error") is None or info["value_error"] <= margin
    return info["train_exact"] == 1.0 and info["epochs"] < cap and close


def best_try(infos: list[dict], cap: int, margin: float | None = None) -> int:
    """The start to keep, from training-row records only: the first that :func:`fits`, else the most
    training rows right (the earliest on a tie)."""
    if not infos:
        raise ValueError("best_try needs at least one start's record")
    for index, info in enumerate(infos):
        if fits(info, cap, margin):
            return index
    return max(range(len(infos)), key=lambda i: (infos[i]["train_exact"], -i))


def train_with_restarts(train, seed: int, cap: int, recipe: Restarts = RECIPE):
    """``train(start_seed) -> (model, info)`` from the seed's starts (:meth:`Restarts.seeds`) until one
    :func:`fits`; returns the kept model and its info with ``tries`` (each start's training-row
    exactness, steps and staircase offset where there is one) and ``chosen`` (the kept start)."""
    models, infos = [], []
    for start in recipe.seeds(seed):
        model, info = train(start)
        models.append(model)
        infos.append(info)
        if fits(info, cap, recipe.value_margin):
            break
    chosen = best_try(infos, cap, recipe.value_margin)
    tries = [
        {
            "seed": start,
            "train_exact": round(float(info["train_exact"]), 4),
            "epochs": int(info["epochs"]),
            **({"beta": round(float(info["beta"]), 3)} if "beta" in info else {}),
            **({"value_error": round(float(info["value_error"]), 4)} if "value_error" in info else {}),
        }
        for start, info in zip(recipe.seeds(seed), infos)
    ]
    return models[chosen], {**infos[chosen], "tries": tries, "chosen": chosen}


class _NumpyOps:
    """The few ``keras.ops`` the rule encodings use, in NumPy."""

    cast = staticmethod(lambda x, dtype: np.asarray(x, dtype))
    stack = staticmethod(np.stack)
    equal = staticmethod(np.equal)


def value_error(name: str, weights: list, rows: np.ndarray) -> float:
    """The largest distance, before rounding, of rule step ``name``'s value unit (its first two weights)
    from its integer value target on ``rows``."""
    rule = RULES[name]
    w, b = (np.asarray(x, np.float64) for x in weights[:2])
    rows = np.asarray(rows, np.int64)
    value = rule.features(_NumpyOps, rows).astype(np.float64) @ w[:, 0] + b[0]
    return float(np.max(np.abs(value - rule.value(rows))))


def _with_value_error(name: str, rows: np.ndarray, model, info: dict):
    return model, {**info, "value_error": value_error(name, model.get_weights(), rows)}


def train_step_with_recipe(
    name: str, rows: np.ndarray, seed: int, recipe: Restarts | None = RECIPE, options: dict | None = None
):
    """One step on its training ``rows``: a rule step (:func:`~predcalc.calculator.rules.train_rule`, with
    ``options`` such as ``learning_rate`` and ``epochs``) or a tiny table
    (:func:`~predcalc.calculator.nets.train_step`) with restarts (one start where ``recipe`` is None: the
    shipped recipe), the control (:func:`~predcalc.calculator.rules.train_control`) once."""
    if name == "control":
        model, info = train_control(rows, seed=seed)
        return model, {**info, "tries": [{"seed": seed, "train_exact": info["train_exact"]}], "chosen": 0}
    if name in RULE_STEPS:
        options = dict(options or {})
        train, cap = (
            (lambda start: _with_value_error(name, rows, *train_rule(name, rows, seed=start, **options))),
            (options.get("epochs", RULE_CAP)),
        )
    else:
        train, cap = (lambda start: train_step(name, rows, seed=start)), TABLE_CAP
    return train_with_restarts(train, seed, cap, recipe or Restarts(tries=1))


def score_draw(networks: dict, draw: dict) -> dict:
    """Exact answers of the calculator of ``networks`` (tabulated on their input domains: the decisions of
    the exported file) on ``draw``: per family, and the exact count over all of it."""
    engine = engine_from(networks)
    out, right, total = {}, 0, 0
    for family, pairs in draw.items():
        scored = score_answers([t for _, t in pairs], _answers(engine, [e for e, _ in pairs]))
        exact = round(scored["exact"] * scored["n"])
        out[family] = {"exact": exact, "n": scored["n"]}
        right, total = right + exact, total + scored["n"]
    return {"exact": right, "n": total, "families": out}


def staircase_regions(name: str, rows: np.ndarray) -> set[tuple[int, int]]:
    """The regions of rule step ``name``'s staircase its ``rows`` fall in: (thresholds passed above, below)
    of each row's value target (for ``compare``: ``a < b``, ``a = b``, ``a > b``; for ``muldigit``: each carry)."""
    rule = RULES[name]
    value = rule.value(np.asarray(rows, np.int64))
    above = sum((value >= rule.period * k).astype(np.int64) for k in range(1, rule.above + 1))
    below = sum((value < -rule.period * k).astype(np.int64) for k in range(rule.below))
    above, below = np.broadcast_to(above, value.shape), np.broadcast_to(below, value.shape)
    return set(zip(above.tolist(), below.tolist()))


def covering_rows(data: dict, seed: int, draws: int = 1000) -> tuple[dict, dict]:
    """:func:`~predcalc.calculator.train.rule_training_rows` (the same share of each step's traced inputs),
    redrawn for a rule step whose drawn rows miss a region of its staircase that its traced rows show
    (:func:`staircase_regions`): a region no training row falls in is never fitted (``compare`` never
    trained on ``a = b`` cannot write "equal"). A draw that covers is kept as it is, so such seeds are
    unchanged. Returns the rows and, per rule step, the draws taken (1: the shipped draw)."""
    rows = rule_training_rows(data, seed)
    taken = {}
    for name in RULES:
        step = STEPS[name]
        reachable = step.reachable()
        seen = data.get(name, np.zeros((0, len(step.inputs)), np.int64))
        seen = seen[np.isin(step.index(seen), step.index(reachable))]
        keep = min(len(seen), int(len(reachable) * SHARE))
        wanted = staircase_regions(name, seen)
        draw = 1
        while not wanted <= staircase_regions(name, rows[name]):
            if draw == draws:
                raise RuntimeError(f"{name}: no draw of {keep} training rows covers its staircase after {draws} draws")
            rng = np.random.default_rng([seed, draw])
            rows[name] = seen[np.sort(rng.choice(len(seen), keep, replace=False))]
            draw += 1
        taken[name] = draw
    return rows, taken


def _answers(engine: Engine, expressions: list[str]) -> list[str]:
    """The engine's answers; where a wrong step breaks the loop itself (an output outside its class range
    indexes past a table), each expression alone, and one that breaks answers nothing (counted wrong)."""
    try:
        return [answer_text(r) for r in engine.evaluate(expressions)]
    except (IndexError, ValueError):
        out = []
        for expression in expressions:
            try:
                out.append(answer_text(engine.evaluate([expression])[0]))
            except (IndexError, ValueError):
                out.append("")
        return out


def seed_part(
    seed: int,
    recipe: Restarts | None,
    expressions: int = 200,
    draw: dict | None = None,
    names=None,
    options: dict | None = None,
):
    """Every step (or those in ``names``) at ``seed`` on the rows :func:`~predcalc.calculator.train.train_rules`
    uses, each checked on every reachable input; with a ``draw`` and every step, the calculator end to end."""
    rows, draws = covering_rows(trace(TRAINING_WORLD, expressions, seed), seed)
    networks, steps = {}, {}
    for name in names or STEPS:
        began = time.perf_counter()
        model, info = train_step_with_recipe(name, rows[name], seed, recipe, options)
        networks[name] = model
        steps[name] = {
            **held_out_check(name, numpy_step(model), rows[name]),
            "train_exact": round(float(info["train_exact"]), 4),
            "tries": info["tries"],
            "chosen": info["chosen"],
            **({"draws": draws[name]} if name in draws else {}),
            **({"margin": round(float(info["margin"]), 3)} if "margin" in info else {}),
            "seconds": round(time.perf_counter() - began, 1),
        }
    out = {"seed": int(seed), "steps": steps}
    if draw is not None and names is None:
        out["end_to_end"] = score_draw(networks, draw)
    return out
