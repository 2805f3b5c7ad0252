"""When gradient descent reaches the sign scan's exact pattern, in full-batch steps (the unit a random
search's draws are counted in): each seed's run traced every :data:`predcalc.training.exact.LOG_EVERY`
steps, then rerun step by step up to the first exact step (at most :data:`FINE_LIMIT`)."""

from __future__ import annotations

import keras
import numpy as np
from tqdm.auto import tqdm

from predcalc.models import get_spec
from predcalc.studies.sign_scan_search import nearest_pattern, search_odds
from predcalc.training.exact import LOG_EVERY, MODEL, TRAINING_TOKENS, ExactRecipe, signed_sum_weights, train_exact
from predcalc.training.fit import make_tokenizer
from predcalc.training.metrics import exact_accuracy

FINE_LIMIT = 2_000  # the step-by-step rerun goes no further than this (longer: the coarse bound only)


class _Trace(keras.callbacks.Callback):
    """Every ``every`` steps: the rounded pattern, whether the model is exact, the weights; stops at ``stop_at``."""

    def __init__(self, inputs, values, exact_codes, every: int, stop_at: int | None = None):
        super().__init__()
        self.inputs, self.values, self.exact_codes = inputs, values, exact_codes
        self.every, self.stop_at = every, stop_at
        self.rows = []

    def on_epoch_end(self, epoch, logs=None):
        offset = float(self.model.get_layer("signed_sum").gate_offset)
        weights = signed_sum_weights(self.model)
        pattern, _ = nearest_pattern(weights, offset)
        predictions = np.asarray(self.model(self.inputs), dtype=np.float64).reshape(-1)
        step = (epoch + 1) * self.every
        self.rows.append(
            {
                "step": step,
                "pattern": pattern.code(),
                "rounded_exact": pattern.code() in self.exact_codes,
                "model_exact": exact_accuracy(self.values, predictions) == 1.0,
                "weights": weights,
            }
        )
        if self.stop_at is not None and step >= self.stop_at:
            self.model.stop_training = True


def _first(rows, key) -> int | None:
    return next((row["step"] for row in rows if row[key]), None)


def _stays(rows, key) -> int | None:
    step = None
    for row in rows:
        step = (step or row["step"]) if row[key] else None
    return step


def _difference(a: dict, b: dict) -> float:
    return max(abs(x - y) for k in a for x, y in zip(a[k], b[k]))


def descent_trace(protocol, seed: int, recipe: ExactRecipe | None = None, exact_codes=frozenset()) -> dict:
    """One seed's run traced every :data:`LOG_EVERY` steps, then step by step up to its first exact step."""
    recipe = recipe or ExactRecipe()
    tokens = type(make_tokenizer(get_spec(MODEL)))(length=TRAINING_TOKENS)
    inputs = tokens.encode_batch(protocol.train.expressions).astype(np.float64)
    codes = frozenset(exact_codes)
    coarse = _Trace(inputs, protocol.train.values, codes, LOG_EVERY)
    trained = train_exact(protocol, seed=int(seed), recipe=recipe, callbacks=[coarse])
    rows = coarse.rows
    out = {
        "first_model_exact_coarse": _first(rows, "model_exact"),
        "first_rounded_exact_coarse": _first(rows, "rounded_exact"),
        "model_exact_from": _stays(rows, "model_exact"),
        "final_pattern": rows[-1]["pattern"] if rows else None,
        "weights": signed_sum_weights(trained.model),
        "steps": recipe.steps,
        "first_model_exact": None,
        "first_rounded_exact": None,
        "fine_check_difference": None,
    }
    bound = out["first_model_exact_coarse"]
    if bound is not None and bound <= FINE_LIMIT:
        fine = _Trace(inputs, protocol.train.values, codes, 1, stop_at=bound)
        train_exact(protocol, seed=int(seed), recipe=recipe, callbacks=[fine], log_every=1)
        out["first_model_exact"] = _first(fine.rows, "model_exact")
        out["first_rounded_exact"] = _first(fine.rows, "rounded_exact")
        coarse_row = next(row for row in rows if row["step"] == bound)
        out["fine_check_difference"] = _difference(fine.rows[-1]["weights"], coarse_row["weights"])
    return out


def descent_runs(protocol, seeds, exact_codes, exact_record: dict | None = None, recipe=None, progress=True) -> dict:
    """:func:`descent_trace` per seed, with its final weights' difference from the stored run's."""
    stored = {**((exact_record or {}).get("seeds") or {})}
    stored.update(((exact_record or {}).get("fresh") or {}).get("records") or {})
    runs = {}
    for seed in tqdm(list(seeds), desc="descent", disable=not progress):
        trace = descent_trace(protocol, int(seed), recipe, exact_codes)
        weights = trace.pop("weights")
        before = (stored.get(str(seed)) or {}).get("weights")
        trace["record_difference"] = _difference(weights, before) if before else None
        trace["final_weights"] = weights
        runs[str(seed)] = trace
    return runs


def descent_summary(runs: dict, patterns: int, exact: int) -> dict:
    """The first exact step of each traced seed, and a random search's chance within as many draws."""
    steps = [
        run["first_model_exact"] if run["first_model_exact"] is not None else run["first_model_exact_coarse"]
        for run in runs.values()
        if run["first_model_exact_coarse"] is not None
    ]
    summary = {"seeds": len(runs), "reached": len(steps), "fewest": min(steps, default=None)}
    summary["most"] = max(steps, default=None)
    summary["median"] = float(np.median(steps)) if steps else None
    if steps and exact:
        odds = search_odds(patterns, exact, (min(steps), max(steps)))["at_least_one"]
        summary["search_within_fewest"], summary["search_within_most"] = odds[str(min(steps))], odds[str(max(steps))]
    return summary


def descent_record(runs: dict, search: dict) -> dict:
    differences = [run["record_difference"] for run in runs.values() if run["record_difference"] is not None]
    checks = [run["fine_check_difference"] for run in runs.values() if run["fine_check_difference"] is not None]
    return {
        "runs": runs,
        "log_every": LOG_EVERY,
        "fine_limit": FINE_LIMIT,
        "stepwise": sum(run["first_model_exact"] is not None for run in runs.values()),
        "largest_difference": max(differences, default=None),
        "largest_stepwise_difference": max(checks, default=None),
        "summary": descent_summary(runs, search["count"], search["exact"]["training"]),
    }
