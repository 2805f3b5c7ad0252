"""The arithmetic-unit models (nau_nmu, nau_nmu_dense): the weights of the exact solution make them
exact on every protocol test set (so the stack can express the rule), they train and reload, and
notebook 11's study reads their record."""

import keras
import numpy as np
import pytest

from predcalc.data import reference_protocol
from predcalc.studies import arithmetic_units as study
from predcalc.training import fit
from predcalc.training.fit import run_record


@pytest.fixture(scope="module")
def protocol():
    return reference_protocol(0)


def solve_per_term(model):
    """Products o x, o x, x and one unused (all weights 0: the constant 1), added with 1, 1, -1, 0."""
    model.get_layer("nmu").kernel.assign(np.array([[1, 1, 0, 0], [1, 1, 1, 0]], "float32"))
    model.get_layer("nau").kernel.assign(np.array([[1], [1], [-1], [0]], "float32"))


def solve_dense(model):
    """The same three products for each of the 8 (operator, number) pairs of the 16 values."""
    nmu, nau = np.zeros((16, 24), "float32"), np.zeros((24, 1), "float32")
    for pair in range(8):
        operator, number, unit = 2 * pair, 2 * pair + 1, 3 * pair
        nmu[[operator, number], unit] = nmu[[operator, number], unit + 1] = 1.0
        nmu[number, unit + 2] = 1.0
        nau[unit : unit + 3, 0] = (1.0, 1.0, -1.0)
    model.get_layer("nmu").kernel.assign(nmu)
    model.get_layer("nau").kernel.assign(nau)


@pytest.mark.parametrize("name, solve", [("nau_nmu", solve_per_term), ("nau_nmu_dense", solve_dense)])
def test_the_solution_weights_are_exact_on_every_test_set(protocol, name, solve):
    spec, model, tokenizer = fit.build(name)
    solve(model)
    for split in protocol.test_sets().values():
        predicted = model.predict(tokenizer.encode_batch(split.expressions), verbose=0).reshape(-1)
        np.testing.assert_array_equal(predicted, split.values)


def test_every_weight_is_learned_and_none_starts_at_the_solution():
    for name, count in (("nau_nmu", 2 * 4 + 4), ("nau_nmu_dense", 16 * 24 + 24)):
        _, model, _ = fit.build(name)
        assert sum(int(np.prod(w.shape)) for w in model.trainable_weights) == count
        kernels = [keras.ops.convert_to_numpy(model.get_layer(unit).kernel).ravel() for unit in ("nmu", "nau")]
        assert study.grid_distance(np.concatenate(kernels)).min() > 0  # no weight starts at -1, 0 or 1


def test_an_even_token_count_is_refused():
    from predcalc.data import NumericTokenizer
    from predcalc.models import get_spec

    with pytest.raises(ValueError, match="odd number of tokens"):
        get_spec("nau_nmu").build(NumericTokenizer(length=14))


@pytest.mark.slow
def test_trains_records_its_weights_and_round_trips(protocol, tmp_path):
    trained = fit.train("nau_nmu", protocol, seed=0, epochs=2)
    record = run_record(trained, {})
    assert np.asarray(record["learned_weights"]["nmu"]).shape == (2, 4)
    assert np.asarray(record["learned_weights"]["nau"]).shape == (4, 1)
    assert float(keras.ops.convert_to_numpy(trained.model.get_layer("nmu").training_steps)) == 2 * 60  # 1,892 / 32
    path = tmp_path / "nau_nmu.keras"
    trained.model.save(path)
    reloaded = keras.saving.load_model(path)
    x = trained.tokenizer.encode_batch(protocol.test_long.expressions)
    np.testing.assert_array_equal(reloaded.predict(x, verbose=0), trained.model.predict(x, verbose=0))


def _record(accuracies, kernels):
    runs = [
        {
            "seed": seed,
            "epochs": 10,
            "metrics": {s: {"accuracy": a, "mae": 1 - a} for s, a in zip(("in", "out", "long"), acc, strict=True)},
            "learned_weights": kernel,
        }
        for seed, (acc, kernel) in enumerate(zip(accuracies, kernels, strict=True))
    ]
    return {"label": "units", "params": 14, "runs": runs}


