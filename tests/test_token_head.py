"""Token-output heads: the answer slot format, unparseable answers in the metrics, the pipeline."""

import dataclasses
import math

import keras
import numpy as np
import pytest

from predcalc.data import reference_protocol
from predcalc.models import get_spec
from predcalc.models.token_heads import PLAIN, REVERSED, VOCABULARY, AnswerFormat
from predcalc.training import fit
from predcalc.training import metrics as M

TINY = {
    "d_model": 8,
    "num_heads": 2,
    "num_layers": 1,
    "ffn_units": 16,
    "dropout": 0.0,
    "readout_heads": 2,
    "readout_ffn_units": 16,
}


def _ids(tokens):
    return [VOCABULARY.index(t) for t in tokens]


@pytest.mark.parametrize(
    "value, plain, reversed_",
    [
        (17, ["+", "1", "7", "<end>", "<pad>"], ["+", "7", "1", "<end>", "<pad>"]),
        (-4, ["-", "4", "<end>", "<pad>", "<pad>"], ["-", "4", "<end>", "<pad>", "<pad>"]),
        (0, ["+", "0", "<end>", "<pad>", "<pad>"], ["+", "0", "<end>", "<pad>", "<pad>"]),
        (-120, ["-", "1", "2", "0", "<end>"], ["-", "0", "2", "1", "<end>"]),
    ],
)
def test_encoding_of_normal_and_reversed_answers(value, plain, reversed_):
    assert PLAIN.tokens(value) == plain and REVERSED.tokens(value) == reversed_
    assert PLAIN.encode([value]).tolist() == [_ids(plain)]
    assert REVERSED.encode([value]).tolist() == [_ids(reversed_)]
    assert PLAIN.encode_targets(np.array([float(value)]), tokenizer=None).dtype == np.int32


@pytest.mark.parametrize("answer_format", [PLAIN, REVERSED, AnswerFormat(digits=1, reversed=True)])
def test_round_trip_of_every_value_that_fits(answer_format):
    limit = 10**answer_format.digits
    values = np.arange(-limit + 1, limit, dtype=np.float64)
    ids = answer_format.encode(values)
    assert ids.shape == (len(values), answer_format.digits + 2)
    np.testing.assert_array_equal(answer_format.decode(ids), values)


@pytest.mark.parametrize(
    "tokens, plain, reversed_",
    [
        (["+", "1", "7", "<end>", "-"], 17, 71),  # slots after <end> are ignored
        (["+", "0", "7", "<end>", "<pad>"], 7, 70),  # leading zeros are accepted
        (["-", "0", "<end>", "<pad>", "<pad>"], 0, 0),
        (["1", "7", "<end>", "<pad>", "<pad>"], None, None),  # no sign
        (["+", "<end>", "<pad>", "<pad>", "<pad>"], None, None),  # no digit
        (["<end>", "1", "<pad>", "<pad>", "<pad>"], None, None),  # empty answer
        (["+", "1", "-", "2", "<end>"], None, None),  # a sign among the digits
        (["+", "1", "<pad>", "2", "<end>"], None, None),  # padding before <end>
        (["+", "1", "2", "3", "4"], None, None),  # four digits and no <end>
        (["-", "-", "3", "<end>", "<pad>"], None, None),
    ],
)
def test_decoding_and_unparseable_answers(tokens, plain, reversed_):
    for answer_format, expected in ((PLAIN, plain), (REVERSED, reversed_)):
        value = answer_format.decode(np.array([_ids(tokens)]))[0]
        if expected is None:
            assert math.isnan(value), (answer_format, tokens, value)
        else:
            assert value == expected


def test_greedy_decoding_of_logits():
    ids = REVERSED.encode([-23.0, 5.0, 0.0])
    logits = np.eye(len(VOCABULARY))[ids] * 3.0 - 1.0  # (3, slots, vocabulary)
    np.testing.assert_array_equal(REVERSED.values_from_logits(logits), [-23.0, 5.0, 0.0])
    np.testing.assert_array_equal(REVERSED.values_from_logits(logits.reshape(3, -1)), [-23.0, 5.0, 0.0])
    assert PLAIN.text(ids[0]) == "-32" and REVERSED.text(ids[0]) == "-32"


@pytest.mark.parametrize(
    "value, message",
    [
        (2.5, "holds an integer"),
        (float("nan"), "holds an integer"),
        (1000, "more than 3 digits"),
        (-1234, "more than 3 digits"),
    ],
)
def test_values_that_cannot_be_encoded(value, message):
    with pytest.raises(ValueError, match=message):
        PLAIN.encode([value])


def test_bad_format_and_shapes():
    with pytest.raises(ValueError, match="Received: digits=0"):
        AnswerFormat(digits=0)
    with pytest.raises(ValueError, match=r"shape \(n, 5\)"):
        PLAIN.decode(np.zeros((2, 4), int))


def test_metrics_count_an_unparseable_answer_as_wrong_and_as_zero():
    truth = np.array([3.0, -8.0, 0.0, 12.0])
    prediction = np.array([3.0, np.nan, np.nan, 10.0])
    assert M.exact_accuracy(truth, prediction) == 0.25
    # errors: 0, |-8| (NaN counts as 0), |0|, 2
    assert M.mae(truth, prediction) == pytest.approx((0 + 8 + 0 + 2) / 4)
    assert M.mre(truth, prediction) == pytest.approx((0 + 8 / 8 + 0 / 1 + 2 / 12) / 4)
    metrics = M.regression_metrics(truth, prediction)
    assert metrics["unparseable"] == 2 and metrics["n"] == 4 and np.isfinite(metrics["mae"])
    assert M.regression_metrics(truth, truth)["unparseable"] == 0


