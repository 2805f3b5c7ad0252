"""Edge sets outside the reference protocol's box, scored with the model rebuilt for longer inputs."""

import numpy as np
import pytest

from predcalc.data.tokenizers import NumericTokenizer, signed_terms
from predcalc.studies.edges import EDGE_AXES, NO_SPACES, edge_scores, edge_sets
from predcalc.training import fit
from predcalc.training.fit import TrainedModel


def test_edge_sets_are_seeded_and_step_out_one_axis_at_a_time():
    sets = edge_sets(seed=3, count=50)
    assert sets["digits_4"].expressions == edge_sets(seed=3, count=50)["digits_4"].expressions
    assert sets["digits_4"].expressions != edge_sets(seed=4, count=50)["digits_4"].expressions
    for name, (terms, bound) in EDGE_AXES.items():
        numbers = [abs(int(t)) for e in sets[name].expressions for t in signed_terms(e)[::2]]
        assert set(sets[name].terms) == {terms} and max(numbers) <= bound and len(sets[name]) == 50
    assert max(abs(int(t)) for e in sets["digits_4"].expressions for t in signed_terms(e)[::2]) > 999
    assert all(" " not in e for e in sets[NO_SPACES].expressions) and set(sets[NO_SPACES].terms) == {3}
    with pytest.raises(ValueError, match="count must be positive"):
        edge_sets(count=0)


def _untrained(name):
    spec, model, tokenizer = fit.build(name, seed=0)
    return TrainedModel(spec=spec, model=model, tokenizer=tokenizer, seed=0, history={}, epochs=0, seconds=0.0)


def test_a_length_free_model_is_scored_at_the_shortest_input_that_holds_the_set():
    trained = _untrained("transformer4_local")
    sets = edge_sets(seed=0, count=8)
    scores = edge_scores(trained, sets)
    assert scores["terms_60"]["tokens"] == 119 and scores["terms_20"]["tokens"] == 39
    assert scores["digits_2"]["tokens"] == 15 and scores["terms_60"]["n"] == 8
    longer = trained.spec.build(NumericTokenizer(length=119))  # the same weights built for 119 tokens
    longer.set_weights(trained.model.get_weights())
    x = NumericTokenizer(length=119).encode_batch(sets["terms_60"].expressions)
    expected = np.abs(np.asarray(longer(x))[:, 0] - sets["terms_60"].values).mean()
    assert scores["terms_60"]["mae"] == pytest.approx(expected, rel=1e-4)


def test_a_model_bound_to_its_length_is_not_scored_on_longer_sets():
    scores = edge_scores(_untrained("fnn2"), edge_sets(seed=0, count=8))
    assert scores["terms_20"] is None and scores["terms_60"] is None
    assert scores["digits_4"]["tokens"] == 15 and scores[NO_SPACES]["n"] == 8


def test_the_edge_table_has_a_row_per_model_and_writes_every_score(tmp_path):
    import json

    from predcalc.data import reference_protocol
    from predcalc.notebooks.steps import edge_table
    from predcalc.training.experiment import ModelResults, Results

    results = Results(
        protocol=reference_protocol(0),
        models={name: ModelResults(first=_untrained(name), predictions={}) for name in ("fnn2", "transformer4_local")},
    )
    table = edge_table(results, edge_sets(seed=0, count=5), path=tmp_path / "edges.json")
    assert list(table.columns) == ["model", "digits_2", "digits_4", "terms_20", "terms_60", NO_SPACES]
    assert table.iloc[0]["terms_60"] == "-" and table.iloc[1]["terms_60"].endswith(")")
    stored = json.loads((tmp_path / "edges.json").read_text())
    assert stored["fnn2"]["terms_60"] is None and stored["transformer4_local"]["terms_60"]["tokens"] == 119


# The frozen suites ---------------------------------------------------------------------------------


