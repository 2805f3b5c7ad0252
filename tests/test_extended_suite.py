import numpy as np
import pytest

from predcalc.data import count_numbers, evaluate
from predcalc.data.extended import extended_suite, random_expression


@pytest.fixture(scope="module")
def suite():
    return extended_suite(seed=1, train_size=600, test_size=30)


def test_families_vary_one_difficulty_each(suite):
    for d in range(1, 7):
        assert (suite[f"digits_{d}"].digits == d).all() and (suite[f"digits_{d}"].terms == 3).all()
    for n in range(2, 11):
        assert (suite[f"terms_{n}"].terms == n).all() and (suite[f"terms_{n}"].depth == 0).all()
    for k in range(0, 4):
        assert (suite[f"depth_{k}"].depth == k).all()
    assert set(suite["train"].terms.tolist()) <= {2, 3, 4} and suite["train"].digits.max() <= 2
    assert suite["train"].depth.max() <= 1


def test_values_are_exact_integers_and_tests_are_unseen(suite):
    seen = set(suite["train"].split.expressions) | set(suite["validation"].split.expressions)
    for name, split in suite.items():
        assert np.all(split.split.values == np.rint(split.split.values)), name
        for expression, value in zip(split.split.expressions[:20], split.split.values[:20]):
            assert float(evaluate(expression)) == value
        if name not in ("train", "validation"):
            assert not seen & set(split.split.expressions), name
        assert len(set(split.split.expressions)) == len(split.split), name


def test_same_seed_same_suite():
    a, b = extended_suite(seed=3, train_size=100, test_size=5), extended_suite(seed=3, train_size=100, test_size=5)
    assert all(a[k].split.expressions == b[k].split.expressions for k in a)


def test_random_expression_arguments():
    rng = np.random.default_rng(0)
    assert count_numbers(random_expression(rng, terms=7)) == 7
    with pytest.raises(ValueError, match="terms must be at least 1"):
        random_expression(rng, terms=0)
    with pytest.raises(ValueError, match="operators must be drawn from"):
        random_expression(rng, terms=2, operators="^")
    with pytest.raises(ValueError, match="min_digits"):
        random_expression(rng, terms=2, min_digits=3, max_digits=2)


def test_additive_suite_holds_only_plus_minus_and_the_typed_tokenizer_reads_it():
    from predcalc.data import TypedTokenizer

    additive = extended_suite(seed=2, train_size=200, test_size=20, operators="+-", parentheses=False)
    assert not any(key.startswith("depth_") for key in additive)
    for name, split in additive.items():
        text = " ".join(split.split.expressions)
        assert not set("*/()") & set(text), name
    assert (additive["digits_6"].digits == 6).all() and (additive["terms_8"].terms == 8).all()
    tokens = TypedTokenizer().encode_batch(list(additive["digits_6"].split.expressions))
    assert tokens.shape == (20, 15, 4) and np.abs(tokens[..., 0]).max() >= 100_000
    with pytest.raises(ValueError, match="operators must be drawn from"):
        extended_suite(seed=0, train_size=10, test_size=2, operators="")


def test_the_default_suite_is_the_one_drawn_before_the_operator_option():
    # pinned from the suite as drawn before `operators`/`parentheses` existed: the default must not move
    suite = extended_suite(seed=4, train_size=50, test_size=3)
    assert suite["train"].split.expressions[:2] == ("60 / 4 - (-88 / 88)", "97 * 4 + 52 / 1")
    assert suite["digits_6"].split.expressions[0] == "246572 * 722813 - 285308"
    assert suite["depth_3"].split.expressions[0] == "(-7 * ((8 + 5)) - -2) * 3"
