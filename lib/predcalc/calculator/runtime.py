"""Run an exported calculator: NumPy and ``ai-edge-litert`` only (no TensorFlow, Keras or SciPy).

    calculator = Calculator("reports/calculator/model.tflite")
    calculator.answers(["2*-26", "(1/2 + 1/3) * 6"])  # ['-52', '5']

By default every step call is a forward pass of the step's network through LiteRT, batched over
the expressions of a round and over the rows of a digit array (``cache=False``). With
``cache=True`` each network is run once on its whole (finite) input domain when the file is
loaded and the engine then looks its decisions up: the same answers (a test checks it), faster,
but no network runs while answering.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from predcalc.calculator.engine import Engine, answer_text
from predcalc.calculator.steps import STEPS, TableStep

SIDECAR = "predcalc.json"


class LiteRTSteps:
    """The step signatures of a calculator LiteRT file, each a function ``int [n, k] -> int [n, m]``."""

    def __init__(self, path):
        from ai_edge_litert.interpreter import Interpreter  # LiteRT only when a file is opened

        self.path = Path(path)
        self.interpreter = Interpreter(model_path=str(self.path))
        self.names = list(self.interpreter.get_signature_list())
        self._runners = {name: self.interpreter.get_signature_runner(name) for name in self.names}

    def __getitem__(self, name):
        runner = self._runners[name]

        def run(inputs):
            inputs = np.asarray(inputs, np.int32)
            if len(inputs) == 0:
                return np.zeros((0, len(STEPS[name].outputs)), np.int64)
            return np.asarray(runner(inputs=inputs)["classes"], np.int64)

        return run


class Calculator:
    """An exported calculator (a ``.tflite`` with ``predcalc.json`` beside it)."""

    def __init__(self, path, cache: bool = False):
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"no calculator file at {self.path}")
        sidecar = self.path.parent / SIDECAR
        self.info = json.loads(sidecar.read_text()) if sidecar.is_file() else {}
        runners = LiteRTSteps(self.path)
        missing = set(STEPS) - set(runners.names)
        if missing:
            raise ValueError(f"{self.path} lacks the calculator steps {sorted(missing)}")
        steps = {name: runners[name] for name in STEPS}
        if cache:
            steps = {name: TableStep(name, function) for name, function in steps.items()}
        self.cache = cache
        self.engine = Engine(steps)

    @property
    def name(self) -> str:
        path = "a look-up cache of its networks" if self.cache else "LiteRT forward passes"
        return f"calculator ({self.path.name}, {path})"

    def evaluate(self, expressions):
        """Numbers or CalculatorErrors, one per expression."""
        return self.engine.evaluate(list(expressions))

    def answers(self, expressions, batch_size: int = 512) -> list[str]:
        """Exact answers as text (``"-52"``, ``"7/3"``, or ``"error: ..."``)."""
        expressions = list(expressions)
        out = []
        for start in range(0, len(expressions), batch_size):
            out += [answer_text(r) for r in self.evaluate(expressions[start : start + batch_size])]
        return out


def is_calculator(path) -> bool:
    sidecar = Path(path).parent / SIDECAR
    return (
        Path(path).suffix == ".tflite"
        and sidecar.is_file()
        and json.loads(sidecar.read_text()).get("kind") == "calculator"
    )
