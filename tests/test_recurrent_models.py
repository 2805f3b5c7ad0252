"""The registered recurrent models: parameter counts, training, save/load, the reference cells, attention."""

import keras
import numpy as np
import pytest

from predcalc.data import NumericTokenizer, reference_protocol
from predcalc.layers import ReferenceGRUCell, ReferenceLSTMCell
from predcalc.models import get_spec
from predcalc.models.recurrent import attention_weights, signed_contributions, term_weights
from predcalc.report.anchors import REFERENCE_ROWS
from predcalc.training import fit

NAMES = ["rnn2", "lstm", "gru", "bilstm_attention"]
EXPRESSIONS = ["3 - -2 + 4", "1 + 2 - 3 + 4 - 5 + -1", "-8 + 7 - 6"]


@pytest.fixture(scope="module")
def protocol():
    return reference_protocol(0)


def test_default_parameter_counts():
    counts = {name: fit.build(name)[1].count_params() for name in NAMES}
    assert counts == {"rnn2": 222_781, "lstm": 16_961, "gru": 12_737, "bilstm_attention": 6_511}
    assert counts["bilstm_attention"] == REFERENCE_ROWS["BiLSTM + attention"]["params"]
    reference_rnn = REFERENCE_ROWS["RNN2 (SimpleRNN + PReLU)"]["params"]
    assert abs(counts["rnn2"] - reference_rnn) / reference_rnn < 0.002
    # 469 units would be further from the prior report's count than 470
    assert abs(fit.build("rnn2", units=469)[1].count_params() - reference_rnn) > abs(counts["rnn2"] - reference_rnn)


def test_reference_rows_and_tokenizer():
    assert get_spec("rnn2").reference_row == "RNN2 (SimpleRNN + PReLU)"
    assert get_spec("bilstm_attention").reference_row == "BiLSTM + attention"
    assert get_spec("lstm").reference_row is None and get_spec("gru").reference_row is None
    for name in NAMES:
        spec = get_spec(name)
        assert spec.reference_row is None or spec.reference_row in REFERENCE_ROWS
        assert spec.tokenizer == "numeric" and spec.loss == "mse"


@pytest.mark.parametrize("units,layers", [(5, 1), (4, 3)])
def test_rnn2_parameter_formula(units, layers):
    _, model, _ = fit.build("rnn2", units=units, num_layers=layers)
    first = units * units + 3 * units  # W_xh (1 input), W_hh, b_h, alpha
    later = units * units + 3 * units + units * units - units  # W_xh (units inputs) instead of 1
    assert model.count_params() == first + (layers - 1) * later + units + 1


def test_bilstm_attention_parameter_formula():
    u, a = 7, 11
    _, model, _ = fit.build("bilstm_attention", units=u, attention_units=a)
    assert model.count_params() == 8 * (u * u + 2 * u) + a * (2 * u + 2) + 2 * u + 1


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_builds_trains_one_epoch_and_round_trips(name, protocol, tmp_path):
    spec, model, tokenizer = fit.build(name)
    assert tuple(model.inputs[0].shape) == (None, 15) and tuple(model.outputs[0].shape) == (None, 1)
    x = tokenizer.encode_batch(protocol.train.expressions[:64])
    y = protocol.train.values[:64].astype("float32")
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(x, y, epochs=1, batch_size=32, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    probe = tokenizer.encode_batch(EXPRESSIONS)
    predictions = spec.predict_values(model, probe)
    assert predictions.shape == (3,) and np.all(np.isfinite(predictions))
    path = tmp_path / f"{name}.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    np.testing.assert_allclose(restored.predict(probe, verbose=0), model.predict(probe, verbose=0), atol=1e-6)


@pytest.mark.parametrize("name", ["rnn2", "lstm", "gru"])
def test_unrolled_equals_rolled(name):
    _, unrolled, tokenizer = fit.build(name, units=6)
    _, rolled, _ = fit.build(name, units=6, unroll=False)
    rolled.set_weights(unrolled.get_weights())
    x = tokenizer.encode_batch(EXPRESSIONS)
    np.testing.assert_allclose(rolled.predict(x, verbose=0), unrolled.predict(x, verbose=0), atol=1e-5)


@pytest.mark.parametrize("name,reference_cell", [("lstm", ReferenceLSTMCell), ("gru", ReferenceGRUCell)])
def test_keras_layers_are_the_reference_equations(name, reference_cell):
    """The registered LSTM/GRU load into the literal reference cells and give the same final state."""
    _, model, tokenizer = fit.build(name, units=5)
    layer = model.get_layer(name)
    x = tokenizer.encode_batch(EXPRESSIONS)[:, :, None]
    cell = reference_cell(5)
    cell.set_keras_weights(layer)  # refuses a GRU with reset_after=True
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(keras.layers.RNN(cell)(x)), keras.ops.convert_to_numpy(layer(x)), atol=1e-5
    )
    if name == "gru":
        assert layer.cell.reset_after is False


