"""The calculator's learned parts: networks, tables, checks, export parity and exact scoring."""

import numpy as np
import pytest

from predcalc.calculator.steps import STEPS, TableStep
from predcalc.data.exact_answers import in_lowest_terms, parse_answer, score_answers, value_answer

keras = pytest.importorskip("keras")

from predcalc.calculator.nets import DenseStep, build_step, check_step, train_step  # noqa: E402


def test_exact_scoring_tells_30_digit_answers_apart():
    truth = "123456789012345678901234567890"
    near = "123456789012345678901234567891"
    assert score_answers([truth, truth], [truth, near])["right"] == [True, False]
    assert float(truth) == float(near)  # the reason floats cannot score this
    assert value_answer(float(truth)) != truth  # a float prediction of a 30-digit answer is not exact


def test_answers_compare_as_rationals_and_lowest_terms_is_counted_apart():
    scored = score_answers(["3/2", "-5", "7"], ["6/4", "-5/1", "seven"])
    assert scored["right"] == [True, True, False]
    assert scored["lowest_terms"] == 0.0
    assert in_lowest_terms("3/2") and in_lowest_terms("-5") and not in_lowest_terms("6/4")
    assert parse_answer("1/0") is None and parse_answer(" -12 ") == -12


def test_dense_step_is_the_keras_forward_pass():
    for name in STEPS:
        model = build_step(name, seed=3)
        domain = STEPS[name].domain()[:500]
        heads = model(domain, training=False)
        heads = heads if isinstance(heads, (list, tuple)) else [heads]
        if name == "control":
            expected = np.stack([np.asarray(h)[:, 1] > 0 for h in heads], axis=1).astype(np.int64)
        else:
            expected = np.stack([np.argmax(np.asarray(h), axis=-1) for h in heads], axis=1)
        assert (DenseStep.from_model(model)(domain) == expected).all(), name


def test_table_step_equals_the_function_it_memoises():
    step = DenseStep.from_model(build_step("muldigit", seed=1))
    table = TableStep("muldigit", step)
    rows = np.random.default_rng(0).integers(0, 10, (300, 3))
    assert (table(rows) == step(rows)).all()


def test_check_step_finds_wrong_decisions():
    untrained = check_step("compare", DenseStep.from_model(build_step("compare", seed=0)))
    assert untrained["inputs"] == 300 and untrained["wrong"] > 0
    assert check_step("compare", STEPS["compare"].reference)["wrong"] == 0
    assert check_step("muldigit", STEPS["muldigit"].reference)["inputs"] == len(STEPS["muldigit"].reachable())


@pytest.mark.slow
def test_a_step_learns_its_whole_table():
    name = "compare"
    model, info = train_step(name, STEPS[name].domain(), seed=0)
    assert info["train_exact"] == 1.0
    assert check_step(name, DenseStep.from_model(model))["wrong"] == 0


def test_litert_export_matches_keras_on_every_input(tmp_path):
    from predcalc.calculator.export import export_litert, parity
    from predcalc.calculator.runtime import Calculator, is_calculator

    networks = {name: build_step(name, seed=2) for name in STEPS}
    path = export_litert(networks, tmp_path / "model.tflite")
    assert is_calculator(path)
    assert parity(networks, path) == {name: 0 for name in STEPS}
    tabulated, direct = Calculator(path, cache=True), Calculator(path)
    expressions = ["1 + 2", "3 * (4 - 5)", "7 / 2"]
    assert tabulated.answers(expressions) == direct.answers(expressions)


def test_gru_adder_numpy_path_equals_keras():
    from predcalc.calculator import ablations

    rng = np.random.default_rng(0)
    sequences = rng.integers(0, 10, (40, 6, 3))
    sequences[:, :, 0] = rng.integers(0, 2, (40, 1))
    model = ablations.train_gru_adder(sequences, seed=0, carry_targets=True, epochs=1)
    digits, _ = model(sequences.astype(np.int32), training=False)
    numpy_digits = ablations.gru_addsub(model)(sequences[:, :, 1], sequences[:, :, 2], sequences[:, 0, 0])
    assert (np.argmax(np.asarray(digits), axis=-1) == numpy_digits).all()