def test_the_development_suite_is_the_probe_06_stored_and_is_frozen():
    from predcalc.studies.edges import DEVELOPMENT_SEED, development_suite

    suite = development_suite(count=40)
    assert list(suite) == list(EDGE_AXES)
    assert all(suite[name].expressions == edge_sets(DEVELOPMENT_SEED, 40)[name].expressions for name in suite)
    assert suite["terms_20"].expressions == development_suite(count=40)["terms_20"].expressions


def test_the_heldout_suite_is_frozen_in_its_boxes_and_shares_nothing_with_development_or_training():
    from predcalc.data import reference_protocol
    from predcalc.data.tokenizers import canonical
    from predcalc.studies.edges import HELDOUT, development_suite, heldout_suite

    suite = heldout_suite(count=30)
    again = heldout_suite(count=30)
    assert [edge.name for edge in HELDOUT] == list(suite)
    assert all(suite[name].expressions == again[name].expressions and len(suite[name]) == 30 for name in suite)
    assert suite["terms_40"].expressions != heldout_suite(seed=5, count=30)["terms_40"].expressions
    protocol = reference_protocol(0)
    seen = {
        canonical(e)
        for split in (protocol.train, protocol.validation, *development_suite().values())
        for e in split.expressions
    }
    forms = [canonical(e) for split in suite.values() for e in split.expressions]
    assert not seen & set(forms) and len(forms) == len(set(forms))

    def numbers(name):
        return [abs(int(t)) for e in suite[name].expressions for t in signed_terms(e)[::2]]

    assert min(numbers("digits_exactly_3")) >= 100 and max(numbers("digits_exactly_3")) <= 999
    assert set(suite["terms_9_14"].terms) <= set(range(9, 15)) and set(suite["terms_80"].terms) == {80}
    assert set(numbers("nines")) <= {9, 99, 999, 9999}
    assert all("(" in e for e in suite["nesting_1_3"].expressions)
    assert np.abs(suite["cancellation_4_digits"].values).max() <= 14


def test_unspaced_forms_apply_only_where_the_tokens_change():
    from predcalc.studies.edges import spacing_check

    expressions = ["3 - -2 + 4", "12 + -7 - 5"]
    assert spacing_check(NumericTokenizer(), expressions)["applies"] is False

    class Characters:  # a tokeniser that reads the raw text, spaces included
        name = "raw"

        def encode(self, text):
            return np.array([ord(c) for c in text.ljust(20)])

    check = spacing_check(Characters(), expressions)
    assert check["applies"] is True and check["differ"] == 2


def test_a_scan_read_at_a_longer_length_computes_the_same_function():
    from predcalc.data.tokenizers import TypedTokenizer
    from predcalc.deploy.export import with_input_length
    from predcalc.studies.edges import at_input_length

    trained = _untrained("scan_typed")
    expressions = ["3 - -2 + 4", "1 + 2 - 3 + 4 - 5 + 1 - 2 + 3"]
    short = trained.model(TypedTokenizer(15).encode_batch(expressions))
    longer = TypedTokenizer(40).encode_batch(expressions)
    np.testing.assert_allclose(at_input_length(trained.model, 40)(longer), short, rtol=1e-5, atol=1e-5)
    plain = with_input_length(trained.model, 40)(longer)  # its mean over 40 positions, not 15
    assert not np.allclose(plain, short, rtol=1e-3, atol=1e-3)


def test_a_set_outside_the_input_language_is_named_not_scored():
    from predcalc.studies.edges import heldout_suite, refusal, tokens_needed

    nested = heldout_suite(count=5)["nesting_1_3"].expressions
    assert "cannot be encoded" in refusal(NumericTokenizer(), nested)
    assert tokens_needed(NumericTokenizer(), nested) is None
    assert tokens_needed(NumericTokenizer(), ["1 + 2 - 3 + 4 - 5 + 1 - 2 + 3 + 1"]) == 17


