"""Notebook 35's study (predcalc.studies.rounded_transformer): the budget rule, the summaries of a
stored record (exact numbers on a small synthetic record), and the ONNX file read at a longer length
matching Keras."""

import types

import numpy as np
import pytest

from predcalc.data import make_split
from predcalc.deploy.predictor import Predictor
from predcalc.studies import rounded_transformer as study
from predcalc.studies.edges import at_input_length
from predcalc.training.fit import build


def test_the_first_budget_with_every_seed_exact_everywhere_is_kept():
    runs = {
        8: {0: {"in": 1.0, "long": 0.9}, 1: {"in": 1.0, "long": 1.0}},
        16: {0: {"in": 1.0, "long": 1.0}, 1: {"in": 1.0, "long": 1.0}},
        32: {0: {"in": 1.0, "long": 1.0}, 1: {"in": 1.0, "long": 1.0}},
    }
    choice = study.choose_budget(runs)
    assert choice["epochs"] == 16
    assert choice["table"][8] == {"seeds": 2, "exact_everywhere": 1, "exact_pairs": 3, "pairs": 4, "mean": 0.975}
    assert choice["how"].startswith("every choosing seed")


def test_without_such_a_budget_the_most_exact_pairs_then_the_mean_then_fewer_epochs_win():
    runs = {
        8: {0: {"a": 1.0, "b": 0.5}, 1: {"a": 0.9, "b": 0.5}},  # 1 pair, mean 0.725
        16: {0: {"a": 1.0, "b": 0.6}, 1: {"a": 0.9, "b": 0.5}},  # 1 pair, mean 0.75
        32: {0: {"a": 1.0, "b": 0.6}, 1: {"a": 0.9, "b": 0.5}},  # the same as 16: fewer epochs win
    }
    assert study.choose_budget(runs)["epochs"] == 16
    runs[8][1]["a"] = 1.0  # now 2 pairs at 8 epochs
    assert study.choose_budget(runs)["epochs"] == 8
    with pytest.raises(ValueError, match="no budget"):
        study.choose_budget({})


def test_the_lower_bound_is_clopper_pearsons_one_sided():
    assert study.share_lower_bound(10, 10) == pytest.approx(0.05 ** (1 / 10))  # 0.7411
    assert study.share_lower_bound(0, 10) == 0.0
    assert study.share_lower_bound(0, 0) is None


def seed_result(scores, seconds=10.0, protocol=(1.0, 1.0, 1.0)):
    return {
        "train_seconds": seconds,
        "epochs_run": 8,
        "protocol": dict(zip(study.PROTOCOL_SETS, protocol)),
        "export": {"bytes": 1},
        "heldout": {
            n: ({"accuracy": v, "tokens": 5} if v is not None else {"not_read": "too long"}) for n, v in scores.items()
        },
    }


def synthetic_record():
    fresh = {
        "20": seed_result({"digits_3": 1.0, "terms_300": 1.0}, 12.0),
        "21": seed_result({"digits_3": 1.0, "terms_300": 0.5}, 14.0, (1.0, 1.0, 0.75)),
        "22": seed_result({"digits_3": 0.75, "terms_300": 1.0}, 13.0),
    }
    choosing = {"0": seed_result({"digits_3": 1.0, "terms_300": 0.25})}
    return {
        "notebook": study.NOTEBOOK,
        "model": study.MODEL,
        "parameters": {"export_length": 599},
        "params": 38274,
        "choices": {"frozen_recipe": study.recipe(16), "text": study.CHOICES},
        "data": {
            "training": 1892,
            "development": {"in": 10, "digits_3": 10},
            "heldout": {"seed": 5151, "count": 300, "sets": {"digits_3": "3 numbers", "terms_300": "300 numbers"}},
        },
        "choosing": {
            "seeds": [0],
            "choice": study.choose_budget({16: {0: {"in": 1.0, "digits_3": 1.0}}}),
        },
        "heldout": {"fresh": fresh, "choosing": choosing},
    }


def test_the_answer_facts_of_a_record():
    facts = study.answer_facts(synthetic_record())
    fresh = facts["fresh"]
    assert facts["epochs"] == 16 and facts["params"] == 38274 and facts["input_length"] == 599
    assert fresh["n"] == 3 and fresh["exact_everywhere"] == 1 and fresh["exact_everywhere_seeds"] == ["20"]
    assert fresh["per_set"]["digits_3"] == {
        "values": [1.0, 1.0, 0.75],
        "mean": pytest.approx(2.75 / 3),
        "min": 0.75,
        "max": 1.0,
        "exact": 2,
        "n": 3,
    }
    assert fresh["lower_bound"] == pytest.approx(1 - 0.95 ** (1 / 3))  # 1 of 3: P(X >= 1 | p) = 0.05
    assert fresh["development"]["long"] == {
        "values": [1.0, 0.75, 1.0],
        "mean": pytest.approx(2.75 / 3),
        "min": 0.75,
        "max": 1.0,
        "exact": 2,
        "n": 3,
    }
    assert fresh["train_seconds"] == [12.0, 14.0, 13.0]
    assert fresh["not_exact_in_box"] == []
    assert facts["choosing"]["exact_everywhere"] == 0 and facts["choosing"]["per_set"]["terms_300"]["max"] == 0.25


def test_a_set_a_file_did_not_read_is_left_out_not_scored_zero():
    record = synthetic_record()
    record["heldout"]["fresh"]["22"] = seed_result({"digits_3": 1.0, "terms_300": None})
    facts = study.answer_facts(record)["fresh"]
    assert facts["per_set"]["terms_300"]["n"] == 2
    assert facts["exact_everywhere_seeds"] == ["20"]  # a seed missing a set is not exact everywhere


def test_a_seed_not_exact_in_range_is_named():
    record = synthetic_record()
    assert study.answer_facts(record)["fresh"]["not_exact_in_box"] == []
    record["heldout"]["fresh"]["22"]["protocol"]["in"] = 0.5
    assert study.answer_facts(record)["fresh"]["not_exact_in_box"] == ["22"]
    record["heldout"]["fresh"] = {}
    fresh = study.answer_facts(record)["fresh"]
    assert fresh["n"] == 0 and fresh["exact_everywhere"] == 0 and fresh["lower_bound"] is None


def test_the_onnx_file_at_a_longer_length_matches_keras(tmp_path):
    """An untrained model (weights from its seed) exported at 41 tokens: the file's answers on 3- and
    20-term expressions equal Keras's (rebuilt for the length), and a set longer than the file reads is
    recorded as not read."""
    spec, model, tokenizer = build(study.MODEL, seed=0)
    trained = types.SimpleNamespace(spec=spec, model=model, tokenizer=tokenizer)
    record = study.export_onnx(trained, tmp_path, length=41, check=8)
    assert record["input_length"] == 41 and record["max_abs_diff"] < 1e-4
    rng = np.random.default_rng(0)
    expressions = [" - ".join(str(int(n)) for n in rng.integers(-99, 100, size=terms)) for terms in (3, 20, 3, 20, 7)]
    longer = type(tokenizer)(**{**tokenizer.get_config(), "length": 41})
    keras_values = np.asarray(at_input_length(model, 41)(longer.encode_batch(expressions))).reshape(-1)
    file_values = study.predict_chunked(Predictor(tmp_path / "model.onnx"), expressions, chunk=2)
    np.testing.assert_allclose(file_values, keras_values, atol=1e-4)
    scores = study.file_scores(tmp_path / "model.onnx", {"long": make_split("long", [" + ".join(["1"] * 30)])})
    assert "needs 59 tokens; the file reads 41" in scores["long"]["not_read"]
