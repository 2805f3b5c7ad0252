"""The study's summary of the ablations: inside vs beyond the training world, and what carries it."""

import json

from predcalc.calculator import study


def _record():
    boxes = {
        "iid": {"digits": [1, 5], "operators": [1, 4], "depth": [0, 2]},
        "digits_6_10": {"digits": [6, 10], "operators": [1, 4], "depth": [0, 2]},
        "depth_3_4": {"digits": [1, 5], "operators": [1, 4], "depth": [3, 4]},
    }

    def summary(iid, digits, depth, seeds=5):
        return {
            name: {"mean": value, "min": value - 0.1 * (value > 0.1), "seeds": seeds, "n": 100}
            for name, value in (("iid", iid), ("digits_6_10", digits), ("depth_3_4", depth))
        }

    return {
        "calculator": {
            "boxes": boxes,
            "training_box": study.TRAINING_BOX,
            "labels": study.ABLATION_LABELS,
            "summary": {
                "untrained": summary(0.0, 0.0, 0.0),
                "pick": summary(1.0, 0.9, 0.7),
                "calculator": summary(1.0, 1.0, 1.0),
                "continuous_state": summary(0.6, 0.2, 0.3),
                "answers_only": summary(0.5, 0.1, 0.3),
            },
        }
    }


def test_inside_world_keeps_the_families_within_every_axis_of_the_box():
    assert study.inside_world(_record()["calculator"]["boxes"]) == {"iid"}


def test_ablation_rows_split_inside_and_beyond_and_order_the_models():
    rows = study.ablation_rows(_record())
    assert [row["kind"] for row in rows] == ["calculator", "continuous_state", "pick", "answers_only", "untrained"]
    pick = rows[2]
    assert pick["inside"] == 1.0 and abs(pick["beyond"] - 0.8) < 1e-12
    assert abs(pick["lost_beyond"] - 0.2) < 1e-12
    assert pick["worst_family"] == "depth_3_4" and abs(pick["worst_seed"] - 0.6) < 1e-12


def test_carrier_rows_weigh_each_swap_inside_and_beyond_and_against_the_seed_spread():
    record = _record()
    rows = {row["kind"]: row for row in study.carrier_rows(record)}
    # swaps below 90 % inside their own training world are flagged: not compared beyond it
    assert not rows["answers_only"]["competent"] and not rows["continuous_state"]["competent"]
    assert rows["pick"]["competent"] and rows["calculator"]["competent"]
    assert rows["answers_only"]["against"] == "continuous_state" and rows["pick"]["against"] == "calculator"
    assert abs(rows["answers_only"]["lost_inside_against"] - 0.1) < 1e-12
    assert abs(rows["pick"]["lost_beyond_against"] - 0.2) < 1e-12 and rows["pick"]["lost_inside_against"] == 0
    assert rows["pick"]["learns_step"] and rows["pick"]["resolved"] is None  # no per-seed ranges: not judged
    assert "against" not in rows["calculator"] and "against" not in rows["untrained"]
    texts = study.carrier_texts(record)
    assert texts["ablation_pick_lost_beyond"] == "20.0" and texts["ablation_pick_lost_inside"] == "0.0"
    assert texts["ablation_answers_only_inside"] == "50.0\u00a0%" and texts["ablation_competent"] == "90\u00a0%"
    assert "ablation_untrained_lost_beyond" not in texts and texts["ablation_lost_inside"] == "5"
    record["calculator"]["summary"]["pick"] = {
        k: {**v, "mean": 0.9} for k, v in record["calculator"]["summary"]["pick"].items()
    }
    assert not study.carrier_rows(record)[2]["learns_step"]  # competent, but 10 points lost inside
    record["calculator"]["per_seed"] = {
        "calculator": [{"inside": 1.0, "beyond": b} for b in (1.0, 0.99)],
        "pick": [{"inside": 1.0, "beyond": b} for b in (0.98, 0.995)],  # overlaps the calculator's range
        "continuous_state": [{"inside": 0.6, "beyond": b} for b in (0.2, 0.3)],
    }
    frame = study.carrier_frame(record)
    assert frame.loc["pick", "resolved"] == "no" and frame.loc["continuous_state", "resolved"] == "yes"
    assert frame.loc["continuous_state", "competent"] == "no" and frame.loc["calculator", "resolved"] == ""


