"""What the calculator is given, read from its code; each given piece taken away; the box of its claims."""

import numpy as np
import pytest

from predcalc.calculator import box, engine, given, given_ablations, given_study, rules, tokens
from predcalc.calculator.box import claim_box
from predcalc.calculator.steps import STEPS


def test_the_given_encodings_and_value_targets_are_those_of_the_code(monkeypatch):
    for name in rules.RULES:
        found = given.features(name)
        assert found["staircase"]["period"] == rules.RULES[name].period
    assert given.features("muldigit")["products"] == ["a * d"]
    monkeypatch.setitem(given.FEATURES, "muldigit", ("a", "d", "carry", "a * d"))  # the order matters too
    with pytest.raises(AssertionError, match="no longer matches"):
        given.features("muldigit")
    monkeypatch.setitem(given.VALUES, "addsub", "a + b + carry")
    with pytest.raises(AssertionError, match="VALUES"):
        given.features("addsub")


def test_the_kind_features_and_schedule_rows_come_from_the_code():
    kinds = {row["kind"]: row for row in given.kind_features()}
    assert [kinds[op]["precedence level"] for op in "+-*/"] == [1, 1, 2, 2]
    assert [kinds[op]["inverts"] for op in "+-*/"] == [0, 1, 0, 1]
    rows = {row["where"]: row["given"] for row in given.schedule()}
    assert "5 rounds per decimal digit" in rows["Engine.gcd"]
    assert f"{engine.MAX_DIGIT_PRODUCT:,}" in rows["engine.MAX_DIGIT_PRODUCT"]
    assert f"{tokens.MAX_CHARACTERS:,}" in rows["tokens.MAX_CHARACTERS"]


def test_the_given_table_names_each_steps_learned_weights():
    table = {row["step"]: row for row in given.given_table({"muldigit": {"trained_on": 153, "reachable": 460}})}
    assert set(table) == set(STEPS)
    assert table["muldigit"]["learned_parameters"] == 15 and "staircase/alpha" in table["muldigit"]["learned"]
    assert table["muldigit"]["trained_on"] == "153 of 460"
    assert table["sign"]["kind"].startswith("memorised")


def test_without_the_product_feature_muldigit_reads_a_d_and_the_carry_only():
    domain = STEPS["muldigit"].domain()
    shipped = rules.RULES["muldigit"].features(rules._NumpyOps, domain)
    taken = given_ablations.variant_rule("muldigit", "no_product").features(rules._NumpyOps, domain)
    assert np.array_equal(taken, shipped[:, 1:]) and np.array_equal(shipped[:, 0], domain[:, 1] * domain[:, 2])
    assert given_ablations.variant_rule("addsub", "no_product") is rules.RULES["addsub"]


def test_the_learned_levels_control_is_the_shipped_control_at_the_given_levels():
    """With its levels set to KIND_FEATURES' levels, the variant computes exactly the shipped
    relational control's pair tables: it differs in the levels alone."""
    from predcalc.calculator.nets import DenseStep

    model = given_ablations.build_control_learned_levels(seed=3)
    layer = model.get_layer("pairwise")
    rng = np.random.default_rng(0)
    weights = [rng.normal(size=layer.relation_weights.shape), rng.normal(size=layer.class_bias.shape)]
    thresholds = np.array([0.5, -0.5])
    layer.relation_weights.assign(weights[0])
    layer.class_bias.assign(weights[1])
    layer.thresholds.assign(thresholds)
    layer.levels.assign(rules.KIND_FEATURES[:, 4])
    windows = STEPS["control"].domain()
    shipped = DenseStep("control", rules.control_tables([*weights, thresholds]))
    assert np.array_equal(given_ablations.learned_levels_step(model)(windows), shipped(windows))


