"""Tests for `BidirectionalLSTMAttention`: seed 000 section 2.3."""

import keras
import numpy as np
import pytest
from keras import ops
from layer_helpers import pattern, ramp, sigmoid

from predcalc.layers.additive_attention_pooling import AdditiveAttentionPooling
from predcalc.layers.bilstm_attention import BidirectionalLSTMAttention

BATCH, TIME, FEATURES, UNITS = 2, 5, 3, 2


def _inputs():
    return ramp((BATCH, TIME, FEATURES))


def _lstm_weights(offset):
    return [
        pattern((FEATURES, 4 * UNITS), 0.6, offset),
        pattern((UNITS, 4 * UNITS), 0.6, offset + 1.0),
        pattern((4 * UNITS,), 0.3, offset + 2.0),
    ]


def _attention_weights(units):
    return [
        pattern((units, 2 * UNITS), 1.0, 7.0),
        pattern((units,), 0.5, 8.0),
        pattern((units,), 2.0, 9.0),
    ]


def numpy_lstm(x, kernel, recurrent_kernel, bias):
    """keras.layers.LSTM (gate order i, f, c, o), all hidden states, float64."""
    units = recurrent_kernel.shape[0]
    h = np.zeros((x.shape[0], units))
    c = np.zeros((x.shape[0], units))
    outputs = []
    for t in range(x.shape[1]):
        a = x[:, t] @ kernel + h @ recurrent_kernel + bias
        i, f, g, o = np.split(a, 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs, axis=1)


def numpy_bilstm_attention(x, forward, backward, attention):
    """Bidirectional LSTM (concat) then seed 000 equations (11)-(14)."""
    h = np.concatenate([numpy_lstm(x, *forward), numpy_lstm(x[:, ::-1], *backward)[:, ::-1]], axis=-1)
    w, b, u = attention
    e = np.tanh(h @ w.T + b) @ u  # (11), (12)
    alpha = np.exp(e - e.max(-1, keepdims=True))
    alpha /= alpha.sum(-1, keepdims=True)  # (13)
    return (alpha[..., None] * h).sum(axis=1), alpha  # (14)


def _layer(attention_units=None, features=FEATURES):
    layer = BidirectionalLSTMAttention(UNITS, attention_units=attention_units)
    layer.build((None, None, features))
    layer.bidirectional_lstm.forward_layer.set_weights(_lstm_weights(1.0))
    layer.bidirectional_lstm.backward_layer.set_weights(_lstm_weights(4.0))
    layer.attention_pooling.set_weights(_attention_weights(attention_units or 2 * UNITS))
    return layer


@pytest.mark.parametrize("attention_units", [None, 3])
def test_matches_numpy_reference(attention_units):
    layer = _layer(attention_units)
    context, alpha = layer(_inputs(), return_attention_scores=True)
    expected_context, expected_alpha = numpy_bilstm_attention(
        _inputs().astype("float64"),
        _lstm_weights(1.0),
        _lstm_weights(4.0),
        _attention_weights(attention_units or 2 * UNITS),
    )
    assert tuple(context.shape) == (BATCH, 2 * UNITS)
    np.testing.assert_allclose(ops.convert_to_numpy(alpha), expected_alpha, atol=1e-5)
    np.testing.assert_allclose(ops.convert_to_numpy(context), expected_context, atol=1e-5)
    np.testing.assert_allclose(ops.convert_to_numpy(alpha).sum(-1), np.ones(BATCH), atol=1e-6)


def test_equals_keras_bidirectional_lstm_then_pooling():
    layer = _layer()
    bidirectional = keras.layers.Bidirectional(keras.layers.LSTM(UNITS, return_sequences=True))
    pooling = AdditiveAttentionPooling()
    pooled = pooling(bidirectional(_inputs()))
    bidirectional.set_weights(layer.bidirectional_lstm.get_weights())
    pooling.set_weights(layer.attention_pooling.get_weights())
    np.testing.assert_allclose(
        ops.convert_to_numpy(layer(_inputs())),
        ops.convert_to_numpy(pooling(bidirectional(_inputs()))),
        atol=1e-6,
    )
    assert tuple(pooled.shape) == (BATCH, 2 * UNITS)


def test_sub_layers_are_built_in_build():
    layer = BidirectionalLSTMAttention(UNITS, attention_units=3)
    layer.build((None, TIME, FEATURES))
    assert layer.bidirectional_lstm.built and layer.attention_pooling.built
    assert layer.bidirectional_lstm.name == "bidirectional_lstm"
    assert layer.attention_pooling.name == "attention_pooling"
    assert tuple(layer.attention_pooling.kernel.shape) == (3, 2 * UNITS)
    # 2 directions x (kernel, recurrent kernel, bias) + (W, b, u).
    assert len(layer.weights) == 9
    assert layer.count_params() == 2 * 4 * UNITS * (FEATURES + UNITS + 1) + 3 * (2 * UNITS + 2)


def test_padding_is_ignored_with_embedding_mask():
    tokens = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(10, FEATURES, mask_zero=True)(tokens)
    layer = BidirectionalLSTMAttention(UNITS)
    context, alpha = layer(embedded, return_attention_scores=True)
    model = keras.Model(tokens, [context, alpha])
    padded = np.array([[3, 1, 4, 0, 0], [2, 7, 1, 8, 2]], dtype="int32")
    context, alpha = [ops.convert_to_numpy(t) for t in model(padded)]
    np.testing.assert_array_equal(alpha[0, 3:], [0.0, 0.0])
    np.testing.assert_allclose(alpha.sum(-1), np.ones(2), atol=1e-6)
    unpadded_context, unpadded_alpha = [ops.convert_to_numpy(t) for t in model(padded[:1, :3])]
    np.testing.assert_allclose(context[:1], unpadded_context, atol=1e-5)
    np.testing.assert_allclose(alpha[:1, :3], unpadded_alpha, atol=1e-5)


def test_dropout_only_in_training():
    layer = BidirectionalLSTMAttention(UNITS, dropout=0.5, seed=1)
    inference = [ops.convert_to_numpy(layer(_inputs())) for _ in range(2)]
    np.testing.assert_array_equal(inference[0], inference[1])
    training = ops.convert_to_numpy(layer(_inputs(), training=True))
    assert np.abs(training - inference[0]).max() > 1e-4
