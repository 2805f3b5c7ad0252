import pytest

from predcalc.data import seed_protocol
from predcalc.data.extended import extended_suite
from predcalc.training.experiment import run_seeds


@pytest.fixture(scope="module")
def protocol():
    return seed_protocol(0)


@pytest.mark.slow
def test_extra_test_sets_are_scored_in_every_seed_record(protocol):
    suite = extended_suite(seed=0, train_size=50, test_size=4, operators="+-", parentheses=False)
    results = run_seeds(["fnn_baseline"], protocol, seeds=[0, 1], epochs=1, progress=False,
                        extra_test_sets={"digits_2": suite["digits_2"].split})
    runs = results.models["fnn_baseline"].runs
    assert [run["seed"] for run in runs] == [0, 1]
    for run in runs:
        assert run["metrics"]["digits_2"]["n"] == 4 and {"in", "out", "long"} <= set(run["metrics"])


def test_extra_test_sets_may_not_shadow_the_protocol(protocol):
    with pytest.raises(ValueError, match="must not reuse the protocol's names"):
        run_seeds(["fnn_baseline"], protocol, seeds=[0], epochs=1, progress=False,
                  extra_test_sets={"out": protocol.test_out})


@pytest.mark.slow
def test_worker_processes_give_the_sequential_records_and_first_model(protocol):
    import numpy as np

    kwargs = dict(seeds=[0, 1], epochs=2, progress=False)
    sequential = run_seeds(["fnn_baseline"], protocol, **kwargs)
    parallel = run_seeds(["fnn_baseline"], protocol, workers=2, **kwargs)
    one, two = sequential.models["fnn_baseline"], parallel.models["fnn_baseline"]
    assert [r["seed"] for r in two.runs] == [0, 1]
    for a, b in zip(one.runs, two.runs):
        assert a["epochs"] == b["epochs"] and a["best_val_loss"] == pytest.approx(b["best_val_loss"], rel=1e-6)
        assert a["metrics"]["in"]["mae"] == pytest.approx(b["metrics"]["in"]["mae"], rel=1e-6)
    # the first seed's model comes back with its trained weights: it predicts what the worker scored
    expressions = protocol.test_in.expressions[:50]
    np.testing.assert_allclose(two.first.predict(expressions), two.predictions["in"][:50], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(two.first.predict(expressions), one.first.predict(expressions), rtol=1e-5, atol=1e-5)
    assert two.first.history["loss"] == pytest.approx(one.first.history["loss"], rel=1e-6)


def test_workers_must_be_positive(protocol):
    with pytest.raises(ValueError, match="workers must be at least 1"):
        run_seeds(["fnn_baseline"], protocol, seeds=[0], epochs=1, progress=False, workers=0)