def test_the_study_counts_exact_seeds_and_weights_on_the_grid():
    on = {"nmu": [[1, 1, 0], [1, 1, 1]], "nau": [[1], [1], [-1]]}  # the rule
    off = {"nmu": [[1, 0.3, 0], [1, 1, 1]], "nau": [[1], [1], [-1]]}  # o x + (0.3 o + 0.7) x - x
    shared = _record([(1.0, 1.0, 1.0), (1.0, 0.5, 1.0)], [on, off])
    dense = _record([(1.0, 1.0, 0.25), (1.0, 1.0, 0.5)], [on, on])
    record = {"models": {"nau_nmu": shared, "nau_nmu_dense": dense}, "parameters": {"epochs": 10}}
    summary = study.model_summary(shared)
    assert summary["learned"] == 9 and summary["on_grid"] == [0]
    assert summary["sets"]["out"] == {"label": "out of range", "exact_seeds": 1, "low": 0.5, "high": 1.0, "n": 2}
    assert study.comparison(record, "nau_nmu", "nau_nmu_dense", "long") == "above"
    assert study.comparison(record, "nau_nmu", "nau_nmu_dense", "out") == "not resolved"
    weights = study.weight_table(record)
    assert list(weights["off the grid"]) == [0, 1, 0, 0]
    assert weights["largest distance from -1/0/1"].iloc[1] == pytest.approx(0.3)
    assert len(study.seed_table(record)) == 4
    assert summary["rule"] == {"seeds": 1, "largest": pytest.approx(0.7)}  # o x 1.3 and x -0.3 on seed 1


def test_the_term_function_is_read_exactly_from_the_weights():
    """Products o x, o x, x added with 1, 1, -1 are the rule; so are o x twice split 0.3 / 1.7 (clamped to
    0.3 / 1.0 here, so the o x coefficient is 1.3), which the function shows and the weights alone do not."""
    exact = {"nmu": [[1, 1, 0, 0], [1, 1, 1, 0]], "nau": [[1], [1], [-1], [0]]}
    assert study.term_function(exact) == pytest.approx(study.RULE)
    assert study.rule_distance(study.term_function(exact)) == pytest.approx(0.0)
    split = {"nmu": [[1, 1, 0], [1, 1, 1]], "nau": [[0.3], [1.0], [-1.0]]}
    assert study.term_function(split) == pytest.approx({"o x": 1.3, "x": -1.0, "o": 0.0, "1": 0.0})
    unused = {"nmu": [[0.2, 1, 0], [0.7, 1, 1]], "nau": [[0.5], [1.0], [0.0]]}  # (0.2 o + 0.8)(0.7 x + 0.3) / 2
    assert study.term_function(unused) == pytest.approx({"o x": 1.07, "x": 0.28, "o": 0.03, "1": 0.12})
    assert study.term_function({"nmu": np.ones((16, 3)).tolist(), "nau": [[1], [1], [1]]}) is None


def test_heldout_summary_counts_exact_seeds_per_held_out_set():
    from predcalc.studies import arithmetic_units

    def run(a, b):
        metrics = {"in": {"accuracy": 1.0}, "heldout_31/digits_exactly_4": {"accuracy": a}}
        return {"metrics": {**metrics, "heldout_5151/digits_6": {"accuracy": b}}}

    rows = arithmetic_units.heldout_summary({"runs": [run(1.0, 0.5), run(1.0, 0.0)]})
    assert [(r["suite"], r["set"], r["exact_seeds"], r["low"], r["high"]) for r in rows] == [
        ("the held-out edge suite", "digits_exactly_4", 2, 1.0, 1.0),
        ("the sign scan's held-out suite", "digits_6", 0, 0.0, 0.5),
    ]
    assert set(arithmetic_units.heldout_sets()) >= {"heldout_31/digits_exactly_4", "heldout_5151/digits_6"}
    assert not any("terms_40" in name for name in arithmetic_units.heldout_sets())  # 79 tokens: unreadable
