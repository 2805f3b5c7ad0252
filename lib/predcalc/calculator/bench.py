"""Throughput of the exported calculator against Python's exact evaluator (``predcalc bench --calculator``).

NumPy, LiteRT and the standard library only, so it runs in the runtime-only install.
"""

from __future__ import annotations

import time

import numpy as np

from predcalc.data.calculator_families import INTEGER_WORLD, draw
from predcalc.data.exact_answers import score_answers

#: The calculator's two ways to run its networks (see :class:`predcalc.calculator.runtime.Calculator`).
PATHS = {"forward": False, "cache": True}
LABELS = {"integers": "integers", "division": "with_division"}


def bench(
    calculator_path, n: int = 10_000, operators: int = 10, seed: int = 7, repeats: int = 1, progress=None
) -> dict:
    """Time of the exported calculator over Python's exact evaluator (``fractions``) on the same inputs.

    Both evaluate the same ``n`` expressions of ``operators`` operators from the training world's
    numbers: once with ``+ - *`` only (integers), once with ``/`` as well, whose fractions the
    calculator reduces with Euclid's algorithm on its learned steps. Each path of the calculator is
    timed: ``forward`` (a LiteRT forward pass per step call, the default) and ``cache`` (tables filled
    once at load); the calculator answers the whole set as one batch, Python one expression at a time.
    Each of ``repeats`` rounds times Python and then each path, so a round's ratio (path over Python,
    above 1: slower) is measured under one load; ``ratio`` is the median of the rounds' ratios and
    ``ratios`` lists them all. Also the latency of one expression through each path and through Python.
    """
    import dataclasses  # the LiteRT runtime and the families only when a bench runs

    from predcalc.calculator.runtime import Calculator
    from predcalc.data.calculator_families import TRAINING_WORLD
    from predcalc.data.expressions import evaluate

    calculators = {path: Calculator(calculator_path, cache=cache) for path, cache in PATHS.items()}
    out = {"n": n, "operators": operators, "repeats": repeats}
    for label, world in (("integers", INTEGER_WORLD), ("with_division", TRAINING_WORLD)):
        world = dataclasses.replace(world, operators=(operators, operators))
        expressions = [e for e, _ in draw(world, n, seed)]
        python, seconds, answers = [], {path: [] for path in PATHS}, {}
        for _ in range(repeats):
            started = time.perf_counter()
            truth = [str(evaluate(e)) for e in expressions]
            python.append(time.perf_counter() - started)
            for path, calculator in calculators.items():
                started = time.perf_counter()
                answers[path] = calculator.answers(expressions, batch_size=len(expressions))
                seconds[path].append(time.perf_counter() - started)
        row = {"n": len(expressions), "python_seconds": float(np.median(python))}
        for path in PATHS:
            ratios = [t / p for t, p in zip(seconds[path], python)]
            row[path] = {
                "seconds": float(np.median(seconds[path])),
                "ratio": float(np.median(ratios)),
                "ratios": [round(r, 3) for r in ratios],
                "exact": score_answers(truth, answers[path])["exact"],
            }
            if progress:
                progress(label, path, row[path])
        # the default path under the names the report reads
        row.update(
            calculator_seconds=row["forward"]["seconds"], ratio=row["forward"]["ratio"], exact=row["forward"]["exact"]
        )
        out[label] = row
    expression = "2*-26 + (7 - 3) / 4"
    out["latency_ms"] = {"expression": expression}
    runs = {
        path: (lambda calculator=calculator: calculator.answers([expression]))
        for path, calculator in calculators.items()
    }
    runs["python"] = lambda: str(evaluate(expression))
    for path, run in runs.items():
        latencies = []
        for _ in range(50):
            started = time.perf_counter()
            run()
            latencies.append(time.perf_counter() - started)
        out["latency_ms"][path] = 1e3 * float(np.median(latencies))
    out["latency_ms"]["median"] = out["latency_ms"]["forward"]
    return out


def speed_record(bench_record: dict) -> dict:
    """``{"forward": {"integers": R, "division": R}, "cache": {...}}``: each path's time over Python's
    (the median of the rounds; how many rounds is the bench record's ``repeats``)."""
    return {path: {short: bench_record[label][path]["ratio"] for short, label in LABELS.items()} for path in PATHS}
