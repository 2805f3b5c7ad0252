"""The sign scan's discrete patterns: the enumeration's count, the Keras scores against a NumPy
reference of the layer's equations, the known solution exact and wrong patterns not, the search's
odds, the trained seeds' rounding and their summary, and one-line errors on bad input."""

import dataclasses
import json

import numpy as np
import pytest

from predcalc.data import make_split, reference_protocol, signed_terms
from predcalc.paths import RUNS
from predcalc.studies import sign_scan_search as study
from predcalc.training.exact import ExactRecipe
from predcalc.training.metrics import exact_accuracy


@pytest.fixture(scope="module")
def sets():
    train = reference_protocol(0).train
    small = train.subset(np.arange(len(train)) < 200, "training")
    long = make_split("long", ["3 - -2 + 4 - 7 + 1 - 9 - 9 + 2 - 1", "100 - 250 + 999", "-5 - 5 - 5"])
    return {study.TRAINING: small, "long": long}


# the solution, its sign flip, wrong gates, a wrong sign, a number gate open, and a zero readout
CHECKED = [
    study.SOLUTION,
    study.Pattern((1, 1, 0), (-1, 1, 1), -1, -1),
    study.Pattern((1, 1, 1), (1, -1, 0), 1, 1),
    study.Pattern((1, 0, 0), (1, -1, 0), 1, 1),
    study.Pattern((1, 1, 0), (1, -1, 0), -1, 1),
    study.Pattern((0, 1, 1), (-1, 1, 1), -1, 1),
    study.Pattern((1, 1, 0), (1, -1, 0), 1, 0),
]


@pytest.fixture(scope="module")
def scores(sets):
    return study.score_patterns(CHECKED, sets)


def reference_answer(pattern: study.Pattern, expression: str) -> float:
    """The layer's equations in NumPy: gate open where the type's logit minus 1 is above 0; the state
    overwritten by the type's candidate where open; the sum of value times state times readout."""
    logits = np.where(np.asarray(pattern.gates) == 1, study.OPEN_LOGIT, study.SHUT_LOGIT)
    state, total = float(pattern.initial), 0.0
    for item in signed_terms(expression):
        kind = {"+": 0, "-": 1}.get(item, 2)
        value = 0.0 if kind < 2 else float(item)
        if logits[kind] - 1.0 > 0:
            state = float(pattern.candidate[kind])
        total += value * state
    return total * pattern.readout


def test_every_pattern_is_enumerated_once():
    patterns = study.enumerate_patterns(3)
    assert len(patterns) == study.pattern_count(3) == 2**3 * 3**3 * 9 == 1944
    assert len(set(patterns)) == len(patterns)
    assert study.SOLUTION in patterns
    assert len(study.enumerate_patterns(1)) == 2 * 3 * 9


def test_the_layer_has_as_many_types_as_the_typed_tokens():
    _, layer, _ = study.scan_model()
    assert int(layer.gate_kernel.shape[0]) == len(study.type_names()) == 3
    assert float(layer.gate_bias.numpy()[0]) == -1.0  # the fixed offset: a gate opens iff its logit > 1


def test_keras_scores_match_the_numpy_reference(sets, scores):
    for i, pattern in enumerate(CHECKED):
        for name, split in sets.items():
            answers = [reference_answer(pattern, e) for e in split.expressions]
            assert scores[name][i] == exact_accuracy(split.values, answers), (pattern.code(), name)


def test_the_solution_and_its_sign_flip_are_exact_and_wrong_patterns_are_not(scores):
    assert [scores[study.TRAINING][i] for i in (0, 1)] == [1.0, 1.0]
    assert [scores["long"][i] for i in (0, 1)] == [1.0, 1.0]
    assert all(scores[study.TRAINING][i] < 1.0 for i in range(2, len(CHECKED)))
    assert CHECKED[0].function() == CHECKED[1].function() == "gates 110 | W_h r +-. | s0 r +"


def test_bad_input_gives_a_clear_one_line_error(sets):
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="types must be a positive integer") as error:
            study.enumerate_patterns(bad)
        assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="none of them empty"):
        study.score_patterns(CHECKED, {})
    _, layer, _ = study.scan_model()
    with pytest.raises(ValueError, match="the pattern has 2 types; the layer reads 3"):
        study.set_pattern(layer, study.Pattern((1, 1), (1, -1), 1, 1))
    with pytest.raises(ValueError, match="fixed offset"):
        study.scan_model(ExactRecipe(learn_offset=True))
    with pytest.raises(ValueError, match="exact <= patterns"):
        study.search_odds(10, 11)
    with pytest.raises(ValueError, match="lack readout"):
        study.nearest_pattern({"gate_kernel": [0.0], "candidate_kernel": [0.0], "initial_state": [0.0]})


def test_search_odds():
    odds = study.search_odds(1944, 6)
    assert odds["share"] == pytest.approx(1 / 324)
    assert odds["expected_draws"] == pytest.approx(324.0)
    assert odds["expected_draws_without_replacement"] == pytest.approx(1945 / 7)
    assert odds["at_least_one"]["10"] == pytest.approx(1 - (323 / 324) ** 10)
    assert odds["none_in"]["10000"] == pytest.approx((323 / 324) ** 10_000)
    assert study.search_odds(10, 0)["expected_draws"] is None


