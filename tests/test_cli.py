import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from predcalc.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_predict_prints_prediction_and_exact_value(exported_fnn2, capsys):
    model = exported_fnn2[2] / "model_float32.tflite"
    assert main(["predict", "3- -2+4", "--model", str(model)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("3 - -2 + 4 = ") and "exact 9" in out and "fnn2 (model_float32.tflite)" in out


def test_predict_with_a_keras_file(exported_fnn2, capsys):
    assert main(["predict", "1 + 2 - 3", "--model", str(exported_fnn2[2] / "model.keras")]) == 0
    assert "exact 0" in capsys.readouterr().out


@pytest.mark.parametrize(
    "expression, message",
    [
        ("", "empty expression"),
        ("(1 + 2", "unbalanced parentheses"),
        ("1 + two", "unexpected character 't'"),
        ("2 * 3", "numeric tokenizer encodes only \\+ and -"),
        ("1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1", "holds at most 15"),
        ("1 / 0", "division by zero"),
    ],
)
def test_predict_bad_input_is_one_line_and_exit_2(exported_fnn2, capsys, expression, message):
    assert main(["predict", expression, "--model", str(exported_fnn2[2] / "model_float32.tflite")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("predcalc predict: error: ")
    import re

    assert re.search(message, err)


def test_missing_model_file(tmp_path, capsys):
    assert main(["predict", "1 + 2", "--model", str(tmp_path / "none.tflite")]) == 2
    assert "no model file at" in capsys.readouterr().err


def test_evaluate_on_a_users_file(exported_fnn2, tmp_path, capsys):
    path = tmp_path / "mine.tsv"
    path.write_text("1 + 2 - 3\t0\n4 - -1 + 2\n")
    model = exported_fnn2[2] / "model_float32.tflite"
    assert main(["evaluate", "--model", str(model), "--file", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n"] == 2 and 0 <= result["exact"] <= 1 and result["mae"] >= 0
    path.write_text("1 + 2\n1 +\n")  # a malformed line is refused, the others scored (tests/test_evaluate_refusals.py)
    assert main(["evaluate", "--model", str(model), "--file", str(path)]) == 1
    assert "line 2: expression ends too early" in capsys.readouterr().out


def test_run_with_an_unknown_notebook_is_a_usage_error(capsys):
    assert main(["run", "--only", "99_nothing"]) == 2
    assert "no notebook matches 99_nothing" in capsys.readouterr().err


def test_console_script_exits_2_without_traceback(exported_fnn2):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "predcalc.cli",
            "predict",
            "3 +",
            "--model",
            str(exported_fnn2[2] / "model_float32.tflite"),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "expression ends too early" in result.stderr


def test_a_leading_minus_is_the_expression_not_an_option(exported_fnn2, capsys):
    model = str(exported_fnn2[2] / "model_float32.tflite")
    assert main(["predict", "-3+4", "--model", model]) == 0
    assert capsys.readouterr().out.startswith("-3 + 4 = ")
    assert main(["predict", "--model", model, "-2 - -5"]) == 0
    assert "exact 3" in capsys.readouterr().out


FNN2 = str(ROOT / "reports/runs/01_fnn/export/fnn2/model_float32.tflite")


@pytest.mark.slow  # about 20,000 rounds of the learned calculator's loop: minutes here
def test_the_default_calculator_takes_20000_terms_and_5000_parentheses(capsys):
    assert main(["predict", " + ".join(["1"] * 20_000)]) == 0
    assert "= 20000  (calculated by calculator" in capsys.readouterr().out
    assert main(["predict", "(" * 5_000 + "-7" + ")" * 5_000]) == 0
    assert "= -7  (calculated by calculator" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["predict", "1 + 2", "--model", ""], "--model is empty"),
        (["predict", "1 + 2", "--model", "  "], "--model is empty"),
        (["evaluate", "--model", "", "--file", "x.tsv"], "--model is empty"),
        (["predict"], "the following arguments are required: expression"),
        (["predict", "1", "--bogus"], "unrecognized arguments: --bogus"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["run", "--workers", "two"], "invalid int value: 'two'"),
        (["predict", " + ".join(["1"] * 20_000), "--model", FNN2], "holds at most 15"),
        (["predict", "(" * 5_000 + "1" + ")" * 5_000, "--model", FNN2], "numeric tokenizer"),
        (["predict", "(" * 5_000 + "1"], "never closed"),
    ],
)
def test_every_usage_error_is_one_short_line_and_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 400 and "Traceback" not in err
    assert message in err


def test_a_token_model_refuses_an_answer_longer_than_its_digits():
    from fractions import Fraction

    from predcalc.deploy.predictor import Predictor

    predictor = Predictor.__new__(Predictor)
    predictor.info = {"model": "transformer_tokens", "answer_format": {"digits": 3, "reversed": False}}
    predictor.check_answer(Fraction(999))
    predictor.check_answer(Fraction(-999))
    with pytest.raises(ValueError, match="at most 3 digits .* the exact answer 1100 does not fit"):
        predictor.check_answer(Fraction(1100))
    with pytest.raises(ValueError, match="integer answers only"):
        predictor.check_answer(Fraction(1, 3))
    predictor.info = {"model": "calc8", "answer_format": {"digits": 8}}
    predictor.check_answer(Fraction(600 + 500))
    with pytest.raises(ValueError, match="at most 8 digits"):
        predictor.check_answer(Fraction(10**8))
    predictor.info = {"model": "fnn2"}  # a regression model writes any number
    predictor.check_answer(Fraction(10**9))


@pytest.mark.slow
def test_predict_with_the_committed_token_model_refuses_600_plus_500(capsys):
    model = ROOT / "reports/runs/06_transformer/export/transformer_tokens/model.keras"
    if not model.is_file():
        pytest.skip("no committed transformer_tokens model")
    assert main(["predict", "600 + 500", "--model", str(model)]) == 2
    err = capsys.readouterr().err
    assert "writes answers of at most 3 digits" in err and err.count("\n") == 1


def test_a_stopped_run_says_which_notebooks_it_can_resume(tmp_path, capsys):
    from predcalc import cli_commands

    cli_commands.resume_hint(tmp_path)
    assert capsys.readouterr().err == ""  # nothing checkpointed: nothing said
    (tmp_path / ".checkpoints" / "06_transformer").mkdir(parents=True)
    (tmp_path / ".checkpoints" / "06_transformer" / "transformer5_reference-seed0-abc.json").write_text("{}")
    (tmp_path / ".checkpoints" / "10_mamba").mkdir()  # started, nothing finished
    cli_commands.resume_hint(tmp_path)
    err = capsys.readouterr().err
    assert "finished seeds of 06_transformer are checkpointed" in err and "10_mamba" not in err


def test_a_bug_is_one_short_line_and_exit_1(exported_fnn2, monkeypatch, capsys):
    """Exit 2 is for bad input only: an error in the code itself ends in exit 1, one line, no traceback."""
    import predcalc.cli_commands as cli_commands

    def broken(path):
        raise KeyError("a slot the code forgot")

    monkeypatch.setattr(cli_commands, "Predictor", broken)
    assert main(["predict", "1 + 2", "--model", str(exported_fnn2[2] / "model_float32.tflite")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("predcalc predict: internal error: KeyError: 'a slot the code forgot'")
    monkeypatch.setenv("PREDCALC_DEBUG", "1")
    with pytest.raises(KeyError):
        main(["predict", "1 + 2", "--model", str(exported_fnn2[2] / "model_float32.tflite")])


def test_a_missing_optional_package_exits_1_with_its_reason(monkeypatch, capsys):
    import predcalc.cli_commands as cli_commands

    def missing(path):
        raise ImportError("no LiteRT interpreter: pip install ai-edge-litert (or tflite-runtime)")

    monkeypatch.setattr(cli_commands, "Predictor", missing)
    assert main(["predict", "1 + 2", "--model", "model.tflite"]) == 1
    assert capsys.readouterr().err == (
        "predcalc predict: error: no LiteRT interpreter: pip install ai-edge-litert (or tflite-runtime)\n"
    )
