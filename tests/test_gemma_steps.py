"""Notebook 07's tables and glued values (``notebooks.gemma_steps``), on a small fake record."""

from predcalc.notebooks import gemma_steps
from predcalc.report.anchors import REFERENCE_LLM_ROWS


def _record(per_seed):
    def scores(values):
        return {name: {"accuracy": v, "n": 10} for name, v in zip(("in", "out", "long"), values)}

    seeds = [
        {
            "seed": i,
            "scores": scores(v),
            "edges": {"terms_9_14": {"accuracy": 0.1, "n": 100}},
            "recipe": {"name": "r4_query-value_lr0.001"},
            "trainable_params": 1234,
        }
        for i, v in enumerate(per_seed)
    ]
    return {"seeds": seeds, "test_counts": {"in": 10, "out": 10, "long": 10}}


def test_every_seed_on_one_side_of_the_prior_row_or_not_resolved():
    prior = REFERENCE_LLM_ROWS["Gemma 3 270M"]
    above = prior["accuracy_in"] + 0.01
    table = gemma_steps.gemma_table(_record([(above, 0.0, 0.5), (above + 0.1, 1.0, 0.0)])).set_index("set")
    assert table.loc["in", "every seed"] == "above"
    assert table.loc["out", "every seed"] == "not resolved"
    assert table.loc["in", "per seed"] == f"{100 * above:.2f} % / {100 * (above + 0.1):.2f} %"
    assert table.loc["terms_9_14", "every seed"] == ""  # no prior row to compare with


def test_the_glued_values_exist_in_every_profile():
    empty = gemma_steps.glue_texts({}, {}, 4, None)
    full = gemma_steps.glue_texts({}, {}, 4, _record([(0.9, 0.1, 0.2), (0.8, 0.2, 0.3)]))
    assert empty.keys() == full.keys()
    assert empty["gemma_in"] == "n/a" and full["gemma_in"] == "80.00 % to 90.00 %"
    assert full["gemma_seeds"] == "2" and full["gemma_in_side"] == "above"
    assert full["prior_270m_in"] == f"{100 * REFERENCE_LLM_ROWS['Gemma 3 270M']['accuracy_in']:.2f} %"
