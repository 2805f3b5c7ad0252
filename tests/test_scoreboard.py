"""The published-row scoreboard: who beats which published row, on which like-for-like columns."""

import numpy as np
import pytest

from predcalc.report import findings
from predcalc.report.anchors import SEED_ROWS
from predcalc.report.scoreboard import (
    candidates,
    compared_metrics,
    comparison,
    exact_signed_long,
    scoreboard_summary,
    scoreboard_table,
)

T4 = "transformer4 (encoder, regression)"


def _runs(mae_in, mre_in, mae_out, mre_out, mae_long, seeds=2, epochs=10):
    def test_set(mae, mre):
        return {"mae": mae, "mre": mre, "mre_seed": mre, "signed": mae / 2, "accuracy": 0.5, "n": 100}

    return [{"seed": s, "epochs": epochs, "metrics": {
        "in": test_set(mae_in, mre_in), "out": test_set(mae_out, mre_out), "long": test_set(mae_long, 0.1),
        "out22": test_set(mae_out, mre_out), "long4": test_set(mae_long, 0.1)}} for s in range(seeds)]


def _model(label, runs, seed_row=None):
    return {"label": label, "seed_row": seed_row, "params": 1000, "runs": runs}


BASE = [r["metrics"] for r in _runs(0.1, 0.05, 3.0, 0.4, 5.0)]


def test_signed_long_rows_rank_four_columns_and_absolute_rows_five():
    signed = compared_metrics(SEED_ROWS["FNN2 (1 x 345 PReLU)"])
    assert [c for c, _ in signed] == ["MAE in", "MRE in", "MAE out", "MRE out"]
    assert [c for c, _ in compared_metrics(SEED_ROWS[T4])][-1] == "MAE long"


def test_comparison_uses_the_absolute_long_error_and_strict_improvement():
    published = SEED_ROWS[T4]  # 0.0393 / 0.0163 / 4.42 / 0.495 / 3.886
    better = candidates([("a", _model("A", _runs(0.03, 0.01, 4.0, 0.4, 3.0)))], BASE)[0]
    assert comparison(better, published) == dict.fromkeys(["MAE in", "MRE in", "MAE out", "MRE out", "MAE long"], True)
    worse_long = candidates([("b", _model("B", _runs(0.03, 0.01, 4.0, 0.4, 3.886)))], BASE)[0]
    assert comparison(worse_long, published)["MAE long"] is False  # a tie does not beat


def test_candidates_leave_out_weights_not_trained_here_and_runs_without_seed_columns():
    untrained = _model("seed weights", _runs(0.01, 0.01, 1.0, 0.1, 1.0, epochs=0))
    old = _model("old", _runs(0.01, 0.01, 1.0, 0.1, 1.0))
    for run in old["runs"]:
        del run["metrics"]["in"]["signed"]
    kept = _model("kept", _runs(0.05, 0.02, 2.0, 0.3, 4.0))
    pool = candidates([("u", untrained), ("o", old), ("k", kept)], BASE)
    assert [c["label"] for c in pool] == ["kept"]
    assert candidates([("k", kept)], None) == []  # no baseline, no seed-way columns


def test_table_names_the_best_same_row_model_and_what_it_does_not_beat():
    replica = _model("T4 replica", _runs(0.03, 0.01, 5.0, 0.6, 3.5), seed_row=T4)  # wins 3 of 5
    variant = _model("T4 variant", _runs(0.02, 0.01, 4.0, 0.45, 3.9), seed_row=T4)  # wins 4 of 5
    other = _model("other", _runs(0.001, 0.001, 0.01, 0.001, 0.02, seeds=1))  # wins all
    board = scoreboard_table(candidates([("r", replica), ("v", variant), ("o", other)], BASE))
    row = board.set_index("published row").loc[T4]
    assert row["same architecture here"] == "T4 variant (1,000 params, 2 seeds): beaten on 4 of 5, not on MAE long"
    assert row["any trained model here"] == "other (1,000 params, 1 seed): beaten on all 5"
    assert board.set_index("published row").loc["FNN3 (+ positional enc.)", "same architecture here"] == "none trained"
    assert list(board["published row"]) == list(SEED_ROWS)


def test_exact_answers_have_a_positive_signed_long_so_it_is_not_an_error():
    assert exact_signed_long([3, -2, 0, -4]) == pytest.approx(np.mean([0, 4, 0, 8]))


def test_findings_leave_built_models_out_of_the_scoreboard():
    good = _model("solved", _runs(1e-6, 1e-6, 1e-6, 1e-6, 1e-6))
    plain = _model("plain", _runs(0.05, 0.02, 2.0, 0.3, 4.0))
    records = [{"notebook": "01_fnn", "data": {"seed": 0}, "models": {
        "fnn_baseline": _model("baseline", _runs(0.1, 0.05, 3.0, 0.4, 5.0)),
        "scan_typed_solved": good, "fnn2": plain}}]
    text = "\n".join(findings.scoreboard_lines(records))
    assert "## Every published row, like for like" in text and "solved" not in text.split("| published row")[1]


def test_summary_names_the_overall_winner_and_each_rows_own_architecture():
    replica = _model("T4 replica", _runs(0.03, 0.01, 5.0, 0.6, 3.5), seed_row=T4)
    other = _model("other", _runs(0.001, 0.001, 0.01, 0.001, 0.02))
    line = scoreboard_summary(candidates([("r", replica), ("o", other)], BASE))
    assert "6 of 6 are beaten on every ranked column by **other**" in line
    assert "transformer4 (encoder, regression) 3 of 5 (not MAE out, MRE out)" in line
    assert "transformer5 none trained" in line
    assert scoreboard_summary([]) == ""
