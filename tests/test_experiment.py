import pytest

from predcalc.data import reference_protocol
from predcalc.data.extended import extended_suite
from predcalc.training.experiment import run_seeds


@pytest.fixture(scope="module")
def protocol():
    return reference_protocol(0)


@pytest.mark.slow
def test_extra_test_sets_are_scored_in_every_seed_record(protocol):
    suite = extended_suite(seed=0, train_size=50, test_size=4, operators="+-", parentheses=False)
    results = run_seeds(
        ["fnn_baseline"],
        protocol,
        seeds=[0, 1],
        epochs=1,
        progress=False,
        extra_test_sets={"digits_2": suite["digits_2"].split},
    )
    runs = results.models["fnn_baseline"].runs
    assert [run["seed"] for run in runs] == [0, 1]
    for run in runs:
        assert run["metrics"]["digits_2"]["n"] == 4 and {"in", "out", "long"} <= set(run["metrics"])


def test_extra_test_sets_may_not_shadow_the_protocol(protocol):
    with pytest.raises(ValueError, match="must not reuse the protocol's names"):
        run_seeds(
            ["fnn_baseline"], protocol, seeds=[0], epochs=1, progress=False, extra_test_sets={"out": protocol.test_out}
        )


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


def test_checkpoints_resume_a_stopped_run_without_retraining(protocol, tmp_path, monkeypatch):
    import numpy as np

    from predcalc.training import experiment

    kwargs = dict(seeds=[0, 1], epochs=1, progress=False, checkpoints=tmp_path)
    first = run_seeds(["fnn_baseline"], protocol, **kwargs)
    assert len(list(tmp_path.glob("fnn_baseline-seed*.json"))) == 2
    assert len(list(tmp_path.glob("*.weights.h5"))) == 1  # only the first seed's model is kept

    def no_training(*args, **kwargs):
        raise AssertionError("a checkpointed run was trained again")

    monkeypatch.setattr(experiment, "_train_job", no_training)
    again = run_seeds(["fnn_baseline"], protocol, **kwargs)
    one, two = first.models["fnn_baseline"], again.models["fnn_baseline"]
    assert one.runs == two.runs
    expressions = protocol.test_in.expressions[:20]
    np.testing.assert_allclose(one.first.predict(expressions), two.first.predict(expressions), rtol=1e-6)
    np.testing.assert_array_equal(one.predictions["out"], two.predictions["out"])

    with pytest.raises(AssertionError, match="trained again"):  # another job is not taken from the store
        run_seeds(["fnn_baseline"], protocol, **{**kwargs, "epochs": 2})
    next(tmp_path.glob("fnn_baseline-seed1-*.json")).unlink()  # as if stopped during seed 1
    with pytest.raises(AssertionError, match="trained again"):
        run_seeds(["fnn_baseline"], protocol, **kwargs)


def test_checkpoints_default_to_the_environment_variable(protocol, tmp_path, monkeypatch):
    from predcalc.training.experiment import CHECKPOINTS_VARIABLE

    monkeypatch.setenv(CHECKPOINTS_VARIABLE, str(tmp_path / "store"))
    run_seeds(["fnn_baseline"], protocol, seeds=[0], epochs=1, progress=False)
    assert len(list((tmp_path / "store").glob("fnn_baseline-seed0-*.json"))) == 1
