import math

import numpy as np
import pytest
from scipy import stats

from predcalc.training import metrics as M


def test_mae_mre_accuracy_on_a_hand_computed_case():
    truth = [0, 2, -4, 10]
    prediction = [0.4, 2.6, -4, 7]
    assert M.mae(truth, prediction) == pytest.approx((0.4 + 0.6 + 0 + 3) / 4)
    # relative to max(|truth|, 1): 0.4/1, 0.6/2, 0/4, 3/10
    assert M.mre(truth, prediction) == pytest.approx((0.4 + 0.3 + 0 + 0.3) / 4)
    # rint: 0 ok, 3 != 2, -4 ok, 7 != 10
    assert M.exact_accuracy(truth, prediction) == 0.5


def test_accuracy_on_non_integer_truth_and_half_way():
    assert M.exact_accuracy([3.5, 3.5], [3.5000001, 4]) == 0.5
    assert M.exact_accuracy([2], [2.5]) == 1.0  # rint(2.5) == 2 (round half to even)
    assert M.exact_accuracy([3], [2.5]) == 0.0


def test_size_mismatch_and_empty():
    with pytest.raises(ValueError, match="differ in size"):
        M.mae([1, 2], [1])
    with pytest.raises(ValueError, match="empty"):
        M.mae([], [])


def _metrics(mae_in, mae_out, mae_long, mre_out):
    return {"in": {"mae": mae_in}, "out22": {"mae": mae_out, "mre": mre_out}, "long4": {"mae": mae_long}}


def test_score_of_the_baseline_is_one_and_halving_errors_gives_four():
    baseline = _metrics(0.4, 3.0, 5.0, 0.3)
    assert M.benchmark_score(baseline, baseline) == 1.0
    assert M.benchmark_score(_metrics(0.2, 1.5, 2.5, 0.15), baseline) == pytest.approx(4.0)
    # one term ten times better, the others equal: (100 + 1 + 1 + 1) / 4
    assert M.benchmark_score(_metrics(0.04, 3.0, 5.0, 0.3), baseline) == pytest.approx(25.75)
    assert M.benchmark_score(_metrics(0.0, 3.0, 5.0, 0.3), baseline) == math.inf


def test_mean_baseline_averages_each_metric():
    reference = M.mean_baseline([_metrics(0.2, 2.0, 4.0, 0.2), _metrics(0.4, 4.0, 6.0, 0.4)])
    assert reference == {
        "in": {"mae": pytest.approx(0.3)},
        "out22": {"mae": 3.0, "mre": pytest.approx(0.3)},
        "long4": {"mae": 5.0},
    }


def test_p_value_is_the_t_test_of_log_scores():
    scores = [2.0, 3.0, 2.5, 4.0, 1.8]
    assert M.log_score_p_value(scores) == pytest.approx(stats.ttest_1samp(np.log(scores), 0).pvalue)
    assert math.isnan(M.log_score_p_value([2.0]))
    assert M.log_score_p_value([1.0, 2.0, 0.5, 1.0]) > 0.5  # centred on log 1 = 0


def test_confidence_interval():
    low, high = M.confidence_interval([1.0, 2.0, 3.0])
    assert (low, high) == pytest.approx((2 - 2.4842, 2 + 2.4842), abs=1e-3)
    assert all(math.isnan(v) for v in M.confidence_interval([1.0]))


def test_reference_way_signed_long_and_reference_mre_on_a_hand_computed_case():
    truth = [-3, 2, 0, 0.5]
    prediction = [2.5, 2.5, 0.25, 1.0]
    # the prior report's "MAE long": mean(|truth| - prediction) = (0.5 - 0.5 - 0.25 - 0.5) / 4
    assert M.signed_abs_error(truth, prediction) == pytest.approx(-0.75 / 4)
    # the prior report's MRE: |error| / |truth|, 0 -> 1: 5.5/3, 0.5/2, 0.25/1, 0.5/0.5
    assert M.mre_reference(truth, prediction) == pytest.approx((5.5 / 3 + 0.25 + 0.25 + 1.0) / 4)
    assert M.signed_abs_error([-2], [float("nan")]) == 2.0  # unparseable: the answer 0
    record = M.regression_metrics(truth, prediction)
    assert record["signed"] == pytest.approx(-0.1875) and "mre_reference" in record


def _seed_run(mae_in, mae_out22, long4_abs, long4_signed, mre_in, mre_out, long_signed=1.0):
    return {
        "in": {"mae": mae_in, "mre_reference": mre_in, "n": 1, "signed": 0.0},
        "out": {"mae": 2.0, "mre_reference": mre_out, "n": 3},
        "out22": {"mae": mae_out22},
        "long": {"signed": long_signed, "mae": 7.0},
        "long4": {"mae": long4_abs, "signed": long4_signed},
    }


def test_reference_score_and_reference_way_by_hand():
    base = M.reference_baseline([_seed_run(0.4, 3.0, 5.0, 1.0, 0.2, 0.6)])
    # baseline: (0.4**2, 3**2, |long4| 5**2, ((0.2*1 + 0.6*3)/4)**2 = 0.5**2)
    assert base == {"in": pytest.approx(0.16), "out22": 9.0, "long4": 25.0, "rel": pytest.approx(0.25)}
    run = _seed_run(0.2, 3.0, 9.0, -2.5, 0.1, 0.5)
    # terms: 0.16/0.04 = 4, 9/9 = 1, signed long4: 25/6.25 = 4, rel: 0.25/0.25 = 1
    assert M.reference_score(run, base) == pytest.approx(2.5)
    table = M.reference_way([run, run], base)
    assert table["score"] == pytest.approx(2.5) and table["MAE long"] == 1.0
    # the transformer notebooks' way: the absolute long4 term 25/81 and the absolute long MAE
    assert M.reference_score(run, base, "absolute") == pytest.approx((4 + 1 + 25 / 81 + 1) / 4)
    table = M.reference_way([run, run], base, "absolute")
    assert table["MAE long"] == 7.0
    assert table["score"] == pytest.approx((4 + 1 + 25 / 81 + 1) / 4)
    assert table["MRE out"] == 0.5 and M.has_reference_way(run) and not M.has_reference_way({"in": {"mae": 1}})
