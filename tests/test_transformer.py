"""The registered transformer models: the prior report's sizes, masking, attention maps."""

import numpy as np
import pytest

from predcalc.data import CharTokenizer, NumericTokenizer
from predcalc.models import get_spec
from predcalc.models.transformer import attention_maps
from predcalc.report.anchors import REFERENCE_ROWS
from predcalc.training import fit

TINY = {"d_model": 8, "num_heads": 2, "num_layers": 2, "ffn_units": 16}
EXPRESSIONS = ["3 - -2 + 4", "1 + 2 - 3 + 4 - 5 + -1"]


@pytest.mark.parametrize("name", ["transformer4", "transformer5"])
def test_regression_transformers_have_the_reference_parameter_counts(name):
    spec, model, _ = fit.build(name)
    assert model.count_params() == REFERENCE_ROWS[spec.reference_row]["params"]
    assert spec.optimizer.name == "adamw_cosine" and spec.loss == "mse"
    assert tuple(model.outputs[0].shape) == (None, 1)


def test_parameter_formula():
    d, layers, ffn = 16, 2, 24
    _, model, _ = fit.build("transformer4", d_model=d, num_heads=4, num_layers=layers, ffn_units=ffn)
    assert model.count_params() == 2 * d + layers * (4 * d**2 + 9 * d + 2 * d * ffn + ffn) + d + 1


def test_attention_maps_and_padding_mask():
    spec, model, tokenizer = fit.build("transformer4", mask_padding=True, **TINY)
    x = tokenizer.encode_batch(EXPRESSIONS)
    maps = attention_maps(model, x)
    assert sorted(maps) == ["encoder_1", "encoder_2"] and maps["encoder_1"].shape == (2, 2, 15, 15)
    real = x != tokenizer.pad  # (2, 15)
    for weights in maps.values():
        assert np.all(weights[0][:, :, ~real[0]] == 0)  # no token attends to padding
        np.testing.assert_allclose(weights[0][:, real[0]].sum(-1), 1.0, atol=1e-5)
    # masked, padding cannot reach the answer: the same weights on a shorter tokeniser agree
    short = NumericTokenizer(length=9)
    small = get_spec("transformer4").build(short, mask_padding=True, **TINY)
    small.set_weights(model.get_weights())
    np.testing.assert_allclose(
        small.predict(short.encode_batch(EXPRESSIONS[:1]), verbose=0), model.predict(x[:1], verbose=0), atol=1e-5
    )


def test_unmasked_model_reads_the_padding():
    _, model, tokenizer = fit.build("transformer4", **TINY)
    maps = attention_maps(model, tokenizer.encode_batch(EXPRESSIONS))
    assert np.all(maps["encoder_1"][0][:, :, 5:].sum(-1) > 0)  # the prior report's models attend to pad tokens too


def test_token_transformer_reads_character_ids_too():
    tokenizer = CharTokenizer(length=24)
    model = get_spec("transformer_tokens_reversed").build(
        tokenizer, mask_padding=True, readout_heads=2, readout_ffn_units=8, **TINY
    )
    x = tokenizer.encode_batch(EXPRESSIONS)
    assert model.predict(x, verbose=0).shape == (2, 5, 14)
    readout = attention_maps(model, x)["digit_readout"]  # (batch, heads, slots, time)
    assert readout.shape == (2, 2, 5, 24)
    assert np.all(readout[0][..., x[0] == CharTokenizer.PAD] == 0)


def test_attention_maps_needs_an_attention_layer():
    _, model, _ = fit.build("fnn2")
    with pytest.raises(ValueError, match="no attention layer"):
        attention_maps(model, NumericTokenizer().encode_batch(EXPRESSIONS))


def test_reference_recipe_models_and_schedule():
    import keras
    import numpy as np

    from predcalc.models import get_spec
    from predcalc.training import fit

    for name, params in (("transformer4_reference", 38209), ("transformer5_reference", 498241)):
        spec, model, tokenizer = fit.build(name)
        assert model.count_params() == params  # the prior report's published counts (the CLS token is a constant)
        assert spec.optimizer.name == "adamw_reference"
        assert model.get_layer("cls_token").value == 15.0
        assert model.get_layer("encoder_1").num_heads == 8
        out = model(tokenizer.encode_batch(["1 + 2 - 3", "4 - -5 + 1"]))
        assert out.shape == (2, 1)
    # warm-up floor(200/10) + 1 = 21 epochs to the peak, then cosine to 10 % of it
    schedule = fit.reference_schedule(200, 10)
    peak = fit.REFERENCE_PEAK_LEARNING_RATE
    assert float(schedule(0)) == 0.0
    np.testing.assert_allclose(float(schedule(105)), peak / 2, rtol=1e-5)
    np.testing.assert_allclose(float(schedule(210)), peak, rtol=1e-5)
    np.testing.assert_allclose(float(schedule(2000)), 0.1 * peak, rtol=1e-5)
    optimizer = fit.make_optimizer(get_spec("transformer4_reference"), 1e-3, 2000, epochs=200)
    assert isinstance(optimizer, keras.optimizers.AdamW)
    assert optimizer.weight_decay == 4e-3 and optimizer.beta_1 == 0.85 and optimizer.clipnorm == 1.0


