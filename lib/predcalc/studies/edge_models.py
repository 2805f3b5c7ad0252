"""Which models the edge study scores on every seed, the notebook that trains each, and the input
length its exported files read.

The study scores the recommended models marked ``edges`` (``reports/recommended.json``) and the
Answer's arithmetic units (notebook 11: shown in the families table, not recommended, so not in that
file). Each seed is exported at :data:`INPUT_LENGTH` tokens where the model can be rebuilt for it
with the same weights (:func:`at_length`), else at the length it was trained at; a set that needs
more tokens than the files read is recorded as not read, never as a score of 0.

Example:
    >>> SCORED["nau_nmu"]
    '11_arithmetic_units'
"""

from __future__ import annotations

import numpy as np

from predcalc.recommended import on_edges
from predcalc.studies.edges import at_input_length

INPUT_LENGTH = 159  # tokens: 80 numbers and 79 operators, the held-out suite's longest expressions

# the Answer's arithmetic units, scored like the recommended models but not recommended
UNITS = {"nau_nmu": "11_arithmetic_units", "nau_nmu_dense": "11_arithmetic_units"}
# the recommended models the edge study scores, and the notebook whose stored parameters train them
RECOMMENDED = on_edges()
SCORED = {**RECOMMENDED, **UNITS}
# a partly built model -> the trained model whose fit it finishes (same builder, seed and parameters)
FINISHED_FROM = {"scan_typed_solved": "scan_typed", "scan_typed_readout_solved": "scan_typed"}


def notebook_of(name: str) -> str:
    """The notebook whose stored parameters train ``name``; a one-line error for a model the study
    does not score."""
    if name not in SCORED:
        raise KeyError(f"the edge study does not score {name!r}; it scores {', '.join(SCORED)}")
    return SCORED[name]


def at_length(model, spec, tokenizer, length: int, model_kwargs: dict | None = None):
    """``(model, length)``: ``model`` rebuilt for ``length`` tokens with the same weights
    (:func:`predcalc.studies.edges.at_input_length`, else the registered builder called with a
    longer tokeniser where every weight keeps its shape, e.g. the per-term arithmetic units, whose
    pairs and fixed sum follow the length), or the model itself at its trained length where a
    weight's shape depends on the length (e.g. the dense arithmetic units: a rebuild that does not
    compute on its new input shape is refused)."""
    try:
        resized = at_input_length(model, length)
        if _computes(resized):
            return resized, length
    except (ValueError, TypeError):
        pass
    longer = type(tokenizer)(**{**tokenizer.get_config(), "length": length})
    try:
        rebuilt = spec.build(longer, **(model_kwargs or {}))
    except (ValueError, TypeError):
        return model, tokenizer.length
    old, new = model.get_weights(), rebuilt.get_weights()
    if len(old) != len(new) or any(a.shape != b.shape for a, b in zip(old, new)):
        return model, tokenizer.length
    rebuilt.set_weights(old)
    return (rebuilt, length) if _computes(rebuilt) else (model, tokenizer.length)


def _computes(model) -> bool:
    """Whether ``model`` runs on a batch of zeros of its input shape: a rebuild can keep a layer built
    for the old length (its weights' shapes from the old input), which only fails when called."""
    try:
        model(np.zeros((1, *model.inputs[0].shape[1:]), dtype="float32"))
    except Exception:  # noqa: BLE001 - TensorFlow raises its own error types for mismatched shapes
        return False
    return True
