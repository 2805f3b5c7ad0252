"""The digit suite scored through the other models' files: a refusal is not answered (and not exact),
an answered line is right only where it is the exact integer."""

import pytest

from predcalc.data.digits import Expression
from predcalc.deploy import digit_suite_others as others
from predcalc.paths import RUNS

SCAN = RUNS / "33_trained_exact_scan" / "export" / "scan_exact_fresh_seed_10" / "model.onnx"

# 3 expressions of two sets: every line of "small" in the file's exact range; in "wide" two lines
# past 2^24 (different sums, one reason) and one inside it
SETS = {
    "small": [Expression(((1, 17), (-1, -250), (1, 3))), Expression(((1, 5), (-1, 9))), Expression(((1, 0), (1, 1)))],
    "wide": [
        Expression(((1, 10**12), (1, 1))),
        Expression(((1, 123), (-1, 4))),
        Expression(((1, 2**24), (-1, 3))),
    ],
}


@pytest.fixture(scope="module")
def record():
    pytest.importorskip("onnxruntime")
    return others.score_model("scan_exact", SETS, files=[SCAN])


def test_a_refusal_is_not_answered_and_not_exact(record):
    (wide,) = record["sets"]["wide"]["per_file"]
    assert (wide["answered"], wide["exact"], wide["n"]) == (1, 1, 3)
    ((reason, count),) = record["sets"]["wide"]["refusals"].items()
    assert count == 2 and "2^24" in reason and "<expression>" in reason and "sums to <size>" in reason
    assert record["refusals"] == {reason: 2}
    (small,) = record["sets"]["small"]["per_file"]
    assert (small["answered"], small["exact"]) == (3, 3)
    assert record["sets"]["small"]["files_all_exact"] == 1 and record["sets"]["wide"]["files_all_exact"] == 0


class OffByOne:
    """A stand-in file: answers every line with its value plus one on odd values, refuses none."""

    def answers(self, texts, values):
        return [(str(v + (v % 2)), None) for v in values]


def test_an_answered_line_is_scored_against_the_exact_integer():
    big = Expression(((1, 10**30), (1, 2)))  # 30 digits: a float would round both answers alike
    row = others.score_file(OffByOne(), [big, Expression(((1, 10**30), (1, 1)))])
    assert (row["answered"], row["exact"], row["n"]) == (2, 1, 2)


def test_missing_files_are_listed_not_scored(tmp_path):
    record = others.score_model("scan_exact", SETS, files=[tmp_path / "model.onnx"])
    assert record["files"] == [] and len(record["missing"]) == 1
    assert record["sets"]["small"]["per_file"] == []
