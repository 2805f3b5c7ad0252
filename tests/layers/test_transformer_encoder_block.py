"""Tests for `TransformerEncoderBlock`: seed 002 equations (15)-(17)."""

import keras
import numpy as np
from keras import ops
from layer_helpers import layer_norm, patterned_weights

from predcalc.layers.transformer_encoder_block import TransformerEncoderBlock

BATCH, TIME, D_MODEL, HEADS, FFN = 2, 5, 4, 2, 6


def _inputs(batch=BATCH, time=TIME, d_model=D_MODEL):
    x = np.arange(batch * time * d_model, dtype="float32").reshape(batch, time, d_model)
    return (np.cos(x / 3.0) + x / 40.0).astype("float32")


def _block(heads=HEADS, ffn=FFN, d_model=D_MODEL, **kwargs):
    """A built block whose every weight is a fixed pattern; returns it and {name: array}."""
    block = TransformerEncoderBlock(num_heads=heads, ffn_units=ffn, name="block", **kwargs)
    return block, patterned_weights(block, (None, None, d_model), scale=0.7, offset=1.0, step=3)


def numpy_encoder_block(x, w, mask=None):
    """Equations (15)-(17) in float64; a padded token is no key and gets a zero attention row."""
    x = x.astype("float64")
    a = "self_attention/"
    q = np.einsum("btd,dhk->bhtk", x, w[a + "query/kernel"]) + w[a + "query/bias"][None, :, None, :]
    k = np.einsum("btd,dhk->bhtk", x, w[a + "key/kernel"]) + w[a + "key/bias"][None, :, None, :]
    v = np.einsum("btd,dhk->bhtk", x, w[a + "value/kernel"]) + w[a + "value/bias"][None, :, None, :]
    logits = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (15) (batch, heads, query, key)
    allowed = np.ones(logits.shape, bool)
    if mask is not None:
        allowed = mask[:, None, :, None] & mask[:, None, None, :]
    logits = np.where(allowed, logits, -1e9)
    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
    weights = np.where(allowed, weights / weights.sum(axis=-1, keepdims=True), 0.0)
    heads = weights @ v  # (batch, heads, time, key_dim)
    attention = np.einsum("bhtk,hkd->btd", heads, w[a + "attention_output/kernel"]) + w[a + "attention_output/bias"]
    z = layer_norm(x + attention, w["attention_norm/gamma"], w["attention_norm/beta"])  # (16)
    ffn = (
        np.maximum(0, z @ w["ffn_inner/kernel"] + w["ffn_inner/bias"]) @ w["ffn_outer/kernel"] + w["ffn_outer/bias"]
    )  # (17)
    return layer_norm(z + ffn, w["ffn_norm/gamma"], w["ffn_norm/beta"]), weights  # (16)


def test_matches_numpy_reference_of_equations_15_to_17():
    block, weights = _block()
    outputs, scores = block(_inputs(), return_attention_scores=True)
    expected, expected_scores = numpy_encoder_block(_inputs(), weights)
    np.testing.assert_allclose(ops.convert_to_numpy(outputs), expected, atol=1e-5)
    np.testing.assert_allclose(ops.convert_to_numpy(scores), expected_scores, atol=1e-5)
    np.testing.assert_allclose(ops.convert_to_numpy(block(_inputs())), expected, atol=1e-5)
    assert ops.convert_to_numpy(scores).shape == (BATCH, HEADS, TIME, TIME)


def test_pinned_numbers():
    block, _ = _block()
    outputs, scores = block(_inputs(), return_attention_scores=True)
    # fixed values of the reference above, so a change to it is noticed too
    np.testing.assert_allclose(
        ops.convert_to_numpy(outputs)[0, 0], [1.96042852, 0.10485791, -1.73271926, -1.39907552], atol=1e-5
    )
    np.testing.assert_allclose(
        ops.convert_to_numpy(scores)[1, 1, 2],
        [0.192759, 0.2182011, 0.22164936, 0.1930653, 0.17432523],
        atol=1e-5,
    )


def test_padding_mask_matches_reference_and_ignores_padded_content():
    mask = np.array([[True, True, True, False, False], [True, True, True, True, True]])
    block, weights = _block()
    outputs, scores = block(_inputs(), mask=mask, return_attention_scores=True)
    expected, expected_scores = numpy_encoder_block(_inputs(), weights, mask)
    np.testing.assert_allclose(ops.convert_to_numpy(outputs), expected, atol=1e-5)
    scores = ops.convert_to_numpy(scores)
    np.testing.assert_allclose(scores, expected_scores, atol=1e-5)
    assert np.all(scores[0, :, :, 3:] == 0) and np.all(scores[0, :, 3:, :] == 0)
    np.testing.assert_allclose(scores[0, :, :3].sum(-1), 1.0, atol=1e-6)
    # changing what stands in the padded steps does not change the real tokens' outputs
    changed = _inputs().copy()
    changed[0, 3:] = 100.0
    np.testing.assert_allclose(
        ops.convert_to_numpy(block(changed, mask=mask))[0, :3], ops.convert_to_numpy(outputs)[0, :3], atol=1e-5
    )


def test_mask_from_a_masking_layer_is_used_and_passed_on():
    block, _ = _block()
    x = _inputs()
    x[0, 3:] = 0.0  # padding for the Masking layer
    mask = np.any(x != 0.0, axis=-1)
    inputs = keras.Input((TIME, D_MODEL))
    masked = keras.layers.Masking(mask_value=0.0)(inputs)
    model = keras.Model(inputs, block(masked))
    np.testing.assert_allclose(ops.convert_to_numpy(model(x)), ops.convert_to_numpy(block(x, mask=mask)), atol=1e-6)
    assert np.array_equal(ops.convert_to_numpy(block.compute_mask(x, mask)), mask)


def test_parameter_count_and_key_dim():
    d_model, ffn = 32, 128
    block = TransformerEncoderBlock(num_heads=4, ffn_units=ffn)
    block.build((None, 15, d_model))
    assert block.count_params() == 4 * d_model**2 + 9 * d_model + 2 * d_model * ffn + ffn
    wide = TransformerEncoderBlock(num_heads=2, ffn_units=8, key_dim=5)
    wide.build((None, 3, 4))
    assert tuple(wide.self_attention.weights[0].shape) == (4, 2, 5)  # query kernel (d_model, heads, key_dim)


def test_dropout_only_in_training():
    block, _ = _block(dropout=0.5)
    x = _inputs()
    inference = ops.convert_to_numpy(block(x))
    np.testing.assert_allclose(ops.convert_to_numpy(block(x, training=False)), inference, atol=1e-6)
    assert not np.allclose(ops.convert_to_numpy(block(x, training=True)), inference, atol=1e-3)