def test_cached_parts_are_keyed_by_every_parameter_they_read(tmp_path):
    """A rerun with other parameters computes its own part (and replaces the old one); the same
    parameters read it back without computing."""
    from predcalc.calculator import study

    calls = []

    def part(size, epochs=2):
        calls.append((size, epochs))
        return {"size": size, "epochs": epochs}

    size = 10
    first = study.cached(tmp_path, "seed_0", lambda: part(size))
    assert study.cached(tmp_path, "seed_0", lambda: part(size)) == first
    assert first == {"size": 10, "epochs": 2}
    assert study.code_versions(tmp_path) == [study.code_fingerprint()]  # the file keeps the fingerprint
    assert calls == [(10, 2)]
    size = 20  # the closure reads the new value: another digest, computed again
    assert study.cached(tmp_path, "seed_0", lambda: part(size))["size"] == 20
    assert study.cached(tmp_path, "seed_0", lambda s=size: part(s, epochs=3))["epochs"] == 3
    assert calls == [(10, 2), (20, 2), (20, 3)]
    (tmp_path / "seed_1.json").write_text("{}")  # another key is left alone
    assert [p.name.split("-")[0] for p in sorted(tmp_path.glob("*.json"))] == ["seed_0", "seed_1.json"]
    explicit = study.cached(tmp_path, "bench", lambda: {"n": 5}, parameters={"n": 5})
    assert study.cached(tmp_path, "bench", lambda: {"n": 6}, parameters={"n": 5}) == explicit


def test_cached_parts_are_recomputed_after_the_calculators_code_changes(tmp_path, monkeypatch):
    """The code fingerprint is part of the key: changed code computes the part again; a docstring,
    a comment or formatting does not change the fingerprint."""
    import importlib
    import sys

    from predcalc.calculator import cache, study

    assert study.cached(tmp_path, "seed_0", lambda: {"n": 1})["n"] == 1
    monkeypatch.setattr(cache, "code_fingerprint", lambda: "000000000000")
    assert study.cached(tmp_path, "seed_0", lambda: {"n": 2}) == {"n": 2}
    assert study.code_versions(tmp_path) == ["000000000000"]
    assert len(list(tmp_path.glob("seed_0*.json"))) == 1  # the older code's part is replaced

    monkeypatch.undo()
    monkeypatch.syspath_prepend(str(tmp_path))
    module = tmp_path / "fingerprinted_example.py"

    def fingerprint(text):
        module.write_text(text)
        importlib.invalidate_caches()
        sys.modules.pop("fingerprinted_example", None)
        return study.code_fingerprint(("fingerprinted_example",))

    plain = fingerprint("def f(x):\n    return x + 1\n")
    assert (
        fingerprint('"""A module."""\n\n\ndef f(x):  # a comment\n    """Adds one."""\n    return (x + 1)\n') == plain
    )
    assert fingerprint("def f(x):\n    return x + 2\n") != plain


