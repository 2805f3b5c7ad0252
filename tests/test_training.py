import numpy as np
import pytest

from predcalc.data import reference_protocol
from predcalc.models import MODELS, get_spec
from predcalc.training import fit


@pytest.fixture(scope="module")
def protocol():
    return reference_protocol(0)


def test_fnn_parameter_counts_match_the_reference():
    assert fit.build("fnn2")[1].count_params() == 6211
    assert fit.build("fnn_baseline")[1].count_params() == 15 * 30 + 30 + 30 + 30 * 30 + 30 + 30 + 31


def test_unknown_model_names_the_registered_ones():
    with pytest.raises(ValueError, match="unknown model 'fnn9'; registered models: .*fnn2"):
        get_spec("fnn9")
    assert {"fnn_baseline", "fnn2"} <= set(MODELS)


@pytest.mark.slow
def test_same_seed_same_model_other_seed_other_model(protocol):
    a = fit.train("fnn_baseline", protocol, seed=3, epochs=2)
    b = fit.train("fnn_baseline", protocol, seed=3, epochs=2)
    c = fit.train("fnn_baseline", protocol, seed=4, epochs=2)
    for wa, wb in zip(a.model.get_weights(), b.model.get_weights()):
        np.testing.assert_array_equal(wa, wb)
    assert a.history == b.history
    assert not np.array_equal(a.model.get_weights()[0], c.model.get_weights()[0])


@pytest.mark.slow
def test_training_learns_and_early_stopping_restores_the_best_epoch(protocol):
    trained = fit.train("fnn2", protocol, seed=0, epochs=12, patience=2, learning_rate=0.05)
    history = trained.history
    assert history["loss"][-1] < history["loss"][0] / 5
    scores, predictions = fit.evaluate(trained, {"validation": protocol.validation})
    best = min(history["val_loss"])
    mse = float(np.mean((predictions["validation"] - protocol.validation.values) ** 2))
    assert mse == pytest.approx(best, rel=1e-3)  # the restored weights are the best epoch's
    assert set(scores["validation"]) == {"mae", "mre", "accuracy", "n", "unparseable", "signed", "mre_reference"}
    assert scores["validation"]["unparseable"] == 0  # a regression head always answers


def test_bad_epochs(protocol):
    with pytest.raises(ValueError, match="epochs must be positive"):
        fit.train("fnn2", protocol, epochs=0)


def test_specs_state_answer_format_length_and_optimizer():
    from predcalc.data.answers import REVERSED
    from predcalc.models import Optimizer

    tokens = get_spec("transformer_tokens_reversed")
    assert tokens.answer_format == REVERSED and tokens.predict_values == REVERSED.predict_values
    assert get_spec("fnn2").answer_format is None and get_spec("fnn2").optimizer == Optimizer("adam")
    assert get_spec("lstm").variable_length and get_spec("mamba_bounded").variable_length
    assert not get_spec("transformer4").variable_length and not get_spec("bilstm_attention").variable_length
    assert get_spec("transformer5_reference").optimizer == Optimizer("adamw_reference", peak_learning_rate=2e-4)
    assert fit.reference_peak(get_spec("transformer4_reference")) == fit.REFERENCE_PEAK_LEARNING_RATE
    assert (
        fit.reference_peak(get_spec("transformer5_reference")) == 2e-4 and fit.reference_peak(get_spec("fnn2")) is None
    )


def test_a_new_optimizer_is_one_registered_recipe(monkeypatch):
    import dataclasses

    import keras

    from predcalc.models import Optimizer

    monkeypatch.setitem(
        fit.OPTIMIZERS, "sgd_test", fit.Recipe(lambda rate, steps, epochs, peak: keras.optimizers.SGD(rate))
    )
    spec = dataclasses.replace(get_spec("fnn2"), optimizer=Optimizer("sgd_test"))
    assert isinstance(fit.make_optimizer(spec, 0.1, 10), keras.optimizers.SGD)
    with pytest.raises(ValueError, match="unknown optimizer 'nope' of fnn2"):
        fit.make_optimizer(dataclasses.replace(spec, optimizer=Optimizer("nope")), 0.1, 10)


def test_model_variants_are_presets_of_one_builder():
    import functools

    for variant, base, preset in [
        ("transformer5", "transformer4", {"d_model": 64, "num_layers": 6}),
        ("mamba_bounded", "mamba", {"bounded_state": True}),
        ("transformer4_local_bounded", "transformer4_local", {"squash_features": True}),
    ]:
        build = get_spec(variant).build
        assert isinstance(build, functools.partial) and build.func is get_spec(base).build
        assert preset.items() <= build.keywords.items()
    assert (
        fit.build("transformer5", d_model=32, num_heads=4, num_layers=3, ffn_units=128)[1].count_params()
        == fit.build("transformer4")[1].count_params()
    )  # a caller's own arguments still win