def test_trained_weights_round_to_their_pattern():
    exact = {"gate_kernel": [1.8, 2.2, -0.14], "candidate_kernel": [1.0, -1.0, 0.7], "initial_state": [1.0]}
    pattern, distance = study.nearest_pattern({**exact, "readout": [1.0]})
    assert pattern == study.Pattern((1, 1, 0), (1, -1, 1), 1, 1)
    assert distance == 0.0  # the number's candidate (0.7) is not read: its gate is shut
    stuck = {"gate_kernel": [-1.19, 1.5, 7.6], "candidate_kernel": [-1.0, 1.0, 0.55], "initial_state": [-1.0]}
    pattern, distance = study.nearest_pattern({**stuck, "readout": [0.61]})
    assert pattern == study.Pattern((0, 1, 1), (-1, 1, 1), -1, 1)
    assert distance == pytest.approx(0.45)


def synthetic_record(heldout_exact: bool):
    patterns = study.enumerate_patterns(1)  # 54 patterns; index 0 and 1 made training-exact below
    scores = {study.TRAINING: np.zeros(len(patterns)), study.HELDOUT + "x": np.zeros(len(patterns))}
    scores[study.TRAINING][:2] = 1.0
    scores[study.HELDOUT + "x"][:2] = 1.0 if heldout_exact else 0.5
    record = study.search_record(patterns, scores)
    record["data"] = {"protocol_seed": 0, "sizes": {study.TRAINING: 9}, "heldout": {"seed": 5151, "count": 3}}
    return record


def test_the_record_says_whether_fitting_the_training_split_pins_the_rule():
    pinned = synthetic_record(True)
    assert pinned["exact"]["training"] == 2 and pinned["exact"]["heldout"] == 2
    assert pinned["heldout_given_training"] == 1.0
    assert pinned["search"]["expected_draws"] == pytest.approx(27.0)  # 54 / 2
    loose = synthetic_record(False)
    assert loose["exact"]["heldout"] == 0 and loose["heldout_given_training"] == 0.0


def test_the_trained_seeds_summary_counts_landed_and_off_pattern_seeds():
    run = {"function": "f", "distance": 0.0, "training_exact": True, "everywhere": True}
    record = {
        "trained": {
            "choosing": {"0": run, "4": {**run, "function": "g", "distance": 0.45, "training_exact": False}},
            "fresh": {"10": {**run, "distance": 0.25, "everywhere": False}},
        }
    }
    summary = study.trained_summary(record)
    assert (summary["seeds"], summary["training_exact"], summary["everywhere"]) == (3, 2, 1)
    assert summary["distance"] == 0.25 and summary["functions"] == ["f"] and summary["off_pattern"] == [4]
    assert study.trained_summary({})["seeds"] == 0


def test_the_stored_record_counts_every_pattern():
    path = RUNS / "34_sign_scan_search" / "metrics.json"
    if not path.is_file():
        pytest.skip("no stored full run of 34_sign_scan_search")
    record = json.loads(path.read_text())
    assert record["count"] == study.pattern_count(len(record["types"])) == len(record["training_accuracy"])
    assert record["exact"]["training"] == sum(a == 1.0 for a in record["training_accuracy"])
    assert record["exact"]["everywhere"] <= record["exact"]["training"]
    assert record["exact_per_set"][study.TRAINING] == record["exact"]["training"]
    summary = study.trained_summary(record)
    assert summary["seeds"] == 20 and summary["training_exact"] + len(summary["off_pattern"]) == 20


@pytest.mark.slow  # two short training runs
def test_gradient_descent_is_traced_step_by_step_on_the_same_run():
    from predcalc.studies import sign_scan_descent as descent

    codes = {p.code() for p in study.enumerate_patterns(3) if p.function() == study.SOLUTION.function()}
    recipe = dataclasses.replace(ExactRecipe(), steps=200, decay=False)  # the shipped rate, held: 200 steps
    trace = descent.descent_trace(reference_protocol(0), seed=10, recipe=recipe, exact_codes=codes)
    coarse = trace["first_model_exact_coarse"]
    assert coarse is not None and coarse % 100 == 0
    assert coarse - 100 < trace["first_model_exact"] <= coarse  # the step-by-step run pins it inside the interval
    assert trace["first_rounded_exact"] <= trace["first_model_exact"]  # exact weights round to an exact pattern
    assert trace["fine_check_difference"] == 0.0  # the step-by-step rerun is the same run


def test_the_descent_summary_prices_the_search_at_each_seeds_count():
    from predcalc.studies import sign_scan_descent as descent

    runs = {
        "1": {"first_model_exact": 87, "first_model_exact_coarse": 100},
        "2": {"first_model_exact": None, "first_model_exact_coarse": 300},
        "3": {"first_model_exact": None, "first_model_exact_coarse": None},
    }
    summary = descent.descent_summary(runs, 1944, 6)
    assert (summary["seeds"], summary["reached"], summary["fewest"], summary["most"]) == (3, 2, 87, 300)
    assert summary["search_within_fewest"] == pytest.approx(1 - (323 / 324) ** 87)