def test_rule_steps_export_to_litert_as_their_numpy_computation(tmp_path):
    from predcalc.calculator.export import export_litert, parity
    from predcalc.calculator.nets import numpy_step
    from predcalc.calculator.rules import RULES, build_control_rule, build_rule

    networks = {name: build_rule(name, seed=1) for name in RULES}
    for model in networks.values():  # weights near the rule, so the decisions are not all alike
        model.get_layer("value").set_weights(
            [np.ones((model.get_layer("value").get_weights()[0].shape[0], 1)), np.zeros(1)]
        )
    networks["control"] = build_control_rule(seed=1)
    rng = np.random.default_rng(1)
    networks["control"].get_layer("pairwise").set_weights(
        [rng.normal(size=w.shape) for w in networks["control"].get_layer("pairwise").get_weights()]
    )
    path = export_litert(networks, tmp_path / "model.tflite")
    assert parity(networks, path) == {name: 0 for name in networks}
    windows = STEPS["control"].domain()[:3000]
    keras_ready = np.asarray(networks["control"](windows)[0])[:, 1] > 0  # the factored Keras model itself
    assert (numpy_step(networks["control"])(windows)[:, 0] == keras_ready).all()
    decisions = numpy_step(networks["muldigit"])(STEPS["muldigit"].domain())
    assert len(np.unique(decisions, axis=0)) > 5


def test_rule_training_rows_are_a_third_of_the_reachable_inputs_from_traces():
    from predcalc.calculator.train import TINY, rule_training_rows, trace
    from predcalc.data.calculator_families import TRAINING_WORLD

    data = trace(TRAINING_WORLD, 60, seed=3)
    rows = rule_training_rows(data, seed=3)
    again = rule_training_rows(data, seed=3)
    for name, step in STEPS.items():
        reachable = len(step.reachable())
        assert (rows[name] == again[name]).all()  # fixed by the seed
        if reachable <= TINY:
            assert len(rows[name]) == reachable
        else:
            assert len(rows[name]) <= reachable // 3
            assert np.isin(step.index(rows[name]), step.index(data[name])).all()  # only inputs the traces showed


@pytest.mark.slow
def test_a_rule_step_is_exact_on_the_two_thirds_it_never_saw():
    from predcalc.calculator.nets import numpy_step
    from predcalc.calculator.rules import train_rule

    reachable = STEPS["addsub"].reachable()
    rows = reachable[np.random.default_rng(0).choice(len(reachable), len(reachable) // 3, replace=False)]
    model, info = train_rule("addsub", rows, seed=0)
    assert info["parameters"] < 20
    assert check_step("addsub", numpy_step(model))["wrong"] == 0


@pytest.mark.slow
def test_the_schedule_steps_are_exact_on_every_reachable_input():
    """Seed 0: ``qdigit`` (63 reachable inputs) as a rule on at most a third of them, from traces of
    short expressions, and ``lead`` (20) memorised on all its rows; both checked on every input."""
    from predcalc.calculator.nets import numpy_step
    from predcalc.calculator.rules import train_rule
    from predcalc.calculator.train import rule_training_rows, trace
    from predcalc.data.calculator_families import TRAINING_WORLD

    rows = rule_training_rows(trace(TRAINING_WORLD, 200, seed=0), seed=0)
    assert len(rows["qdigit"]) <= len(STEPS["qdigit"].reachable()) // 3
    model, info = train_rule("qdigit", rows["qdigit"], seed=0)
    assert info["parameters"] < 20
    assert check_step("qdigit", numpy_step(model))["wrong"] == 0
    assert len(rows["lead"]) == len(STEPS["lead"].reachable()) == 20
    model, _ = train_step("lead", rows["lead"], seed=0)
    assert check_step("lead", DenseStep.from_model(model))["wrong"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])  # the seeds whose third left the old factored control 20 and 13 wrong
def test_the_control_is_exact_on_every_window_after_a_third_of_them(seed):
    from predcalc.calculator.nets import numpy_step
    from predcalc.calculator.rules import train_control
    from predcalc.calculator.train import rule_training_rows, trace
    from predcalc.data.calculator_families import TRAINING_WORLD

    rows = rule_training_rows(trace(TRAINING_WORLD, 200, seed), seed)["control"]
    assert len(rows) <= len(STEPS["control"].reachable()) // 3
    # 2,000 of the recipe's 10,000 full-batch steps: on both seeds already exact on every window, margin
    # 0.93 (0.96 after 10,000), in a third of the time; the longer steps only widen the margin
    model, info = train_control(rows, seed=seed, steps=2_000)
    assert info["train_exact"] == 1.0 and info["margin"] > 0
    assert check_step("control", numpy_step(model))["wrong"] == 0  # all 669 windows, the unseen two thirds included
