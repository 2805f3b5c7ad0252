"""Throughput of the exported calculator against Python's exact evaluator (``predcalc bench --calculator``).

NumPy, LiteRT and the standard library only, so it runs in the runtime-only install.
"""

from __future__ import annotations

import time

import numpy as np

from predcalc.data.calculator_families import INTEGER_WORLD, draw
from predcalc.data.exact_answers import score_answers


def bench(calculator_path, n: int = 10_000, operators: int = 10, seed: int = 7, repeats: int = 3) -> dict:
    """Throughput of the exported calculator against Python's exact evaluator (``fractions``), one run.

    Both evaluate the same ``n`` expressions of ``operators`` operators from the training world's
    numbers: once with ``+ - *`` only (integers), once with ``/`` as well, whose fractions the
    calculator reduces with Euclid's algorithm on its learned steps. The ratio is the calculator's
    time over Python's, each the best of ``repeats``. Also the latency of one expression through
    the LiteRT file.
    """
    import dataclasses

    from predcalc.calculator.runtime import Calculator
    from predcalc.data.calculator_families import TRAINING_WORLD
    from predcalc.data.expressions import evaluate

    calculator = Calculator(calculator_path)
    out = {"n": n, "operators": operators}
    for label, world in (("integers", INTEGER_WORLD), ("with_division", TRAINING_WORLD)):
        world = dataclasses.replace(world, operators=(operators, operators))
        expressions = [e for e, _ in draw(world, n, seed)]
        python, model = [], []
        for _ in range(repeats):
            started = time.perf_counter()
            truth = [evaluate(e) for e in expressions]
            python.append(time.perf_counter() - started)
            started = time.perf_counter()
            answers = calculator.answers(expressions, batch_size=len(expressions))
            model.append(time.perf_counter() - started)
        scored = score_answers([str(t) for t in truth], answers)
        out[label] = {"n": len(expressions), "python_seconds": min(python), "calculator_seconds": min(model),
                      "ratio": min(model) / min(python), "exact": scored["exact"]}
    latencies = []
    for expression in ["2*-26 + (7 - 3) / 4"] * 50:
        started = time.perf_counter()
        calculator.answers([expression])
        latencies.append(time.perf_counter() - started)
    out["latency_ms"] = {"median": 1e3 * float(np.median(latencies)), "expression": "2*-26 + (7 - 3) / 4"}
    return out
