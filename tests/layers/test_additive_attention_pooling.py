"""Tests for `AdditiveAttentionPooling`: seed 000 equations (11)-(14)."""

import keras
import numpy as np
from keras import ops
from layer_helpers import pattern, ramp

from predcalc.layers.additive_attention_pooling import AdditiveAttentionPooling

BATCH, TIME, FEATURES, UNITS = 2, 5, 4, 3


def _hidden_states():
    return ramp((BATCH, TIME, FEATURES), divisor=20.0)


def _weights(units=UNITS, features=FEATURES):
    return [
        pattern((units, features), 1.0, 1.0),  # W
        pattern((units,), 0.5, 2.0),  # b
        pattern((units,), 2.0, 3.0),  # u
    ]


def numpy_attention_pooling(h, w, b, u, mask=None):
    """Seed 000 equations (11)-(14) in float64, padded steps excluded."""
    v = np.tanh(h @ w.T + b)  # (11)
    e = v @ u  # (12)
    if mask is not None:
        e = np.where(mask, e, -np.inf)
    alpha = np.exp(e - e.max(axis=-1, keepdims=True))
    alpha = alpha / alpha.sum(axis=-1, keepdims=True)  # (13)
    return (alpha[..., None] * h).sum(axis=1), alpha  # (14)


def _layer(units=UNITS, features=FEATURES, **kwargs):
    layer = AdditiveAttentionPooling(units=units, **kwargs)
    layer.build((None, None, features))
    layer.set_weights(_weights(units or features, features))
    return layer


def test_constant_weights_pinned_numbers():
    hidden = np.arange(1 * 3 * 2, dtype="float32").reshape(1, 3, 2) / 10.0
    layer = AdditiveAttentionPooling(
        kernel_initializer=keras.initializers.Constant(0.5),
        bias_initializer="zeros",
        context_initializer=keras.initializers.Constant(1.0),
    )
    context, alpha = layer(hidden, return_attention_scores=True)
    expected_alpha = numpy_attention_pooling(hidden.astype("float64"), np.full((2, 2), 0.5), np.zeros(2), np.ones(2))[1]
    np.testing.assert_allclose(ops.convert_to_numpy(alpha), expected_alpha, atol=1e-5)
    np.testing.assert_allclose(ops.convert_to_numpy(alpha), [[0.21829535, 0.32239243, 0.45931223]], atol=1e-5)
    np.testing.assert_allclose(ops.convert_to_numpy(context), [[0.24820338, 0.34820338]], atol=1e-5)


def test_matches_numpy_reference():
    layer = _layer()
    context, alpha = layer(_hidden_states(), return_attention_scores=True)
    expected_context, expected_alpha = numpy_attention_pooling(_hidden_states().astype("float64"), *_weights())
    np.testing.assert_allclose(ops.convert_to_numpy(alpha), expected_alpha, atol=1e-5)
    np.testing.assert_allclose(ops.convert_to_numpy(context), expected_context, atol=1e-5)
    np.testing.assert_allclose(ops.convert_to_numpy(layer(_hidden_states())), expected_context, atol=1e-5)


def test_attention_weights_are_a_distribution():
    _, alpha = _layer()(_hidden_states(), return_attention_scores=True)
    alpha = ops.convert_to_numpy(alpha)
    assert alpha.shape == (BATCH, TIME)
    assert (alpha > 0).all()
    np.testing.assert_allclose(alpha.sum(axis=-1), np.ones(BATCH), atol=1e-6)


def test_mask_gives_padded_steps_zero_weight():
    layer = _layer()
    hidden = _hidden_states()
    mask = np.array([[True, True, True, False, False], [True] * TIME])
    context, alpha = layer(hidden, mask=mask, return_attention_scores=True)
    context, alpha = ops.convert_to_numpy(context), ops.convert_to_numpy(alpha)
    np.testing.assert_array_equal(alpha[0, 3:], [0.0, 0.0])
    np.testing.assert_allclose(alpha.sum(axis=-1), np.ones(BATCH), atol=1e-6)
    expected_context, expected_alpha = numpy_attention_pooling(hidden.astype("float64"), *_weights(), mask=mask)
    np.testing.assert_allclose(alpha, expected_alpha, atol=1e-5)
    np.testing.assert_allclose(context, expected_context, atol=1e-5)
    # The padded sequence pools exactly like the unpadded one.
    unpadded = ops.convert_to_numpy(layer(hidden[:1, :3]))
    np.testing.assert_allclose(context[:1], unpadded, atol=1e-6)


def test_fully_masked_sequence_gives_zeros():
    mask = np.array([[False] * TIME, [True] * TIME])
    context, alpha = _layer()(_hidden_states(), mask=mask, return_attention_scores=True)
    np.testing.assert_array_equal(ops.convert_to_numpy(alpha)[0], np.zeros(TIME))
    np.testing.assert_array_equal(ops.convert_to_numpy(context)[0], np.zeros(FEATURES))


def test_mask_from_masking_layer_in_a_model():
    inputs = keras.Input((TIME, FEATURES))
    masked = keras.layers.Masking(mask_value=0.0)(inputs)
    layer = AdditiveAttentionPooling(units=UNITS)
    context, alpha = layer(masked, return_attention_scores=True)
    model = keras.Model(inputs, [context, alpha])
    layer.set_weights(_weights())
    hidden = _hidden_states()
    hidden[1, 2:] = 0.0  # padding
    context, alpha = [ops.convert_to_numpy(t) for t in model(hidden)]
    np.testing.assert_array_equal(alpha[1, 2:], np.zeros(TIME - 2))
    expected_context, _ = numpy_attention_pooling(
        hidden.astype("float64"), *_weights(), mask=np.abs(hidden).sum(-1) > 0
    )
    np.testing.assert_allclose(context, expected_context, atol=1e-5)


def test_default_units_is_feature_size():
    layer = AdditiveAttentionPooling()
    layer.build((None, TIME, 6))
    assert [(w.name, tuple(w.shape)) for w in layer.weights] == [
        ("kernel", (6, 6)),
        ("bias", (6,)),
        ("context_vector", (6,)),
    ]
    assert tuple(layer(np.ones((2, TIME, 6), "float32")).shape) == (2, 6)