def test_the_held_out_check_counts_wrong_decisions_on_unseen_inputs_only():
    step = STEPS["addsub"]
    rows = step.reachable()[:100]

    def wrong_on_two(x):
        out = step.reference(x)
        flip = np.isin(step.index(x), step.index(step.reachable()[[5, 300]]))  # one seen, one held out
        out[flip, 0] = (out[flip, 0] + 1) % 10
        return out

    assert given_ablations.held_out_check("addsub", step.reference, rows)["held_out_wrong"] == 0
    found = given_ablations.held_out_check("addsub", wrong_on_two, rows)
    assert (found["held_out_wrong"], found["wrong"], found["held_out"]) == (1, 2, 300)


def test_end_to_end_scores_a_broken_step_without_breaking():
    draw = {"tiny": [("12 * 34", "408"), ("2 + 3", "5"), ("7 * 8 - 1", "55")]}
    assert given_ablations.end_to_end("muldigit", STEPS["muldigit"].reference, draw)["exact"] == 1.0

    def out_of_range(x):  # a rounded linear unit can leave its class range
        return np.full((len(x), 2), 23, np.int64)

    found = given_ablations.end_to_end("muldigit", out_of_range, draw)
    assert found["n"] == 3 and found["exact"] == pytest.approx(1 / 3)  # only the sum survives


def _part(variant, seed, wrong):
    steps = {
        name: {
            "held_out": 300,
            "held_out_wrong": wrong,
            "wrong": wrong,
            "train_exact": 1.0,
            "end_to_end": {"exact": 1.0, "n": 16},
        }
        for name in given_ablations.VARIANTS[variant]
        if name != "control"
    }
    if variant == "learned_levels":
        steps = {"control": {"held_out": 446, "held_out_wrong": wrong, "wrong": wrong + 1, "train_exact": 0.98}}
    return {"variant": variant, "seed": seed, "steps": steps, "backend": "tensorflow"}


def test_the_given_fields_put_every_seed_and_the_exact_seed_count_in_the_tables():
    parts = {
        "given": {str(s): _part("given", s, w) for s, w in ((100, 0), (101, 7), (102, 0))},
        "no_product": {str(s): _part("no_product", s, 250) for s in (100, 101, 102)},
        "learned_levels": {str(s): _part("learned_levels", s, w) for s, w in ((15, 0), (16, 21))},
    }
    control = {str(s): {"reachable": 669, "trained_on": 223, "held_out_wrong": 0, "margin": 0.9} for s in (15, 16, 17)}
    record = {
        "steps": {},
        "calculator": {
            "boxes": {"all_axes": {"digits": [14, 20], "operators": [5, 40], "depth": [3, 10], "answer_digits": 9}}
        },
    }
    parameters = {"expressions": 200, "draw_n": 1, "draw_seed": 7777}
    record.update(given_study.given_fields(record, parts, control, parameters))
    rows = {(r["step"], r["variant"]): r for r in record["given"]["ablations"]}
    assert rows[("muldigit", "given")]["held_out_wrong"] == [0, 7, 0]
    assert rows[("muldigit", "given")]["exact_seeds"] == 2
    assert rows[("muldigit", "no_product")]["exact_seeds"] == 0
    assert rows[("control", "given")]["seeds"] == [15, 16]  # beside the learned levels, on their seeds
    assert rows[("control", "learned_levels")]["held_out_wrong"] == [0, 21]
    fresh = {r["step"]: r for r in record["given"]["fresh_steps"]}
    assert fresh["control"]["seeds"] == [15, 16, 17] and fresh["addsub"]["exact_seeds"] == 2
    frame = given_study.variant_frame(record["given"]["ablations"], record["given"]["labels"])
    shown = {(r["step"], r["variant"]): r for r in frame.to_dict("records")}
    taken = shown[("muldigit", given_ablations.VARIANT_LABELS["no_product"])]
    assert (taken["seeds"], taken["exact seeds (held-out)"], taken["of"]) == ("100, 101, 102", 0, 3)
    assert taken["held-out inputs"] == 300 and taken["wrong on held-out (per seed)"] == "250, 250, 250"
    levels = shown[("control", given_ablations.VARIANT_LABELS["learned_levels"])]
    assert (levels["exact seeds (held-out)"], levels["exact seeds (all inputs)"], levels["of"]) == (1, 0, 2)
    assert levels["wrong on held-out (per seed)"] == "0, 21" and levels["end to end % (per seed)"] == "not scored"
    fresh_frame = given_study.variant_frame(record["given"]["fresh_steps"])
    assert "variant" not in fresh_frame and "trained rows right % (per seed)" not in fresh_frame
    texts = given_study.given_texts(record["given"])
    assert texts["given_draw_seed"] == "7777" and texts["given_backends"] == "tensorflow"
    assert box.box_texts(record["box"])["box_operators"] == "40"


