"""Edge sets outside the seed protocol's box, scored with the model rebuilt for longer inputs."""

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

    from predcalc.data import seed_protocol
    from predcalc.report.notebook import edge_table
    from predcalc.training.experiment import ModelResults, Results

    results = Results(protocol=seed_protocol(0), models={
        name: ModelResults(first=_untrained(name), predictions={}) for name in ("fnn2", "transformer4_local")})
    table = edge_table(results, edge_sets(seed=0, count=5), path=tmp_path / "edges.json")
    assert list(table.columns) == ["model", "digits_2", "digits_4", "terms_20", "terms_60", NO_SPACES]
    assert table.iloc[0]["terms_60"] == "-" and table.iloc[1]["terms_60"].endswith(")")
    stored = json.loads((tmp_path / "edges.json").read_text())
    assert stored["fnn2"]["terms_60"] is None and stored["transformer4_local"]["terms_60"]["tokens"] == 119
