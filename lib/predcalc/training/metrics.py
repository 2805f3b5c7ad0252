"""Metrics of the prior report (the prior report's, Mukin 2025), defined exactly.

- MAE: mean |prediction - truth|.
- MRE: mean |prediction - truth| / max(|truth|, 1). The prior report does not say how it treats a
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

The prior report's own notebooks compute some of these differently (``FNN_FNN2.py``,
``get_p-value.py``, the baseline in ``FNN1_1.py``); ``reference_way`` below reproduces them so a
published number is compared like for like:

- signed "MAE long" (``signed``): ``mean(abs(truth) - prediction)``, not an absolute error;
  its published FNN columns are this over all 700 long expressions, its score term over ``long4``.
  The transformer notebooks' per-run cell (the one with the p-value) uses the absolute error
  instead, so ``reference_way(..., long="absolute")`` scores the transformer rows.
- reference MRE (``mre_reference``): ``|prediction - truth| / |truth|``, a truth of 0 dividing by 1
  (so a truth of 0.5 divides by 0.5, unlike ``mre``).
- seed score: the in and out22 terms as above, the long term the ``long4`` value (signed or absolute)
  squared, the relative term the reference MRE over *all* out-of-range expressions; the baseline's
  terms as ``FNN1_1.py`` makes them: absolute MAE on in, out22 and long4, and the reference MRE over
  in and out together.
- seed p-value: ``get_p-value.py``, the one-sample t-test of log(score) against 0.
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


def signed_abs_error(truth, prediction) -> float:
    """The prior report's "MAE long": mean(|truth| - prediction), signed; NaN counts as the answer 0."""
    truth, prediction = _pair(truth, prediction)
    return float(np.mean(np.abs(truth) - np.where(np.isnan(prediction), 0.0, prediction)))


def mre_reference(truth, prediction) -> float:
    """The prior report's MRE: |prediction - truth| / |truth|, a truth of 0 dividing by 1."""
    truth = np.asarray(truth, dtype=np.float64).reshape(-1)
    return float(np.mean(absolute_errors(truth, prediction) / np.where(truth == 0, 1.0, np.abs(truth))))


def regression_metrics(truth, prediction) -> dict:
    """MAE, MRE, exact accuracy, the count and the unparseable (NaN) predictions of one test set,
    and the prior report's own signed error and MRE (``signed``, ``mre_reference``; see the module notes)."""
    return {
        "mae": mae(truth, prediction),
        "mre": mre(truth, prediction),
        "signed": signed_abs_error(truth, prediction),
        "mre_reference": mre_reference(truth, prediction),
        "accuracy": exact_accuracy(truth, prediction),
        "n": int(np.asarray(truth).size),
        "unparseable": int(np.isnan(np.asarray(prediction, dtype=np.float64)).sum()),
    }


def benchmark_score(metrics: dict, baseline: dict) -> float:
    """The prior report's score of one run against the baseline FNN.

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
        test_set: {
            name: float(np.mean([run[test_set][name] for run in runs]))
            for name in {n for s, n in SCORE_TERMS if s == test_set}
        }
        for test_set in {s for s, _ in SCORE_TERMS}
    }


REFERENCE_WAY_KEYS = (("in", "signed"), ("out", "mre_reference"), ("long", "signed"), ("long4", "signed"))


def has_reference_way(metrics: dict) -> bool:
    """True when a run's metrics hold what ``reference_way`` needs (runs before it was added do not)."""
    return all(name in metrics.get(test_set, {}) for test_set, name in REFERENCE_WAY_KEYS)


def reference_baseline(runs: list[dict]) -> dict:
    """The prior report's baseline terms (``FNN1_1.py``), from the baseline FNN's per-seed metrics:
    squared means of MAE in, MAE out22, absolute MAE long4 and the reference MRE over in and out."""
    if not runs:
        raise ValueError("the baseline has no runs")

    def rel(run):
        n_in, n_out = run["in"]["n"], run["out"]["n"]
        return (run["in"]["mre_reference"] * n_in + run["out"]["mre_reference"] * n_out) / (n_in + n_out)

    return {
        "in": float(np.mean([r["in"]["mae"] for r in runs])) ** 2,
        "out22": float(np.mean([r["out22"]["mae"] for r in runs])) ** 2,
        "long4": float(np.mean([r["long4"]["mae"] for r in runs])) ** 2,
        "rel": float(np.mean([rel(r) for r in runs])) ** 2,
    }


