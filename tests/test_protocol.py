import numpy as np
import pytest

from predcalc.data import evaluate, reference_protocol
from predcalc.data.protocol import all_three_term_expressions


@pytest.fixture(scope="module")
def protocol():
    return reference_protocol(0)


def test_counts_match_the_reference_protocol(protocol):
    counts = protocol.counts()
    assert counts["out"] == 2048
    assert counts["long"] == 700
    drawn = counts["train"] + counts["validation"]
    assert counts["in"] == 4000 - drawn
    # 4,000 draws of 4,000 possible expressions leave about 4000 (1 - 1/e) = 2,528 unique
    assert 2400 < drawn < 2650
    assert counts["train"] == round(drawn * 0.75)
    assert counts["out22"] == 192  # (8,8,6) and (8,7,7) in any order: 6 x 8 signs x 4 operator pairs
    assert counts["long4"] == 100


def test_splits_are_disjoint_and_cover_every_expression(protocol):
    train, validation, test_in = (set(s.expressions) for s in (protocol.train, protocol.validation, protocol.test_in))
    assert not (train & validation) and not (train & test_in) and not (validation & test_in)
    assert train | validation | test_in == set(all_three_term_expressions())


def test_values_are_exact(protocol):
    for split in (protocol.train, protocol.test_out, protocol.test_long):
        for expression, value in list(zip(split.expressions, split.values))[:200]:
            assert value == float(evaluate(expression))


def test_ranges_and_lengths(protocol):
    def numbers(e):
        return [int(t) for t in e.split(" ")[::2]]

    assert all(-5 <= n <= 4 for e in protocol.train.expressions for n in numbers(e))
    assert all(abs(n) >= 5 and abs(n) <= 8 for e in protocol.test_out.expressions for n in numbers(e))
    assert all(-5 <= n <= 5 for e in protocol.test_long.expressions for n in numbers(e))
    lengths, counts = np.unique(protocol.test_long.terms, return_counts=True)
    assert lengths.tolist() == list(range(2, 9)) and counts.tolist() == [100] * 7
    assert all(sum(abs(n) for n in numbers(e)) == 22 for e in protocol.test_out22.expressions)


def test_same_seed_same_splits_other_seed_other_draw():
    a, b, c = reference_protocol(7), reference_protocol(7), reference_protocol(8)
    assert a.train.expressions == b.train.expressions and a.test_long.expressions == b.test_long.expressions
    assert a.train.expressions != c.train.expressions
    assert a.test_out.expressions == c.test_out.expressions  # the out-of-range set is exhaustive


def test_bad_arguments():
    with pytest.raises(ValueError, match="draws must be positive"):
        reference_protocol(draws=0)
    with pytest.raises(ValueError, match="validation_fraction"):
        reference_protocol(validation_fraction=1.5)
