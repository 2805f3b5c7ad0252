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
    """Throughput of the exported calculator against Python's exact evaluator (``fractions``), one run.

    Both evaluate the same ``n`` expressions of ``operators`` operators from the training world's
    numbers: once with ``+ - *`` only (integers), once with ``/`` as well, whose fractions the
    calculator reduces with Euclid's algorithm on its learned steps. Each path of the calculator is
    timed: ``forward`` (a LiteRT forward pass per step call, the default) and ``cache`` (tables filled
    once at load). A ratio is the path's time over Python's, each the best of ``repeats``. Also the
    latency of one expression through each path.
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
        python = []
        for _ in range(repeats):
            started = time.perf_counter()
            truth = [str(evaluate(e)) for e in expressions]
            python.append(time.perf_counter() - started)
        row = {"n": len(expressions), "python_seconds": min(python)}
        for path, calculator in calculators.items():
            seconds = []
            for _ in range(repeats):
                started = time.perf_counter()
                answers = calculator.answers(expressions, batch_size=len(expressions))
                seconds.append(time.perf_counter() - started)
            row[path] = {
                "seconds": min(seconds),
                "ratio": min(seconds) / min(python),
                "exact": score_answers(truth, answers)["exact"],
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
    for path, calculator in calculators.items():
        latencies = []
        for _ in range(50):
            started = time.perf_counter()
            calculator.answers([expression])
            latencies.append(time.perf_counter() - started)
        out["latency_ms"][path] = 1e3 * float(np.median(latencies))
    out["latency_ms"]["median"] = out["latency_ms"]["forward"]
    return out


def speed_record(bench_record: dict) -> dict:
    """``{"forward": {"integers": R, "division": R}, "cache": {...}}``: each path's time over Python's."""
    return {path: {short: bench_record[label][path]["ratio"] for short, label in LABELS.items()} for path in PATHS}