def test_attention_weights_over_the_tokens():
    _, model, tokenizer = fit.build("bilstm_attention", units=4, attention_units=6)
    alpha = attention_weights(model, tokenizer.encode_batch(EXPRESSIONS))
    assert alpha.shape == (3, 15) and np.all(alpha >= 0)
    np.testing.assert_allclose(alpha.sum(axis=1), 1.0, atol=1e-5)
    assert np.all(alpha[:, 5:] > 0)  # unmasked, as in the prior report: the padding gets weight too
    # the weights are the layer's own, and the model's output is the read-out of that context
    layer = model.get_layer("bilstm_attention")
    sequence = tokenizer.encode_batch(EXPRESSIONS)[:, :, None]
    context, scores = layer(sequence, return_attention_scores=True)
    np.testing.assert_allclose(alpha, keras.ops.convert_to_numpy(scores), atol=1e-6)
    np.testing.assert_allclose(model.get_layer("value")(context), model.predict(sequence[..., 0], verbose=0), atol=1e-5)


def test_masked_attention_ignores_padding():
    _, model, tokenizer = fit.build("bilstm_attention", units=4, attention_units=6, mask_padding=True)
    x = tokenizer.encode_batch(EXPRESSIONS)
    alpha = attention_weights(model, x)
    np.testing.assert_array_equal(alpha[x == tokenizer.pad], 0.0)
    np.testing.assert_allclose(alpha.sum(axis=1), 1.0, atol=1e-5)


def test_attention_weights_needs_the_layer():
    _, model, tokenizer = fit.build("lstm", units=3)
    with pytest.raises(ValueError, match="no BidirectionalLSTMAttention layer"):
        attention_weights(model, tokenizer.encode_batch(EXPRESSIONS))


def test_invalid_sizes_are_refused():
    with pytest.raises(ValueError, match="units must be a positive integer. Received: units=0"):
        fit.build("lstm", units=0)
    with pytest.raises(ValueError, match="num_layers must be a positive integer"):
        fit.build("rnn2", num_layers=0)


def test_term_weights_of_the_exact_rule(protocol):
    np.testing.assert_array_equal(signed_contributions(["3 - -2 + 4", "-1 + 0 - 5"]), [[3, 2, 4], [-1, 0, -5]])
    weights, intercept = term_weights(protocol.test_in.expressions, protocol.test_in.values)
    np.testing.assert_allclose(weights, [1.0, 1.0, 1.0], atol=1e-10)
    assert intercept == pytest.approx(0.0, abs=1e-10)
    # a "model" that reads only the last number
    last = signed_contributions(protocol.test_in.expressions)[:, -1]
    weights, _ = term_weights(protocol.test_in.expressions, last)
    np.testing.assert_allclose(weights, [0.0, 0.0, 1.0], atol=1e-10)


def test_term_weights_refuses_other_expressions():
    with pytest.raises(ValueError, match="same number of terms"):
        signed_contributions(["1 + 2", "1 + 2 + 3"])
    with pytest.raises(ValueError, match="only flat"):
        signed_contributions(["2 * 3 + 1"])


def test_numeric_tokens_are_read_as_a_sequence():
    _, model, _ = fit.build("lstm", units=3)
    assert tuple(model.get_layer("token_values").output.shape) == (None, NumericTokenizer().length, 1)
