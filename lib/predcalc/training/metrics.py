"""Metrics of the seed (ANCHORS.md section 1), defined exactly.

- MAE: mean |prediction - truth|.
- MRE: mean |prediction - truth| / max(|truth|, 1). The seed does not say how it treats a
  truth of 0; dividing by max(|truth|, 1) keeps those expressions in and is stated here.
- exact accuracy: the share of predictions that round to the true value (an integer truth
  counts when ``rint(prediction) == truth``; a non-integer truth, when the prediction is
  within 1e-6 of it).
- unparseable answers: a token-output model whose answer is not a number predicts NaN. It
  counts as wrong in the accuracy and as the answer 0 in MAE and MRE (error ``|truth|``,
  what a calculator showing nothing is worth), so every expression stays in every metric and
  a model cannot lower its MAE by failing to answer; ``regression_metrics`` also reports how
  many there were (``unparseable``).
- benchmark score against the baseline FNN, a score of 1 meaning "as good as the baseline"::

      score = ( base_in / mae_in**2 + base_out / mae_out**2
              + base_long / mae_long**2 + base_rel / mre_out**2 ) / 4

  with ``base_x`` the baseline's metric squared; the long term uses only 4-number
  expressions (``long4``) and the out-of-range terms only expressions whose absolute
  values sum to 22 (``out22``).
- p-value: two-sided one-sample t-test of log(score) over seeds against 0.
"""

from __future__ import annotations

import math

import numpy as np

# scipy is imported inside the two statistics below: the deploy runtime (``predcalc evaluate`` on a
# Jetson) scores predictions with NumPy alone.

SCORE_TERMS = (("in", "mae"), ("out22", "mae"), ("long4", "mae"), ("out22", "mre"))


def _pair(truth, prediction):
    truth = np.asarray(truth, dtype=np.float64).reshape(-1)
    prediction = np.asarray(prediction, dtype=np.float64).reshape(-1)
    if truth.shape != prediction.shape:
        raise ValueError(f"truth and prediction differ in size: {truth.shape} vs {prediction.shape}")
    if truth.size == 0:
        raise ValueError("cannot score an empty set")
    return truth, prediction


def absolute_errors(truth, prediction) -> np.ndarray:
    """|prediction - truth|, an unparseable (NaN) prediction counting as the answer 0: |truth|."""
    truth, prediction = _pair(truth, prediction)
    return np.where(np.isnan(prediction), np.abs(truth), np.abs(prediction - truth))


def mae(truth, prediction) -> float:
    return float(np.mean(absolute_errors(truth, prediction)))


def mre(truth, prediction) -> float:
    truth = np.asarray(truth, dtype=np.float64).reshape(-1)
    return float(np.mean(absolute_errors(truth, prediction) / np.maximum(np.abs(truth), 1.0)))


def exact_accuracy(truth, prediction) -> float:
    truth, prediction = _pair(truth, prediction)
    integer = truth == np.rint(truth)
    hit = np.where(integer, np.rint(prediction) == truth, np.abs(prediction - truth) <= 1e-6)
    return float(np.mean(hit))


def regression_metrics(truth, prediction) -> dict:
    """MAE, MRE, exact accuracy, the count and the unparseable (NaN) predictions of one test set."""
    return {
        "mae": mae(truth, prediction),
        "mre": mre(truth, prediction),
        "accuracy": exact_accuracy(truth, prediction),
        "n": int(np.asarray(truth).size),
        "unparseable": int(np.isnan(np.asarray(prediction, dtype=np.float64)).sum()),
    }


def benchmark_score(metrics: dict, baseline: dict) -> float:
    """The seed's score of one run against the baseline FNN.

    Args:
        metrics, baseline: ``{test_set: {"mae": ..., "mre": ...}}`` with the test sets
            ``in``, ``out22`` and ``long4``.
    """
    terms = []
    for test_set, name in SCORE_TERMS:
        value = metrics[test_set][name]
        if value <= 0:
            return math.inf
        terms.append((baseline[test_set][name] / value) ** 2)
    return float(np.mean(terms))


def mean_baseline(runs: list[dict]) -> dict:
    """The baseline reference: each score metric averaged over the baseline's seeds."""
    if not runs:
        raise ValueError("the baseline has no runs")
    return {
        test_set: {name: float(np.mean([run[test_set][name] for run in runs]))
                   for name in {n for s, n in SCORE_TERMS if s == test_set}}
        for test_set in {s for s, _ in SCORE_TERMS}
    }


def log_score_p_value(scores) -> float:
    """Two-sided one-sample t-test of log(score) against 0; NaN with fewer than 2 scores."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size < 2 or not np.all(np.isfinite(scores)) or np.any(scores <= 0):
        return float("nan")
    from scipy import stats

    logs = np.log(scores)
    if np.allclose(logs, logs[0]):
        return 0.0 if logs[0] != 0 else 1.0
    return float(stats.ttest_1samp(logs, 0.0).pvalue)


def confidence_interval(values, level: float = 0.95) -> tuple[float, float]:
    """Student-t confidence interval of the mean; (nan, nan) with fewer than 2 values."""
    from scipy import stats

    values = np.asarray(values, dtype=np.float64)
    if values.size < 2:
        return float("nan"), float("nan")
    half = stats.t.ppf(0.5 + level / 2, values.size - 1) * stats.sem(values)
    return float(values.mean() - half), float(values.mean() + half)