@pytest.mark.slow
def test_scores_come_from_the_exported_files_at_the_longer_length(tmp_path):
    """Export an untrained transformer4_local_bounded at 27 tokens and score a small suite through
    its ONNX and LiteRT files: the scores are those of the Keras model."""
    from predcalc.data.protocol import make_split
    from predcalc.studies.edge_seeds import export_at_length, score_exported
    from predcalc.studies.edges import at_input_length
    from predcalc.training.metrics import regression_metrics

    trained = _untrained("transformer4_local_bounded")
    record = export_at_length(trained.model, trained.spec, trained.tokenizer, tmp_path, length=27)
    assert record["input_length"] == 27 and set(record["formats"]) == {"onnx", "litert"}
    suite = {
        "terms_14": make_split(
            "terms_14",
            [
                "1 + 2 - 3 + 4 - 5 + 1 - 2 + 3 - 4 + 5 - 1 + 2 - 3 + 4",
                "-5 - -5 + 0 - 1 + 2 + 3 - 4 + 5 - 1 + 2 - 3 + 4 - 5 + 1",
            ],
        ),
        "terms_20": make_split("terms_20", [" + ".join(["1"] * 20)]),
        "nested": make_split("nested", ["1 - (2 + 3)"]),
    }
    scores = score_exported(tmp_path, suite)
    x = NumericTokenizer(27).encode_batch(suite["terms_14"].expressions)
    expected = regression_metrics(
        suite["terms_14"].values, trained.spec.predict_values(at_input_length(trained.model, 27), x)
    )
    assert scores["terms_14"]["mae"] == pytest.approx(expected["mae"], rel=1e-4)
    assert scores["terms_14"]["tokens"] == 27 and scores["terms_14"]["runtimes_max_abs_diff"] < 1e-3
    assert "needs 39 tokens" in scores["terms_20"]["too_long"]
    assert "cannot be encoded" in scores["nested"]["not_in_input_language"]


def test_the_exported_transformer4_local_bounded_answers_9_to_14_terms_through_onnx_and_litert():
    """The committed first-seed files read 159 tokens (80 numbers): 9-14 terms are answered."""
    from predcalc.data.expressions import evaluate
    from predcalc.deploy.predictor import Predictor
    from predcalc.paths import RUNS

    folder = RUNS / "06_transformer" / "export" / "transformer4_local_bounded"
    expressions = [
        "1 + 2 - 3 + 4 - 5 + 1 - 2 + 3 - 4",
        "1 + 2 - 3 + 4 - 5 + 1 - 2 + 3 - 4 + 5 - -1 + 2 - 3 + -4",
        "3 - -2 + 4",
    ]
    truth = [float(evaluate(e)) for e in expressions]
    for file in ("model.onnx", "model_float32.tflite"):
        predictor = Predictor(folder / file)
        assert predictor.max_tokens >= 159
        assert np.round(predictor.predict(expressions)).tolist() == truth
        assert np.isfinite(predictor.predict([" + ".join(["1"] * 80)])).all()


def test_the_stored_heldout_scores_belong_to_the_suite_drawn_today():
    import json

    from predcalc.paths import REPORTS
    from predcalc.studies.edges import fingerprint, heldout_suite

    stored = json.loads((REPORTS / "edges" / "heldout.json").read_text())
    assert stored["suite"]["fingerprint"] == fingerprint(heldout_suite())
    assert set(stored["suite"]["sets"]) == set(heldout_suite(count=1))


def test_the_per_term_arithmetic_units_are_rebuilt_longer_and_the_dense_ones_keep_their_length():
    """The per-term units' weights do not depend on the length (their pairs and sum follow it): rebuilt
    for 31 tokens they keep every weight, and with the exact solution's weights answer 16 numbers. The
    dense units' NMU reads every token, so they stay at their trained 15."""
    from predcalc.data.expressions import evaluate
    from predcalc.studies.edge_seeds import at_length

    trained = _untrained("nau_nmu")
    # the exact solution (module docstring of predcalc.models.arithmetic_units): products o x, x, o x, 1
    trained.model.get_layer("nmu").kernel.assign(np.array([[1, 0, 1, 0], [1, 1, 1, 0]], "float32"))
    trained.model.get_layer("nau").kernel.assign(np.array([[1], [-1], [1], [0]], "float32"))
    longer, length = at_length(trained.model, trained.spec, trained.tokenizer, 31)
    assert length == 31 and int(longer.inputs[0].shape[1]) == 31
    assert all(np.array_equal(a, b) for a, b in zip(longer.get_weights(), trained.model.get_weights()))
    expression = " - ".join(str(n) for n in range(-5, 11))  # 16 numbers: 31 tokens
    x = NumericTokenizer(31).encode_batch([expression])
    assert float(trained.spec.predict_values(longer, x)[0]) == pytest.approx(float(evaluate(expression)))
    dense = _untrained("nau_nmu_dense")
    same, kept = at_length(dense.model, dense.spec, dense.tokenizer, 31)
    assert kept == 15 and same is dense.model


