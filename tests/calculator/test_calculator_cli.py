"""``predcalc predict`` and ``predcalc evaluate`` on the exported calculator (reports/calculator/)."""

from fractions import Fraction

import pytest

from predcalc import cli
from predcalc.data.expressions import evaluate
from predcalc.paths import REPORTS

MODEL = REPORTS / "calculator" / "model.tflite"


def test_predict_calculates_exactly(capsys):
    assert cli.main(["predict", "2*-26 + (7 - 3) / 6", "--model", str(MODEL)]) == 0
    assert capsys.readouterr().out.startswith("2*-26 + (7 - 3) / 6 = -154/3  (calculated by calculator")


def test_predict_uses_the_calculator_by_default(capsys):
    assert cli.main(["predict", "123456789 * 987654321"]) == 0
    assert "= 121932631112635269  (calculated by calculator" in capsys.readouterr().out


def test_predict_runs_forward_passes_unless_asked_for_the_cache(capsys, monkeypatch):
    from predcalc.calculator import runtime

    calls = []
    run = runtime.LiteRTSteps.__getitem__
    monkeypatch.setattr(
        runtime.LiteRTSteps, "__getitem__", lambda self, name: lambda x: calls.append(len(x)) or run(self, name)(x)
    )
    assert cli.main(["predict", "12 * 34 - 5", "--model", str(MODEL)]) == 0
    assert capsys.readouterr().out.strip().endswith("(calculated by calculator (model.tflite, LiteRT forward passes))")
    answering = len(calls)
    assert answering > 3  # the networks ran while answering
    calls.clear()
    assert cli.main(["predict", "12 * 34 - 5", "--model", str(MODEL), "--cache"]) == 0
    assert "403  (calculated by calculator (model.tflite, a look-up cache" in capsys.readouterr().out
    domains = len(calls)
    calls.clear()
    from predcalc.calculator.runtime import Calculator

    cached = Calculator(MODEL, cache=True)
    calls.clear()
    assert cached.answers(["12 * 34 - 5"]) == ["403"] and not calls  # answering with the cache runs none
    assert domains == len(runtime.STEPS)  # the cache ran each network once, on its whole domain


def test_division_by_zero_is_one_line_and_exit_2(capsys):
    assert cli.main(["predict", "5 / (2 - 2)", "--model", str(MODEL)]) == 2
    error = capsys.readouterr().err
    assert "division by zero" in error and len(error.strip().splitlines()) == 1


def test_evaluate_scores_long_answers_exactly_and_writes_each_line(tmp_path, capsys):
    big = "9" * 30
    right = str(evaluate(f"{big} + 1"))
    lines = [f"{big} + 1\t{right}", f"{big} + 1\t{right[:-1]}1", "1/3 + 1/6\t1/2", f"{big} * {big}"]
    file = tmp_path / "tests.tsv"
    file.write_text("\n".join(lines) + "\n")
    out = tmp_path / "answers.tsv"
    assert cli.main(["evaluate", "--model", str(MODEL), "--file", str(file), "--output", str(out), "--json"]) == 0
    rows = [line.split("\t") for line in out.read_text().splitlines()[1:]]
    assert [row[3] for row in rows] == ["1", "0", "1", "1"]  # the second truth differs in its last digit
    assert rows[3][1] == str(int(big) ** 2) and len(rows[3][1]) == 60
    assert Fraction(rows[2][1]) == Fraction(1, 2)
    assert '"exact": 0.75' in capsys.readouterr().out


@pytest.mark.parametrize("expression", ["", "3 +", "(2", "2 ^ 3"])
def test_malformed_input_is_refused(expression, capsys):
    assert cli.main(["predict", expression, "--model", str(MODEL)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_the_shipped_calculator_is_exact_past_its_test_families():
    """Beyond the largest family on each axis: 60-100 digit numbers, 41-80 operators without spaces,
    depth 11-14, and division of 30-digit numbers by 25-digit ones."""
    import dataclasses

    from predcalc.calculator.runtime import Calculator
    from predcalc.data.calculator_families import TRAINING_WORLD, answer, draw

    worlds = [
        dataclasses.replace(TRAINING_WORLD, digits=(60, 100), operators=(1, 3), ops="+-*"),
        dataclasses.replace(TRAINING_WORLD, digits=(1, 3), operators=(41, 80), spaces=0.0),
        dataclasses.replace(TRAINING_WORLD, digits=(1, 2), operators=(14, 16), depth=(11, 14)),
        dataclasses.replace(TRAINING_WORLD, digits=(25, 30), operators=(1, 1), ops="/"),
    ]
    pairs = [pair for seed, world in enumerate(worlds) for pair in draw(world, 12, seed)]
    answers = Calculator(MODEL).answers([e for e, _ in pairs])
    wrong = [(e, a, t) for (e, t), a in zip(pairs, answers) if a != t]
    assert not wrong, wrong[:3]
    assert all(answer(evaluate(e)) == t for e, t in pairs)  # the truths are the exact evaluator's


def test_the_shipped_calculator_is_exact_at_the_edges_of_its_claimed_box_and_refuses_past_its_limits():
    """The box the findings state (box.claim_box): leading zeros, exactly 50 digits with each operator,
    65-digit adversarial quotients, depth 10, 40 operators, and the two refusal limits, in one line each."""
    from predcalc.calculator.runtime import Calculator
    from predcalc.data.calculator_families import answer

    fifty, other = "7" * 25 + "3" * 25, "9" * 50
    nested = "12"
    for k in range(10):
        nested = f"({nested} {'+-*/'[k % 4]} {k + 3})"
    expressions = [
        "0000000000000000000000000000000000000000000000000000000000002 * 000000000000000003",
        "-000017 - 0003 + 00",
        "(0007 - 007) / 0003",
        *(f"{fifty} {op} -{other}" for op in "+-*/"),
        f"{123 * (10**60 + 7)} / 123",
        nested,
        " + ".join(str(k % 97) for k in range(41)),
        f"{'9' * 20} * ({'8' * 20} - {nested}) + " + " - ".join(str(k) for k in range(30)),
    ]
    calculator = Calculator(MODEL)
    answers = calculator.answers(expressions)
    wrong = [(e, a, answer(evaluate(e))) for e, a in zip(expressions, answers) if a != answer(evaluate(e))]
    assert not wrong, wrong[:3]
    big = "9" * 10_001  # 10,001 x 10,001 digit products: past 10^8
    refused = calculator.answers([f"{big} * {big}", "1" + " + 1" * 250_001])
    assert refused[0] == "error: operands too large: 100,020,001 digit products, more than 100,000,000"
    assert refused[1] == "error: expression longer than 1,000,000 characters"


@pytest.mark.slow
def test_the_shipped_calculator_answers_a_100000_term_chain_in_under_10_seconds():
    """Forward passes through the LiteRT file (the default path): a round halves the chain."""
    import time

    from predcalc.calculator.runtime import Calculator

    calculator = Calculator(MODEL)
    for op, truth in (("+", "100000"), ("-", "-99998")):
        started = time.perf_counter()
        assert calculator.answers([op.join(["1"] * 100_000)]) == [truth]
        assert time.perf_counter() - started < 10
