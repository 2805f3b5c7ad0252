import pytest

from predcalc.data import seed_protocol
from predcalc.data.extended import extended_suite
from predcalc.experiment import run_seeds


@pytest.fixture(scope="module")
def protocol():
    return seed_protocol(0)


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