def test_registered_token_models():
    for name, answer_format in (
        ("transformer_tokens", PLAIN),
        ("transformer_tokens_reversed", REVERSED),
        ("lstm_tokens_reversed", REVERSED),
    ):
        spec = get_spec(name)
        assert spec.encode_targets([17.0], None).tolist() == answer_format.encode([17.0]).tolist()
        assert isinstance(spec.loss, keras.losses.SparseCategoricalCrossentropy)


@pytest.fixture(scope="module")
def small_protocol():
    protocol = reference_protocol(0)
    rng = np.random.default_rng(0)

    def keep(split, n):
        return split.subset(np.isin(np.arange(len(split)), rng.choice(len(split), n, replace=False)), split.name)

    return dataclasses.replace(protocol, train=keep(protocol.train, 256), validation=keep(protocol.validation, 64))


@pytest.mark.slow
def test_tiny_token_transformer_trains_and_evaluates_in_the_pipeline(small_protocol):
    trained = fit.train(
        "transformer_tokens_reversed",
        small_protocol,
        seed=0,
        epochs=4,
        batch_size=32,
        learning_rate=1e-2,
        model_kwargs=TINY,
    )
    loss = trained.history["loss"]
    assert loss[-1] < loss[0] and loss[-1] < math.log(len(VOCABULARY))  # better than a uniform guess
    test_sets = {"in": small_protocol.test_in, "out": small_protocol.test_out}
    metrics, predictions = fit.evaluate(trained, test_sets)
    x = trained.tokenizer.encode_batch(small_protocol.test_in.expressions)
    logits = trained.model.predict(x, verbose=0)
    assert logits.shape == (len(x), 5, len(VOCABULARY))
    np.testing.assert_array_equal(predictions["in"], REVERSED.decode(np.argmax(logits, -1)))
    for name, split in test_sets.items():
        assert metrics[name]["unparseable"] == int(np.isnan(predictions[name]).sum())
        assert metrics[name]["accuracy"] == M.exact_accuracy(split.values, predictions[name])
        assert np.isfinite(metrics[name]["mae"])


@pytest.fixture(scope="module")
def small_lstm_tokens(small_protocol):
    """A small reversed-answer LSTM token model, one epoch on the small protocol (two tests read it)."""
    return fit.train(
        "lstm_tokens_reversed",
        small_protocol,
        seed=0,
        epochs=1,
        model_kwargs={"units": 8, "readout_heads": 2, "readout_ffn_units": 8},
    )


@pytest.mark.slow
def test_lstm_token_model_trains_and_survives_a_keras_round_trip(small_protocol, small_lstm_tokens, tmp_path):
    trained = small_lstm_tokens
    path = tmp_path / "lstm_tokens.keras"
    trained.model.save(path)
    loaded = keras.saving.load_model(path)
    x = trained.tokenizer.encode_batch(small_protocol.test_long.expressions[:64])
    np.testing.assert_allclose(loaded.predict(x, verbose=0), trained.model.predict(x, verbose=0), atol=1e-5)
    np.testing.assert_array_equal(
        get_spec("lstm_tokens_reversed").predict_values(loaded, x), trained.spec.predict_values(trained.model, x)
    )


@pytest.mark.slow
@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="LiteRT export needs TensorFlow")
def test_token_model_exports_to_litert_and_decodes_the_same(small_protocol, tmp_path):
    from predcalc.deploy.export import LiteRTModel, export_trained

    trained = fit.train("transformer_tokens", small_protocol, seed=0, epochs=1, model_kwargs=TINY)
    test_sets = {"in": small_protocol.validation}
    report = export_trained(
        trained,
        tmp_path / "tokens",
        test_sets,
        small_protocol.train.expressions[:32],
        formats=("float32",),
        saved_model=False,
    )
    assert "error" not in report["float32"], report
    assert isinstance(report["float32"]["tf_select"], bool)
    assert report["float32"]["accuracy_change"]["in"] == 0.0
    assert report["float32"]["max_abs_diff"] == 0.0  # answers unparseable in both count as agreeing
    x = trained.tokenizer.encode_batch(small_protocol.validation.expressions)
    litert = LiteRTModel(tmp_path / "tokens" / "model_float32.tflite")(x)
    np.testing.assert_allclose(litert, trained.model.predict(x, verbose=0), atol=1e-4)
    np.testing.assert_array_equal(
        PLAIN.values_from_logits(litert), trained.predict(small_protocol.validation.expressions)
    )


@pytest.mark.slow
def test_predictor_decodes_an_exported_token_model(small_protocol, small_lstm_tokens, tmp_path):
    """predcalc.json names the answer format, so a .tflite token model predicts values, not logits."""
    import json

    from predcalc.deploy.export import export_trained
    from predcalc.deploy.predictor import Predictor

    # the answer format is the registered model's, whatever its size and training data: the small
    # model the round-trip test trained (the full-size one on 3,000 rows took 20 s more)
    protocol, trained = small_protocol, small_lstm_tokens
    directory = tmp_path / "tokens"
    export_trained(
        trained,
        directory,
        {"in": protocol.test_in.subset(np.arange(len(protocol.test_in)) < 20, "in")},
        protocol.train.expressions[:10],
        formats=("float32",),
        saved_model=False,
    )
    assert json.loads((directory / "predcalc.json").read_text())["answer_format"] == {"digits": 3, "reversed": True}
    expressions = list(protocol.test_in.expressions[:20])
    from_litert = Predictor(directory / "model_float32.tflite").predict(expressions)
    np.testing.assert_array_equal(
        np.nan_to_num(from_litert, nan=1e9), np.nan_to_num(trained.predict(expressions), nan=1e9)
    )