def test_the_claim_box_is_the_largest_value_each_axis_reached():
    draws = {
        "development": {
            "digits_21_50": {"digits": [23, 50], "operators": [1, 4], "depth": [0, 2], "answer_digits": 100},
            "all_axes": {"digits": [14, 20], "operators": [5, 40], "depth": [3, 10], "answer_digits": 100},
        },
        "held_out": {"adversarial": {"digits": [10, 65], "operators": [1, 1], "depth": [0, 0], "answer_digits": 118}},
    }
    box = claim_box(draws)
    assert box["reached"]["digits"] == {"largest": 65, "families": ["held_out:adversarial"]}
    assert box["reached"]["operators"]["largest"] == 40 and box["reached"]["depth"]["largest"] == 10
    assert box["joint"] == {
        "development": {"digits": [14, 20], "operators": [5, 40], "depth": [3, 10], "answer_digits": 100}
    }
    assert box["refused"] == {"digit_product": engine.MAX_DIGIT_PRODUCT, "characters": tokens.MAX_CHARACTERS}
    # the drawn families' reach and the adversarial family's fixed patterns are told apart
    assert box["drawn"]["digits"] == 50 and box["adversarial"] == {
        "digits": 65,
        "operators": 1,
        "depth": 0,
        "answer_digits": 118,
    }


def test_the_glued_box_gives_the_drawn_reach_the_joint_family_the_adversarial_one_and_the_limits():
    boxes = {
        "digits_21_50": {"digits": [23, 50], "operators": [1, 4], "depth": [0, 2], "answer_digits": 100},
        "all_axes": {"digits": [14, 20], "operators": [5, 40], "depth": [3, 10], "answer_digits": 100},
    }
    held_out = {**boxes, "adversarial": {"digits": [10, 65], "operators": [1, 1], "depth": [0, 0], "answer_digits": 9}}
    measured = box.record_box({"calculator": {"boxes": boxes}, "held_out": {"boxes": held_out}})
    texts = box.box_texts(measured)
    assert (texts["box_digits"], texts["box_operators"], texts["box_depth"]) == ("50", "40", "10")
    assert (texts["box_joint_digits"], texts["box_joint_operators"], texts["box_joint_depth"]) == (
        "14-20",
        "5-40",
        "3-10",
    )
    assert texts["box_adversarial_digits"] == "65"  # the fixed patterns apart from the drawn families
    assert texts["box_refused_product"] == "100,000,000" and texts["box_refused_characters"] == "1,000,000"
    frame = box.box_frame(measured)
    assert frame.loc["digits", "drawn families (largest)"] == 50 and frame.loc["depth", "all_axes (range)"] == "3-10"
    assert box.box_texts(box.record_box({"calculator": {"boxes": boxes}}))["box_adversarial_digits"] == "not scored"


@pytest.mark.slow
def test_the_given_variant_trains_exactly_as_the_shipped_rule_step():
    from predcalc.calculator.train import rule_training_rows, trace
    from predcalc.data.calculator_families import TRAINING_WORLD

    rows = rule_training_rows(trace(TRAINING_WORLD, 60, 0), 0)["addsub"]
    model, _ = rules.train_rule("addsub", rows, seed=0, epochs=250, minimum=250)
    function, _ = given_ablations.train_rule_variant("addsub", rows, seed=0, epochs=250, minimum=250)
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), function.weights))
