import random
from fractions import Fraction
from pathlib import Path

import pytest

from predcalc.data import ExpressionError, depth, evaluate, format_expression, parse


@pytest.mark.parametrize(
    "text, value",
    [
        ("3 - -2 + 4", 9),
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("2 - 3 - 4", -5),  # left associative
        ("12 / 4 / 3", 1),
        ("7 / 2", Fraction(7, 2)),
        ("-(2 + 3) * -2", 10),
        ("--3", 3),
        ("+4 - +1", 3),
        ("1 / 3 * 3", 1),  # exact, no float rounding
        ("  8*(3-(2-1))  ", 16),
        ("123456 + 654321", 777777),
    ],
)
def test_evaluate_known_values(text, value):
    assert evaluate(text) == value


def _random_tree(rng, depth_left):
    if depth_left == 0 or rng.random() < 0.3:
        return rng.randint(-20, 20)
    op = rng.choice("+-*/")
    return (op, _random_tree(rng, depth_left - 1), _random_tree(rng, depth_left - 1))


def _render(tree):
    if isinstance(tree, int):
        return f"({tree})" if tree < 0 else str(tree)
    return f"({_render(tree[1])} {tree[0]} {_render(tree[2])})"


def _reference(tree):
    if isinstance(tree, int):
        return Fraction(tree)
    a, b = _reference(tree[1]), _reference(tree[2])
    return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b}[tree[0]]()


def test_evaluate_matches_reference_on_random_fully_parenthesised_trees():
    rng = random.Random(0)
    checked = 0
    for _ in range(500):
        tree = _random_tree(rng, 4)
        try:
            expected = _reference(tree)
        except ZeroDivisionError:
            with pytest.raises(ExpressionError, match="division by zero"):
                evaluate(_render(tree))
            continue
        assert evaluate(_render(tree)) == expected
        checked += 1
    assert checked > 400


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty expression"),
        ("   ", "empty expression"),
        ("3 +", "ends too early"),
        ("(3 + 4", "never closed"),
        ("3 + 4)", "has no '\\('"),
        ("3 + x", "unexpected character 'x'"),
        ("3 4", "unexpected '4'"),
        ("2 ** 3", "unexpected '\\*'"),
        ("1 / (2 - 2)", "division by zero"),
        ("3.5 + 1", "unexpected character '.'"),
    ],
)
def test_bad_expressions_raise_clear_errors(text, message):
    with pytest.raises(ExpressionError, match=message):
        evaluate(text)


def test_non_string_is_rejected():
    with pytest.raises(ExpressionError, match="must be a string"):
        evaluate(3)


def test_depth_counts_nested_parentheses():
    assert depth(parse("1 + 2")) == 0
    assert depth(parse("(1 + 2) * 3")) == 1
    assert depth(parse("((1) - (2 * (3)))")) == 3


def test_format_expression_writes_the_reference_form():
    assert format_expression([3, -2, 4], ["-", "+"]) == "3 - -2 + 4"
    with pytest.raises(ValueError, match="one operator fewer"):
        format_expression([1, 2], ["+", "-"])


def test_library_never_calls_eval():
    library = Path(__file__).resolve().parents[1] / "lib" / "predcalc"
    offenders = [
        str(p)
        for p in library.rglob("*.py")
        if "eval(" in p.read_text().replace("literal_eval(", "")
        and any(
            line.lstrip().startswith(("eval(", "return eval(")) or " eval(" in line
            for line in p.read_text().splitlines()
        )
    ]
    assert offenders == []


def test_twenty_thousand_terms_and_five_thousand_parentheses_need_no_recursion():
    from predcalc.data.expressions import depth, evaluate, parse

    assert evaluate(" + ".join(["1"] * 20_000)) == 20_000
    assert evaluate(" - ".join(["2"] * 20_000)) == 2 - 2 * 19_999
    nested = "(" * 5_000 + "1 + 2" + ")" * 5_000
    assert evaluate(nested) == 3 and depth(parse(nested)) == 5_000
    assert evaluate("-(" * 5_000 + "2" + ")" * 5_000) == 2
    assert evaluate("- " * 5_000 + "7") == 7


def test_errors_on_a_huge_expression_quote_it_short():
    import pytest

    from predcalc.data.expressions import ExpressionError, parse

    with pytest.raises(ExpressionError, match="'\\(' at position 4999 is never closed") as info:
        parse("(" * 5_000 + "1")
    assert len(str(info.value)) < 200


def test_running_totals_follow_the_terms_left_to_right():
    from predcalc.data.expressions import running_totals

    assert running_totals("-3 + 4 - 2") == [1, -1]
    assert running_totals("3 - -2 + 4") == [5, 9]
    assert running_totals("7 - 8") == [-1]
    assert running_totals("5") == []
    for bad in ("(1 + 2) - 3", "2 * 3 + 1"):
        with pytest.raises(ExpressionError, match="flat sum"):
            running_totals(bad)
