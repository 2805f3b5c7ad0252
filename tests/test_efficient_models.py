"""The efficient gated RNN models (minGRU, minLSTM, sLSTM, mLSTM, Mamba) on the prior report's tokens."""

import dataclasses

import keras
import numpy as np
import pytest

from predcalc.data import reference_protocol
from predcalc.models import get_spec
from predcalc.training import fit

# the default sizes, counted by hand from the layer layouts (embedding 2e, layer(s), output neuron u + 1):
PARAMS = {
    "min_gru": 2 * 64 + 2 * (64 * 128 + 128) + 65,  # two [z | h~] projections
    "min_lstm": 2 * 64 + 2 * (64 * 192 + 192) + 65,  # two [f | i | h~] projections
    "slstm": 2 * 64 + (64 * 256 + 4 * 16 * 64 + 256) + 65,  # input kernel, 4 recurrent blocks, bias
    "mlstm": 2 * 64 + 2 * (64 * 264 + 264) + 65,  # [q | k | v | o] + 2 gates per head
    # Mamba(32, N 16, expand 2 -> d 64, dt_rank 2): in 32*128, conv 4*64+64, x 64*(2+32), dt 2*64+64,
    # A_log 64*16, D 64, out 64*32
    "mamba": 2 * 32 + 2 * (32 * 128 + 4 * 64 + 64 + 64 * 34 + 2 * 64 + 64 + 64 * 16 + 64 + 64 * 32) + 33,
}
NAMES = sorted(PARAMS)


@pytest.fixture(scope="module")
def small_protocol():
    """The reference protocol with 64 training and 32 validation expressions."""
    protocol = reference_protocol(0)
    train = protocol.train.subset(np.arange(len(protocol.train)) < 64, "train")
    validation = protocol.validation.subset(np.arange(len(protocol.validation)) < 32, "validation")
    return dataclasses.replace(protocol, train=train, validation=validation)


def test_parameter_counts():
    counts = {name: fit.build(name)[1].count_params() for name in NAMES}
    assert counts == PARAMS
    assert counts == {"min_gru": 16_833, "min_lstm": 25_153, "mamba": 19_937, "mlstm": 34_513, "slstm": 20_929}
    assert {get_spec(name).family for name in NAMES} == {"efficient RNN"}


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_trains_one_epoch_and_round_trips(name, small_protocol, tmp_path):
    trained = fit.train(name, small_protocol, seed=0, epochs=1, batch_size=32)
    assert trained.epochs == 1
    assert np.isfinite(trained.history["loss"][0]) and np.isfinite(trained.history["val_loss"][0])
    expressions = small_protocol.test_long.expressions[:16]  # 2 to 8 numbers
    before = trained.predict(expressions)
    assert before.shape == (16,) and np.all(np.isfinite(before))
    path = tmp_path / f"{name}.keras"
    trained.model.save(path)
    loaded = keras.saving.load_model(path)
    after = get_spec(name).predict_values(loaded, trained.tokenizer.encode_batch(list(expressions)))
    np.testing.assert_array_equal(after, before)


@pytest.mark.parametrize("name", ["min_lstm", "mamba"])  # the layers' own tests cover each layer's two paths
def test_parallel_and_step_paths_agree(name):
    """``parallel=False`` reaches the layers: the step loop gives the parallel scan's outputs."""
    _, parallel, tokenizer = fit.build(name, seed=1)
    _, stepwise, _ = fit.build(name, seed=2, parallel=False)
    stepwise.set_weights(parallel.get_weights())
    inputs = tokenizer.encode_batch(["3 - -2 + 4", "-5 + 4 - 1 + 2 - -3", "0 - 1"])
    np.testing.assert_allclose(
        stepwise.predict(inputs, verbose=0), parallel.predict(inputs, verbose=0), rtol=1e-5, atol=1e-5
    )


def test_bad_sizes_are_rejected():
    with pytest.raises(ValueError, match="layers must be at least 1. Received: layers=0"):
        fit.build("min_gru", layers=0)
    with pytest.raises(ValueError, match="embedding must be non-negative"):
        fit.build("mamba", embedding=-1)


def test_without_embedding_the_layer_reads_the_scalar_tokens():
    _, model, _ = fit.build("min_gru", embedding=0, layers=1, units=8)
    assert model.count_params() == (1 * 16 + 16) + 9