#: The prior report's two definitions of "MAE long" (see ``report.anchors.REFERENCE_ROWS``): the record key of each.
REFERENCE_LONG = {"signed": "signed", "absolute": "mae"}


def reference_score(metrics: dict, baseline: dict, long: str = "signed") -> float:
    """The prior report's benchmark of one run: reference MRE over all out, and the long4 term signed (``FNN_FNN2.py``)
    or absolute (``long="absolute"``, the transformer notebooks' per-run cell)."""
    terms = (
        ("in", metrics["in"]["mae"]),
        ("out22", metrics["out22"]["mae"]),
        ("long4", metrics["long4"][REFERENCE_LONG[long]]),
        ("rel", metrics["out"]["mre_reference"]),
    )
    if any(value == 0 for _, value in terms):
        return math.inf
    return float(np.mean([baseline[key] / value**2 for key, value in terms]))


def reference_way(runs: list[dict], baseline: dict, long: str = "signed") -> dict:
    """The prior report's published columns of one model, computed the prior report's way, averaged over runs:
    MAE/MRE in and out (all 2,048), "MAE long" over all 700 as the prior report's row defines it (``long``:
    "signed" or "absolute", see ``REFERENCE_LONG``), score and its p-value."""
    scores = [reference_score(r, baseline, long) for r in runs]
    return {
        "MAE in": float(np.mean([r["in"]["mae"] for r in runs])),
        "MRE in": float(np.mean([r["in"]["mre_reference"] for r in runs])),
        "MAE out": float(np.mean([r["out"]["mae"] for r in runs])),
        "MRE out": float(np.mean([r["out"]["mre_reference"] for r in runs])),
        "MAE long": float(np.mean([r["long"][REFERENCE_LONG[long]] for r in runs])),
        "score": float(np.mean(scores)),
        "p": log_score_p_value(scores),
    }


def log_score_p_value(scores) -> float:
    """Two-sided one-sample t-test of log(score) against 0; NaN with fewer than 2 scores."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size < 2 or not np.all(np.isfinite(scores)) or np.any(scores <= 0):
        return float("nan")
    from scipy import stats  # metrics is read by the runtime-only install, which has no SciPy

    logs = np.log(scores)
    if np.allclose(logs, logs[0]):
        return 0.0 if logs[0] != 0 else 1.0
    return float(stats.ttest_1samp(logs, 0.0).pvalue)


def confidence_interval(values, level: float = 0.95) -> tuple[float, float]:
    """Student-t confidence interval of the mean; (nan, nan) with fewer than 2 values."""
    from scipy import stats  # metrics is read by the runtime-only install, which has no SciPy

    values = np.asarray(values, dtype=np.float64)
    if values.size < 2:
        return float("nan"), float("nan")
    half = stats.t.ppf(0.5 + level / 2, values.size - 1) * stats.sem(values)
    return float(values.mean() - half), float(values.mean() + half)


def spread(values) -> tuple[float, float, float]:
    """(mean, min, max) over seeds: the per-seed spread the report shows beside every mean."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return float("nan"), float("nan"), float("nan")
    return float(values.mean()), float(values.min()), float(values.max())


def sign_test(values, reference: float, lower_is_better: bool = True, alpha: float = 0.05) -> dict:
    """Exact one-sided sign test of per-seed ``values`` against a published mean ``reference``.

    Each seed is better or worse than the reference; under "no difference" each is a fair coin, so
    all n seeds on one side has probability 0.5**n. The verdict is "better" or "worse" when that
    side's count has p <= ``alpha`` (5 of 5 seeds: p = 1/32), else "not resolved": the gap does not
    exceed the seed-to-seed noise. The reference's own run-to-run spread is unknown (a published
    mean), so the test is conservative only about this project's seeds.
    """
    from scipy import stats  # metrics is read by the runtime-only install, which has no SciPy

    values = np.asarray(values, dtype=np.float64)
    diff = (reference - values) if lower_is_better else (values - reference)
    better, worse = int(np.sum(diff > 0)), int(np.sum(diff < 0))
    n = better + worse
    if n == 0:
        return {"verdict": "not resolved", "better": 0, "worse": 0, "p": 1.0}
    p_better = float(stats.binomtest(better, n, 0.5, alternative="greater").pvalue)
    p_worse = float(stats.binomtest(worse, n, 0.5, alternative="greater").pvalue)
    verdict = "better" if p_better <= alpha else "worse" if p_worse <= alpha else "not resolved"
    return {"verdict": verdict, "better": better, "worse": worse, "p": min(p_better, p_worse)}
