"""The trained exact scan: a sign scan whose every weight is learned, built to read any length.

``scan_exact`` is one :class:`predcalc.layers.SignedSumScan` on the typed tokens, its input's time
axis left open (``None``), so the same model, and its exported files, read an expression of any
number of tokens. It trains with :func:`predcalc.training.exact.train_exact` (full batch, a
decaying learning rate, float64), not with the notebooks' ``fit.train``; its training elements
are the layer's arguments (straight-through gates, closed-gate start, clamp, ramped regulariser,
no candidate bias) and the recipe's (learning-rate decay, float64), each switched off by one
ablation in :data:`predcalc.training.exact.ABLATIONS`.

``transformer4_local_rounded`` carries the same elements to the transformer's gated readout (a
cheap side probe of 33_trained_exact_scan).
"""

from __future__ import annotations

import keras
import numpy as np

from predcalc.layers import LocalTokenFeatures, RoundedGatedValueSum, SignedSumScan
from predcalc.models.registry import register_model
from predcalc.models.token_heads import numeric_sequence
from predcalc.models.transformer import encoder_stack

FLOAT32_EXACT_BELOW = 2**24  # float32 holds every integer up to 2^24 = 16,777,216; past it, not all


@register_model(
    "scan_exact",
    label="Trained exact scan (straight-through gates, clamped weights)",
    family="gated linear recurrence",
    tokenizer="typed",
    float32_exact_below=FLOAT32_EXACT_BELOW,
    findings_family="sign scan, discrete gates",
    short_name="sign scan, straight-through gates",
    kind="built form, trained signs",
    designed_on="the development suites (seeds 31, 4040) and the protocol's in and long sets",
)
def scan_exact(tokenizer, units: int = 1, dtype: str = "float64", name: str = "scan_exact", **elements) -> keras.Model:
    """The trained exact scan: typed tokens ``(batch, any length, 4)`` -> the value ``(batch, 1)``.

    Args:
        units: the sign state's size (1 suffices: +1 after ``+``, -1 after ``-``).
        dtype: the layer's dtype policy (``"float64"`` trains in float64; ``"float32"`` is an
            ablation).
        elements: :class:`predcalc.layers.SignedSumScan` arguments (``straight_through``,
            ``closed_init``, ``clamp``, ``regularization``, ``ramp_start``, ``ramp_end``,
            ``candidate_bias``, ...).
    """
    inputs = keras.Input((None, 4), name="tokens")  # (value, is_plus, is_minus, is_number), any length
    outputs = SignedSumScan(units, dtype=dtype, name="signed_sum", **elements)(inputs)
    return keras.Model(inputs, outputs, name=name)


@register_model(
    "transformer4_local_rounded",
    label="transformer4, local tanh-bounded features, gates rounded straight through (no bias)",
    family="transformer",
    tokenizer="numeric",
    optimizer="adamw_reference",
    findings_family="transformer encoder",
    short_name="gated-sum transformer with rounded gates",
    kind="trained, built rounded gated-sum readout",
)
def transformer4_local_rounded(
    tokenizer, d_model: int = 32, num_heads: int = 8, num_layers: int = 3, ffn_units: int = 128
) -> keras.Model:
    """``transformer4_local_bounded`` with the trained exact scan's elements on its gated readout
    (:class:`predcalc.layers.RoundedGatedValueSum`: gates clipped to [-1, 1] and rounded straight
    through, no output bias); the encoder is the same."""
    inputs, values = numeric_sequence(tokenizer, True)
    x = keras.layers.Activation("tanh", name="squash")(values)
    x = LocalTokenFeatures(fill=tokenizer.pad, name="local_features")(x)
    x = keras.layers.Dense(d_model, name="token_projection")(x)
    x = keras.layers.Rescaling(float(np.sqrt(d_model)), name="embedding_scale")(x)
    x = encoder_stack(x, num_layers, num_heads, ffn_units)
    outputs = RoundedGatedValueSum(name="value")([x, values])
    return keras.Model(inputs, outputs, name="transformer4_local_rounded")
