"""The one percent formatter: a share short of 100 % is never written 100.0 %, one above 0 never 0.0 %."""

import pytest

from predcalc.readable import percent, percent_number, percent_range, share


@pytest.mark.parametrize(
    ("fraction", "decimals", "text"),
    [
        (0.9951, 1, "99.5"),
        (0.99951, 1, "99.95"),
        (1.0, 1, "100.0"),
        (0.0004, 1, "0.04"),
        (0.0, 1, "0.0"),
        (0.996, 0, "99.6"),
    ],
)
def test_every_form_keeps_the_rule(fraction, decimals, text):
    assert percent_number(fraction, decimals) == text
    assert share(fraction, decimals) == f"{text} %"
    assert percent(fraction, decimals) == f"{text}\u00a0%"


def test_a_range_of_seeds_is_one_share_where_they_agree():
    assert percent_range(0.983, 1.0) == "98.3-100.0\u00a0%"
    assert percent_range(1.0, 1.0) == "100.0\u00a0%" and percent_range(0.99999, 1.0) == "99.999-100.0\u00a0%"
    assert percent_range(0.0, 0.5) == "0.0-50.0\u00a0%"
