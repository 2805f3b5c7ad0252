"""The published-row scoreboard: the faithful replica first, verdicts by a sign test over seeds."""

import pytest

from predcalc.record import ModelRecord
from predcalc.report.anchors import REFERENCE_ROWS
from predcalc.report.scoreboard import (
    REPLICAS,
    candidates,
    compared_metrics,
    comparison,
    summary_table,
)
from predcalc.training import metrics as M

T4 = "transformer4 (encoder, regression)"


def _runs(mae_in, mre_in, mae_out, mre_out, mae_long, seeds=5, epochs=10, jitter=0.0):
    def test_set(mae, mre, s):
        mae = mae * (1 + jitter * (s - 2))
        return {"mae": mae, "mre": mre, "mre_reference": mre, "signed": mae / 2, "accuracy": 0.5, "n": 100}

    return [
        {
            "seed": s,
            "epochs": epochs,
            "metrics": {
                "in": test_set(mae_in, mre_in, s),
                "out": test_set(mae_out, mre_out, s),
                "long": test_set(mae_long, 0.1, s),
                "out22": test_set(mae_out, mre_out, s),
                "long4": test_set(mae_long, 0.1, s),
            },
        }
        for s in range(seeds)
    ]


def _model(label, runs, reference_row=None):
    """A stored model record, typed as the report reads it."""
    return ModelRecord.from_json({"label": label, "reference_row": reference_row, "params": 1000, "runs": runs}, label)


BASE = [r["metrics"] for r in _runs(0.1, 0.05, 3.0, 0.4, 5.0)]


def test_signed_long_rows_rank_four_columns_and_absolute_rows_five():
    signed = compared_metrics(REFERENCE_ROWS["FNN2 (1 x 345 PReLU)"])
    assert [c for c, _ in signed] == ["MAE in", "MRE in", "MAE out", "MRE out"]
    assert [c for c, _ in compared_metrics(REFERENCE_ROWS[T4])][-1] == "MAE long"


def test_sign_test_needs_every_seed_on_one_side():
    assert M.sign_test([1.0] * 5, 2.0) == {"verdict": "better", "better": 5, "worse": 0, "p": pytest.approx(1 / 32)}
    assert M.sign_test([3.0] * 5, 2.0)["verdict"] == "worse"
    assert M.sign_test([1.0, 1.0, 1.0, 1.0, 3.0], 2.0)["verdict"] == "not resolved"  # p = 6/32
    assert M.sign_test([1.0] * 4, 2.0)["verdict"] == "not resolved"  # 4 seeds cannot reach p <= 0.05


def test_comparison_uses_the_absolute_long_error_and_a_tie_is_not_better():
    published = REFERENCE_ROWS[T4]  # 0.0393 / 0.0163 / 4.42 / 0.495 / 3.886
    better = candidates([("a", _model("A", _runs(0.03, 0.01, 4.0, 0.4, 3.0)))], BASE)[0]
    assert {c: t["verdict"] for c, t in comparison(better, published).items()} == dict.fromkeys(
        ["MAE in", "MRE in", "MAE out", "MRE out", "MAE long"], "better"
    )
    tie = candidates([("b", _model("B", _runs(0.03, 0.01, 4.0, 0.4, 3.886)))], BASE)[0]
    assert comparison(tie, published)["MAE long"]["verdict"] == "not resolved"


def test_a_gap_inside_the_seed_spread_is_not_resolved():
    published = REFERENCE_ROWS["FNN2 (1 x 345 PReLU)"]  # MAE in 0.0269
    noisy = candidates([("fnn2", _model("FNN2", _runs(0.0259, 0.01, 2.0, 0.2, 3.0, jitter=0.2)))], BASE)[0]
    assert comparison(noisy, published)["MAE in"]["verdict"] == "not resolved"


def test_candidates_leave_out_weights_not_trained_here_and_runs_without_seed_columns():
    untrained = _model("seed weights", _runs(0.01, 0.01, 1.0, 0.1, 1.0, epochs=0))
    old = _model("old", _runs(0.01, 0.01, 1.0, 0.1, 1.0))
    for run in old.runs:
        del run.metrics["in"]["signed"]
    kept = _model("kept", _runs(0.05, 0.02, 2.0, 0.3, 4.0))
    pool = candidates([("u", untrained), ("o", old), ("k", kept)], BASE)
    assert [c["label"] for c in pool] == ["kept"]
    assert candidates([("k", kept)], None) == []  # no baseline, no reference-way columns


def test_the_faithful_replica_comes_first_and_variants_are_labelled():
    replica = _model("T4 replica", _runs(0.03, 0.01, 5.0, 0.6, 3.5), reference_row=T4)
    variant = _model("T4 variant", _runs(0.001, 0.001, 0.01, 0.001, 0.02))
    pool = candidates([(REPLICAS[T4], replica), ("variant", variant)], BASE)
    summary = summary_table(pool).set_index("published row").loc[T4]
    assert summary["faithful replica"] == f"`{REPLICAS[T4]}`"
    counts = [summary[f"replica {word}"] for word in ("better", "not resolved", "worse")]
    assert counts == [3, 0, 2]
    assert summary["best variant"] == "`variant`" and summary["variant better"] == 5
    fnn3 = summary_table(pool).set_index("published row").loc["FNN3 (+ positional enc.)"]
    assert fnn3["faithful replica"] == "none" and fnn3["replica better"] == "-"