def _scores_file(accuracy, too_long=True):
    """One seed's stored scores on the third held-out suite: every set read but terms_300."""
    from predcalc.studies.edges import THIRD_HELDOUT

    sets = {}
    for edge in THIRD_HELDOUT:
        if too_long and edge.name == "terms_300":
            sets[edge.name] = {"too_long": "needs 599 tokens; the files read 159"}
        else:
            sets[edge.name] = {"accuracy": accuracy, "mae": 0.0, "mre": 0.0, "n": 300, "input_length": 159}
    return {"third_heldout": sets}


def test_the_third_heldout_record_is_the_sign_scans_suite_and_keeps_unread_sets_unread(tmp_path):
    """write_suite_records on the third held-out suite: the record's fingerprint is the suite the sign
    scan's record was scored on, a set longer than the files read stays not read (not 0), and the
    families table's cell counts it apart from the sets read."""
    import json

    from predcalc.paths import RUNS
    from predcalc.report import families
    from predcalc.studies import edge_seeds
    from predcalc.studies.edges import fingerprint, third_heldout_suite

    runs = tmp_path / "runs"
    (runs / "30_beyond_reference").mkdir(parents=True)
    (runs / "30_beyond_reference" / "metrics.json").write_text(json.dumps({"models": {"scan_typed": {"runs": []}}}))
    for seed, accuracy in ((0, 1.0), (1, 0.5)):
        folder = edge_seeds.seeds_folder("scan_typed", runs) / f"seed_{seed}"
        folder.mkdir(parents=True)
        (folder / edge_seeds.SCORES_FILE).write_text(json.dumps(_scores_file(accuracy)))
    suite = third_heldout_suite()
    (path,) = edge_seeds.write_suite_records(
        ("scan_typed",), tmp_path / "models", tmp_path / "edges", runs, suites={"third_heldout": suite}
    )
    record = json.loads(path.read_text())
    assert path.name == "third_heldout.json" and record["suite"]["seed"] == 5151
    sign_scan = json.loads((RUNS / "33_trained_exact_scan" / "metrics.json").read_text())["data"]["heldout"]
    assert record["suite"]["fingerprint"] == fingerprint(suite) == sign_scan["fingerprint"]
    assert record["models"]["scan_typed"]["0"]["terms_300"] == {"too_long": "needs 599 tokens; the files read 159"}
    assert record["about"]["scan_typed"]["input_length"] == 159

    cell = families.held_out_cell(record, "scan_typed")  # the families table's held-out cell
    assert cell == "75.0 %, 1/2 exact on all, 50.0-100.0 (9 of 10 sets read)"


def test_the_stored_third_heldout_scores_belong_to_the_suite_drawn_today():
    import json

    from predcalc.paths import REPORTS
    from predcalc.studies.edges import fingerprint, third_heldout_suite

    stored = json.loads((REPORTS / "edges" / "third_heldout.json").read_text())
    assert stored["suite"]["fingerprint"] == fingerprint(third_heldout_suite())
    for name, by_seed in stored["models"].items():
        for seed, sets in by_seed.items():
            assert set(sets) == set(stored["suite"]["sets"]), (name, seed)
            for score in sets.values():  # a score, or why the files did not read the set: never a silent gap
                assert "accuracy" in score or score.get("too_long") or score.get("not_in_input_language")
