"""Arithmetic units (Madsen and Johansen, ICLR 2020): an NMU forms products, an NAU adds them.

Both models read the prior report's numeric tokens (the FNN's tokeniser: numbers as floats, ``+``
1.0, ``-`` 0.0, padding 0.5, 15 tokens), so they meet the same in-range, out-of-range and long test
sets as every other model.

Designed (fixed by hand, no weights): the input encoding, a constant ``+`` (1.0) put before the
first number (``ClsToken``), so the 16 values are 8 (operator, number) pairs; and the layer stack.
Learned: every weight (the NMU's and the NAU's), from the training split alone.

Why the stack can be exact: with ``o`` the operator token (1 for ``+``, 0 for ``-``, 0.5 for
padding) and ``x`` the number after it, a term's value is ``(2 o - 1) x = o x + o x - x``: two NMU
products ``o x`` (weights 1 on both inputs) and one ``x`` (weights 0 and 1), added by an NAU with
weights 1, 1, -1 (all inside its clamp). A padded pair (0.5, 0.5) then gives 0.25 + 0.25 - 0.5 = 0
exactly. Nothing here is set to that solution: it has to be learned.
"""

from __future__ import annotations

import keras
import numpy as np

from predcalc.layers import ClsToken, NeuralAdditionUnit, NeuralMultiplicationUnit
from predcalc.models.registry import register_model

UNITS = "arithmetic units (NAU / NMU)"  # the families table's row

IMPLICIT_PLUS = 1.0  # the numeric tokeniser's "+": the first number's operator, put in by the model


def unit_weights(model) -> dict:
    """The trained NMU and NAU kernels, ``(inputs, units)`` as nested lists, as the layers use them
    (clamped: NMU to [0, 1], NAU to [-1, 1]), each to 7 significant digits (float32's precision)."""

    def kernel(name, low):
        values = np.clip(keras.ops.convert_to_numpy(model.get_layer(name).kernel), low, 1.0).astype(float)
        return [[float(f"{v:.7g}") for v in row] for row in values]

    return {"nmu": kernel("nmu", 0.0), "nau": kernel("nau", -1.0)}


def _pairs(tokenizer, inputs):
    """Tokens ``(batch, length)`` -> ``(batch, length // 2 + 1, 2)`` (operator, number) pairs, the
    first number's operator a constant ``+``."""
    if tokenizer.length % 2 != 1:
        raise ValueError(
            f"the arithmetic units read an odd number of tokens (numbers and operators). Received: length={tokenizer.length}"
        )
    x = keras.layers.Reshape((tokenizer.length, 1), name="token_column")(inputs)
    x = ClsToken(IMPLICIT_PLUS, name="implicit_plus")(x)
    return keras.layers.Reshape(((tokenizer.length + 1) // 2, 2), name="pairs")(x)


@register_model(
    "nau_nmu",
    label="NMU + NAU per term (arithmetic units)",
    family="arithmetic units",
    tokenizer="numeric",
    findings_family=UNITS,
    short_name="NMU + NAU per term (arithmetic units)",
    kind="built form, trained units",  # pairs, shared units and a fixed sum: the form is built
    learned_weights=unit_weights,
)
def nau_nmu(
    tokenizer, units: int = 4, regularization: float = 0.1, ramp_start: int = 1000, ramp_end: int = 4000
) -> keras.Model:
    """An NMU of ``units`` products and an NAU to one value, both applied to every (operator,
    number) pair with the same weights, then the pairs' values added (a fixed sum: the mean over
    the pairs times their number, exact in floating point for 8 pairs).

    Designed: the encoding into pairs (a constant ``+`` before the first number), the sharing of
    one NMU and one NAU across the pairs, and the sum over pairs. Learned: every weight
    (``4 x 2`` NMU weights, ``4`` NAU weights at the default ``units``). Because the weights are
    shared across pairs, what the units learn on 3-number expressions applies to any number of
    terms up to the tokeniser's 8."""
    inputs = keras.Input((tokenizer.length,), name="tokens")
    pairs = _pairs(tokenizer, inputs)
    settings = dict(regularization=regularization, ramp_start=ramp_start, ramp_end=ramp_end)
    products = NeuralMultiplicationUnit(units, name="nmu", **settings)(pairs)
    terms = NeuralAdditionUnit(1, name="nau", **settings)(products)  # (batch, pairs, 1): each term's value
    mean = keras.layers.GlobalAveragePooling1D(name="mean_over_pairs")(terms)
    outputs = keras.layers.Rescaling(float(pairs.shape[1]), name="sum_over_pairs")(mean)
    return keras.Model(inputs, outputs, name="nau_nmu")


@register_model(
    "nau_nmu_dense",
    label="NMU + NAU on all tokens (arithmetic units)",
    family="arithmetic units",
    tokenizer="numeric",
    findings_family=UNITS,
    short_name="NMU + NAU on all tokens (arithmetic units)",
    kind="trained, clamped",  # NAU weights in [-1, 1], NMU in [0, 1]
    learned_weights=unit_weights,
)
def nau_nmu_dense(
    tokenizer, units: int = 24, regularization: float = 0.1, ramp_start: int = 1000, ramp_end: int = 4000
) -> keras.Model:
    """The arithmetic units as the paper stacks them: one NMU of ``units`` products over all 16
    values (the tokens with the constant ``+`` before them) and an NAU to one value, no weights shared.

    Designed: the constant ``+`` before the first number and the two-layer stack. Learned: every
    weight (``16 x 24`` NMU weights and ``24`` NAU weights at the default ``units``: three products per
    pair, enough for the exact solution of all 8 pairs). Positions past the third number are padding in
    every training expression, so nothing in training says what to do with them."""
    inputs = keras.Input((tokenizer.length,), name="tokens")
    x = keras.layers.Reshape((tokenizer.length, 1), name="token_column")(inputs)
    x = ClsToken(IMPLICIT_PLUS, name="implicit_plus")(x)
    x = keras.layers.Flatten(name="values")(x)
    settings = dict(regularization=regularization, ramp_start=ramp_start, ramp_end=ramp_end)
    products = NeuralMultiplicationUnit(units, name="nmu", **settings)(x)
    outputs = NeuralAdditionUnit(1, name="nau", **settings)(products)
    return keras.Model(inputs, outputs, name="nau_nmu_dense")