def test_the_step_record_keeps_the_worst_seed_and_the_glued_values_read_it():
    def seed(trained_on, held_out_wrong, exact):
        steps = {
            "addsub": {
                "reachable": 400,
                "trained_on": trained_on,
                "held_out_wrong": held_out_wrong,
                "wrong": held_out_wrong,
                "memorised": False,
                "parameters": 16,
            },
            "xor": {
                "reachable": 4,
                "trained_on": 4,
                "held_out_wrong": 0,
                "wrong": 0,
                "memorised": True,
                "parameters": 130,
            },
        }
        return {"steps": steps, "families": {"iid": {"exact": exact, "lowest_terms": 1.0, "n": 10}}}

    records = [seed(120, 0, 1.0), seed(133, 2, 0.9)]
    steps = study.step_record(records)
    assert steps["addsub"]["trained_on"] == 133 and steps["addsub"]["held_out_wrong"] == 2
    assert steps["xor"]["memorised"] and steps["addsub"]["seeds"] == 2
    bench = {
        label: {path: {"ratio": ratio} for path, ratio in (("forward", 8.0), ("cache", 5.0))}
        for label in ("integers", "with_division")
    }
    fields = study.ladder_fields(records, bench, {"rules": {"n": 10, "exact": 1.0}})
    assert fields["speed"] == {
        "forward": {"integers": 8.0, "division": 8.0},
        "cache": {"integers": 5.0, "division": 5.0},
    }
    texts = study.family_texts(fields["ladder"]["rules"], "rules")
    assert texts["rules_lowest"] == "95.00\u00a0%" and texts["rules_worst_seed"] == "90.00\u00a0%"
    assert texts["rules_wrong"] == "1" and texts["rules_seeds"] == "2" and texts["rules_n"] == "10"


def test_the_adversarial_family_is_scored_on_every_seed_of_a_rung(monkeypatch):
    from fractions import Fraction

    from predcalc.calculator import runtime
    from predcalc.data.calculator_families import answer
    from predcalc.data.expressions import evaluate

    class Exact:  # a stand-in for a seed's exported calculator: the "bad" file misses every other answer
        def __init__(self, path):
            self.bad = str(path) == "bad.tflite"

        def answers(self, expressions):
            return [
                "0" if self.bad and i % 2 else answer(Fraction(evaluate(text))) for i, text in enumerate(expressions)
            ]

    monkeypatch.setattr(runtime, "Calculator", Exact)
    scores = study.adversarial_scores({"rules": ["a.tflite", "bad.tflite"], "memorised": "a.tflite"}, n=8)
    assert scores["rules"]["seeds"] == 2 and scores["rules"]["per_seed"] == [1.0, 0.5]
    assert scores["rules"]["exact"] == 0.75 and scores["rules"]["min"] == 0.5 and scores["rules"]["n"] == 8
    assert scores["memorised"]["seeds"] == 1 and scores["memorised"]["exact"] == 1.0


def test_the_held_out_draw_is_fresh_and_scored_on_every_seed(monkeypatch):
    """A second draw of the families (the protocol's fixed sets left out) and of the adversarial
    family, scored through every seed's file; its overlap with the development draw is counted."""
    from fractions import Fraction

    from predcalc.calculator import runtime
    from predcalc.data.calculator_families import answer
    from predcalc.data.expressions import evaluate

    class Exact:  # a seed's exported calculator, stood in: the "bad" file misses every answer
        def __init__(self, path):
            self.bad = str(path) == "bad.tflite"

        def answers(self, expressions):
            return ["x" if self.bad else answer(Fraction(evaluate(text))) for text in expressions]

    monkeypatch.setattr(runtime, "Calculator", Exact)
    development = study.families(n=4, seed=1000, names=["iid", "digits_6_10"])
    held_out = study.held_out_scores(["a.tflite", "bad.tflite"], n=4, seed=7777, development=development)
    scores = held_out["families"]
    assert {"seed_in", "seed_out", "seed_long"}.isdisjoint(scores) and "adversarial" in scores
    assert "seed_long_2_14" in scores and all(v["seeds"] == 2 for v in scores.values())
    assert all(v["mean"] == 0.5 and v["min"] == 0.0 for v in scores.values())
    assert held_out["expressions"] == 4 * len(scores) and held_out["family_seed"] == 7777
    again = study.held_out_scores(["a.tflite"], n=4, seed=1000, development=development)
    assert again["shared_with_development"] == 8  # the same seed draws the same iid and digits_6_10
    assert held_out["shared_with_development"] < 8
    texts = study.family_texts(scores, "held_out")
    assert texts["held_out_worst_seed"] == "0.00\u00a0%" and texts["held_out_lowest"] == "50.00\u00a0%"
    assert texts["held_out_wrong"] == str(4 * len(scores)) and texts["held_out_families"] == str(len(scores))


