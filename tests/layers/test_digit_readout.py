"""Tests for `DigitReadout`: learned slot queries attending over an encoded sequence."""

import numpy as np
from keras import ops
from layer_helpers import layer_norm, patterned_weights

from predcalc.layers.digit_readout import DigitReadout

BATCH, TIME, D_MODEL, SLOTS, HEADS, FFN = 2, 6, 4, 3, 2, 5


def _inputs():
    x = np.arange(BATCH * TIME * D_MODEL, dtype="float32").reshape(BATCH, TIME, D_MODEL)
    return (np.sin(x / 2.0) + x / 50.0).astype("float32")


def _readout(**kwargs):
    layer = DigitReadout(slots=SLOTS, num_heads=HEADS, ffn_units=FFN, name="readout", **kwargs)
    return layer, patterned_weights(layer, (None, None, D_MODEL), scale=0.8, offset=2.0, step=5)


def numpy_readout(h, w, mask=None):
    """Slot queries attend over h (equation 15), then residual + LayerNorm and the FFN (16), (17)."""
    h = h.astype("float64")
    queries = np.broadcast_to(w["slot_queries"], (len(h), *w["slot_queries"].shape))
    a = "cross_attention/"
    q = np.einsum("bsd,dhk->bhsk", queries, w[a + "query/kernel"]) + w[a + "query/bias"][None, :, None, :]
    k = np.einsum("btd,dhk->bhtk", h, w[a + "key/kernel"]) + w[a + "key/bias"][None, :, None, :]
    v = np.einsum("btd,dhk->bhtk", h, w[a + "value/kernel"]) + w[a + "value/bias"][None, :, None, :]
    logits = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (batch, heads, slots, time)
    allowed = np.ones(logits.shape, bool) if mask is None else np.broadcast_to(mask[:, None, None, :], logits.shape)
    logits = np.where(allowed, logits, -1e9)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights = np.where(allowed, weights / weights.sum(-1, keepdims=True), 0.0)
    attention = (
        np.einsum("bhsk,hkd->bsd", weights @ v, w[a + "attention_output/kernel"]) + w[a + "attention_output/bias"]
    )
    z = layer_norm(queries + attention, w["attention_norm/gamma"], w["attention_norm/beta"])
    ffn = np.maximum(0, z @ w["ffn_inner/kernel"] + w["ffn_inner/bias"]) @ w["ffn_outer/kernel"] + w["ffn_outer/bias"]
    return layer_norm(z + ffn, w["ffn_norm/gamma"], w["ffn_norm/beta"]), weights


def test_matches_numpy_reference():
    layer, weights = _readout()
    outputs, scores = layer(_inputs(), return_attention_scores=True)
    expected, expected_scores = numpy_readout(_inputs(), weights)
    np.testing.assert_allclose(ops.convert_to_numpy(outputs), expected, atol=1e-5)
    np.testing.assert_allclose(ops.convert_to_numpy(scores), expected_scores, atol=1e-5)
    assert ops.convert_to_numpy(outputs).shape == (BATCH, SLOTS, D_MODEL)


def test_padded_steps_are_never_read():
    mask = np.array([[True, True, True, True, False, False], [True] * TIME])
    layer, weights = _readout()
    outputs, scores = layer(_inputs(), mask=mask, return_attention_scores=True)
    expected, expected_scores = numpy_readout(_inputs(), weights, mask)
    np.testing.assert_allclose(ops.convert_to_numpy(outputs), expected, atol=1e-5)
    scores = ops.convert_to_numpy(scores)
    np.testing.assert_allclose(scores, expected_scores, atol=1e-5)
    assert np.all(scores[0, :, :, 4:] == 0)
    changed = _inputs().copy()
    changed[0, 4:] = -50.0
    np.testing.assert_allclose(
        ops.convert_to_numpy(layer(changed, mask=mask))[0], ops.convert_to_numpy(outputs)[0], atol=1e-5
    )
    assert layer.compute_mask(_inputs(), mask) is None
