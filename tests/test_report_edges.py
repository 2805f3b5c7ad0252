"""The findings' edges-of-the-box section, from the runs' stored edges.json."""

import json

from predcalc.report.edges import edges_answer, edges_frame, edges_lines


def _score(accuracy, mae):
    return {"accuracy": accuracy, "mae": mae, "n": 300}


def test_one_row_per_scored_model_with_a_dash_where_the_length_does_not_fit(tmp_path):
    (tmp_path / "edges.json").write_text(json.dumps({
        "local": {"digits_2": _score(1.0, 0.0456), "terms_60": _score(0.997, 0.245)},
        "fixed": {"digits_2": _score(0.003, 83.1), "terms_60": None}}))
    records = [{"notebook": "06_transformer", "_dir": tmp_path, "models": {"local": {"label": "Local"}}},
               {"notebook": "01_fnn", "_dir": tmp_path / "none", "models": {}},
               {"notebook": "sweep", "models": {}}]  # a sweep record has no folder
    frame = edges_frame(records)
    assert frame.to_dict("records") == [
        {"model": "Local", "notebook": "06_transformer", "digits_2": "100.0 % (0.0456)", "terms_60": "99.7 % (0.245)"},
        {"model": "fixed", "notebook": "06_transformer", "digits_2": "0.3 % (83.1)", "terms_60": "-"}]
    lines = edges_lines(records)
    assert lines[0] == "## Edges of the box" and "`digits_4` 3 numbers from -9,999..9,999" in lines[2]
    assert "with spaces), 300 expressions each," in lines[2]


def test_no_section_without_edge_scores(tmp_path):
    assert edges_lines([{"notebook": "01_fnn", "_dir": tmp_path, "models": {}}]) == []


def test_answer_line_names_the_goal_models_exact_accuracy_past_the_box(tmp_path):
    (tmp_path / "edges.json").write_text(json.dumps({
        "bounded": {"digits_4": _score(0.117, 4.19), "terms_60": _score(0.997, 0.245)},
        "other": {"digits_4": _score(0.0, 8e3), "terms_60": None}}))
    records = [{"notebook": "06_transformer", "_dir": tmp_path, "models": {"bounded": {"label": "Bounded"}}}]
    assert edges_answer(records, ["Bounded"]) == ('  - Past the box, one axis at a time (exact accuracy, first seed; '
                                                  'see "Edges of the box"): **Bounded**: digits_4 11.7 %, '
                                                  'terms_60 99.7 %.')
    assert edges_answer(records, ["other"]).endswith("**other**: digits_4 0.0 %, terms_60 too long to read.")
    assert edges_answer(records, ["Scan"]) == "" and edges_answer([], ["Bounded"]) == ""