def test_reference_schedule_peak_is_an_optimizer_option():
    spec = get_spec("transformer4_reference")
    optimizer = fit.make_optimizer(spec, 1e-3, 2000, epochs=200, peak_learning_rate=5e-4)
    np.testing.assert_allclose(float(optimizer.learning_rate), 0.0)  # warm-up starts at zero
    schedule = optimizer._learning_rate
    np.testing.assert_allclose(float(schedule(210)), 5e-4, rtol=1e-5)
    np.testing.assert_allclose(float(schedule(2000)), 5e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="adamw_reference"):
        fit.make_optimizer(get_spec("fnn2"), 1e-3, 2000, epochs=200, peak_learning_rate=5e-4)
    with pytest.raises(ValueError, match="positive"):
        fit.make_optimizer(spec, 1e-3, 2000, epochs=200, peak_learning_rate=0.0)


@pytest.mark.slow  # trains a transformer for one epoch (15 s on an idle 2-core machine)
def test_train_takes_the_reference_schedule_peak_from_model_kwargs():
    from predcalc.data import reference_protocol

    protocol = reference_protocol(0)
    # train() takes the peak from model_kwargs and passes the rest to the builder
    trained = fit.train(
        "transformer4_reference", protocol, epochs=1, model_kwargs={"peak_learning_rate": 5e-4, "cls": False}
    )
    assert "cls_token" not in [layer.name for layer in trained.model.layers]
    np.testing.assert_allclose(float(trained.model.optimizer._learning_rate.warmup_target), 5e-4)
    with pytest.raises(ValueError, match="adamw_reference"):
        fit.train("fnn2", protocol, epochs=1, model_kwargs={"peak_learning_rate": 5e-4})


def test_gated_transformer_reads_out_the_raw_values(tmp_path):
    import keras

    spec, model, tokenizer = fit.build("transformer4_gated", seed=0)
    assert spec.optimizer.name == "adamw_reference" and model.count_params() == 38210
    x = tokenizer.encode_batch(["1 + 2 - 3", "40 - -5 + 1"])
    readout = model.get_layer("value")
    features = keras.Model(model.inputs, readout.input[0])(x)
    gates = np.asarray(readout.gates(features))[..., 0]
    bias = float(np.asarray(readout.bias)[0])
    np.testing.assert_allclose(np.asarray(model(x))[:, 0], (gates * x).sum(axis=1) + bias, rtol=1e-4, atol=1e-5)
    model.save(tmp_path / "gated.keras")
    loaded = keras.models.load_model(tmp_path / "gated.keras")
    np.testing.assert_allclose(np.asarray(loaded(x)), np.asarray(model(x)), rtol=1e-6)


@pytest.mark.parametrize("squash", [False, True])
def test_local_transformer_gives_the_same_answer_at_any_padded_length(squash):
    from predcalc.data import NumericTokenizer

    spec, model, tokenizer = fit.build("transformer4_local", seed=0, squash_features=squash)
    assert model.count_params() == 38274 and spec.optimizer.name == "adamw_reference"
    assert ("squash" in [layer.name for layer in model.layers]) == squash
    longer_tokenizer = NumericTokenizer(length=41)
    longer = spec.build(longer_tokenizer, squash_features=squash)
    longer.set_weights(model.get_weights())  # no weight depends on the length
    expressions = ["1 + 2 - 3", "4 - -5 + 1 - 2 + 3 - 1 + 2"]
    np.testing.assert_allclose(
        np.asarray(longer(longer_tokenizer.encode_batch(expressions))),
        np.asarray(model(tokenizer.encode_batch(expressions))),
        rtol=1e-4,
        atol=1e-4,
    )
    # (26 more pad steps change nothing: padding is masked out of attention and of the sum)


def test_the_bounded_local_transformer_is_the_local_one_with_squashed_features():
    """transformer4_local_bounded names what sweeps/transformer4_local_squash.yaml trained."""
    _, bounded, tokenizer = fit.build("transformer4_local_bounded", seed=3)
    _, squashed, _ = fit.build("transformer4_local", seed=3, squash_features=True)
    for a, b in zip(bounded.get_weights(), squashed.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    x = tokenizer.encode_batch(["1 + 2 - 3", "4 - -5 + 1"])
    np.testing.assert_array_equal(np.asarray(bounded(x)), np.asarray(squashed(x)))
    assert "squash" in [layer.name for layer in bounded.layers]


def test_the_reference_tuners_dropout_adds_no_weight_and_drops_the_input_and_the_pooled_vector():
    from predcalc.training.fit import build

    _, plain, _ = build("transformer5_reference", num_layers=2, d_model=32, ffn_units=128)
    _, dropped, _ = build("transformer5_reference", num_layers=2, d_model=32, ffn_units=128, dropout=0.05)
    assert plain.count_params() == dropped.count_params()
    names = {layer.name for layer in dropped.layers}
    assert {"input_dropout", "pooled_dropout"} <= names and not {"input_dropout", "pooled_dropout"} & {
        layer.name for layer in plain.layers
    }
