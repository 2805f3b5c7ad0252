import numpy as np
import pytest

from predcalc.data import seed_protocol
from predcalc.models import MODELS, get_spec
from predcalc.training import fit


@pytest.fixture(scope="module")
def protocol():
    return seed_protocol(0)


def test_fnn_parameter_counts_match_the_seed():
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
    assert set(scores["validation"]) == {"mae", "mre", "accuracy", "n", "unparseable", "signed", "mre_seed"}
    assert scores["validation"]["unparseable"] == 0  # a regression head always answers


def test_bad_epochs(protocol):
    with pytest.raises(ValueError, match="epochs must be positive"):
        fit.train("fnn2", protocol, epochs=0)
