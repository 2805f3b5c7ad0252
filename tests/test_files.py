import numpy as np
import pytest

from predcalc.data import ExpressionFileError, load_expression_file


def test_answers_given_or_computed(tmp_path):
    path = tmp_path / "mine.tsv"
    path.write_text("# my test set\n3 - -2 + 4\t9\n\n2 * (3 + 4)\n7 / 2\t3.5\n1 + 1\t3\n")
    split = load_expression_file(path)
    assert split.expressions == ("3 - -2 + 4", "2 * (3 + 4)", "7 / 2", "1 + 1")
    np.testing.assert_array_equal(split.values, [9, 14, 3.5, 3])  # a given answer is kept as given
    assert split.terms.tolist() == [3, 3, 2, 2]


@pytest.mark.parametrize(
    "content, message",
    [
        ("1 + 2\t3\n1 + \t4\n", ":2: expression ends too early"),
        ("1 + 2\tthree\n", ":1: answer 'three' is not a number"),
        ("1 + 2\t3\t4\n", ":1: expected 'expression<TAB>answer', found 3"),
        ("(1 + 2\n", ":1: unbalanced parentheses"),
        ("# nothing\n\n", "no expressions in the file"),
    ],
)
def test_malformed_lines_are_named(tmp_path, content, message):
    path = tmp_path / "bad.tsv"
    path.write_text(content)
    with pytest.raises(ExpressionFileError, match=message):
        load_expression_file(path)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_expression_file(tmp_path / "absent.tsv")