def test_code_versions_lists_each_fingerprint_of_the_parts_once(tmp_path):
    for name, code in (("a", "1"), ("b", "1"), ("c", "2")):
        (tmp_path / f"{name}.json").write_text(json.dumps({"code": code, "result": {}}))
    assert study.code_versions(tmp_path) == ["1", "2"]


def test_speed_verdicts_need_every_round_on_one_side_of_the_goal():
    def entry(ratios):
        return {"ratio": sorted(ratios)[len(ratios) // 2], "ratios": ratios}

    bench = {
        "n": 100,
        "operators": 10,
        "repeats": 3,
        "integers": {"forward": entry([9.0, 9.5, 10.5]), "cache": entry([7.0, 8.0, 9.0])},
        "with_division": {"forward": entry([40.0, 44.0, 45.0]), "cache": entry([12.0, 13.0, 14.0])},
        "latency_ms": {"forward": 7.5, "cache": 3.0, "python": 0.05},
    }
    assert study.speed_verdicts(bench) == {
        "forward": {"integers": "not resolved", "with_division": "not met"},
        "cache": {"integers": "met", "with_division": "not met"},
    }
    texts = study.speed_texts(bench)
    assert texts["speed_forward_integers"] == "9.5x" and texts["speed_forward_integers_rounds"] == "9.0-10.5"
    assert texts["speed_latency_python"] == "0.050" and texts["speed_goal"] == "10x"
    assert texts["speed_forward_integers_verdict"] == "not resolved"
    assert texts["speed_forward_division_verdict"] == "not met"
    frame = study.speed_frame(bench)
    assert frame.loc[("cache", "integers"), "within 10x"] == "met"
    assert frame.loc[("forward", "with_division"), "highest round"] == 45.0


def test_zero_wrong_answers_bound_the_error_rate():
    assert abs(study.error_bound(0, 500) - (1 - 0.05 ** (1 / 500))) < 1e-9  # the exact one-sided bound
    assert study.CONFIDENCE == 0.95 and f"{100 * study.error_bound(0, 500):.2f}" == "0.60"  # per family and seed


def test_the_axis_figure_gives_every_model_its_own_cell_with_its_worst_seed(tmp_path, monkeypatch):
    from predcalc.calculator import tables

    boxes = {name: {"digits": [1, d], "operators": [1, 4], "depth": [0, 2]} for name, d in (("a", 5), ("b", 20))}
    axes_of = {"digits": ["b", "a"], "operators": ["a"], "depth": ["a"]}
    results = {
        "rules": {n: {"mean": 1.0, "min": 1.0} for n in boxes},
        "calculator": {n: {"mean": 1.0, "min": 1.0} for n in boxes},  # the same score: two cells, not one line
        "pick": {n: {"mean": 0.8, "min": 0.5} for n in boxes},
    }
    monkeypatch.setattr(tables, "AXIS_FAMILIES", axes_of)
    figure = study.plot_axes(results, boxes, path=tmp_path / "axes.png", labels={"rules": "shipped"})
    first = figure.axes[0]
    rows = [t.get_text().replace("\n", " ") for t in first.get_yticklabels()]  # long labels wrap
    assert rows[:2] == ["shipped", study.ABLATION_LABELS["calculator"]]
    assert [t.get_text() for t in first.get_xticklabels()] == ["1-5 (in)", "1-20"]  # by the largest value
    cells = [t.get_text() for t in first.texts]
    assert cells == ["100", "100", "100", "100", "80.0\n(min 50)", "80.0\n(min 50)"]
    assert first.images[0].get_array().shape == (3, 2)
    assert (tmp_path / "axes.png").is_file()
