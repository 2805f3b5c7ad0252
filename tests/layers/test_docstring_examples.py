"""Every docstring example (``>>>``) in the layer library, and in the other modules that have
them, runs as a doctest (``# doctest: +SKIP`` only where it needs a trained model); a layer
module whose docstring has an ``Example:`` section must hold at least one that runs (so an
example cannot fall back to prose that is never run). The Makefile runs
this folder on TensorFlow, JAX and PyTorch."""

import doctest
import importlib
import importlib.util
import pkgutil

import keras
import numpy as np
import pytest

import predcalc.layers

LAYER_MODULES = sorted(f"predcalc.layers.{info.name}" for info in pkgutil.iter_modules(predcalc.layers.__path__))
OTHER_MODULES = [
    "predcalc.data.expressions",
    "predcalc.data.tokenizers",
    "predcalc.registry",
    "predcalc.studies.edges",
    "predcalc.training.experiment",
]


def run_examples(module):
    """The doctests of ``module`` (with ``np`` and ``keras`` in scope): (examples run, failures)."""
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    examples = 0
    for test in finder.find(module, module.__name__, extraglobs={"np": np, "keras": keras}):
        examples += sum(not example.options.get(doctest.SKIP) for example in test.examples)
        runner.run(test)
    return examples, runner.failures


@pytest.mark.parametrize("name", LAYER_MODULES + OTHER_MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    examples, failures = run_examples(module)
    assert failures == 0, f"{failures} docstring example(s) of {name} failed (see the output above)"
    if name in LAYER_MODULES and "Example:" in importlib.util.find_spec(name).loader.get_source(name):
        assert examples > 0, f"{name} has an Example: section but no example that runs"
