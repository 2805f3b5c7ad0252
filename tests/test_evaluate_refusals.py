"""``predcalc evaluate`` scores every line it can: each line it cannot answer is refused with its
number and reason; exit 0 (all answered), 1 (some refused) or 2 (none answered, or a usage error)."""

import json
import shutil

import pytest

from predcalc.cli import main
from predcalc.deploy.predictor import Predictor
from predcalc.paths import RUNS

GOOD = "1 + 2 - 3\t0\n4 - -1 + 2\n"


def evaluate(model, path, *options):
    return main(["evaluate", "--model", str(model), "--file", str(path), *options])


@pytest.fixture
def fnn2(exported_fnn2):
    return exported_fnn2[2] / "model_float32.tflite"


def test_an_all_good_file_exits_0_with_nothing_refused(fnn2, tmp_path, capsys):
    path = tmp_path / "good.tsv"
    path.write_text(GOOD)
    assert evaluate(fnn2, path, "--json") == 0
    result = json.loads(capsys.readouterr().out)
    assert result["lines"] == result["n"] == 2 and result["refused_count"] == 0 and result["refused"] == []
    assert result["exact_of_all"] == result["exact"]
    assert evaluate(fnn2, path) == 0
    out = capsys.readouterr().out
    assert "answered 2 of 2 lines; exact " in out and "refused" not in out


def test_a_malformed_line_is_refused_and_the_others_scored(fnn2, tmp_path, capsys):
    path = tmp_path / "mine.tsv"
    path.write_text("# a comment\n" + GOOD + "1 +\n1 + 2\tthree\n1\t2\t3\n")
    assert evaluate(fnn2, path, "--json", "--output", str(tmp_path / "answers.tsv")) == 1
    result = json.loads(capsys.readouterr().out)
    assert (result["lines"], result["n"], result["refused_count"]) == (5, 2, 3)
    assert result["refused"] == [
        {"line": 4, "reason": "expression ends too early: '1 +'"},
        {"line": 5, "reason": "answer 'three' is not a number"},
        {"line": 6, "reason": "expected 'expression<TAB>answer', found 3 tab-separated fields"},
    ]
    assert result["exact_of_all"] == pytest.approx(result["exact"] * 2 / 5)
    rows = [row.split("\t") for row in (tmp_path / "answers.tsv").read_text().splitlines()[1:]]
    assert len(rows) == 5 and rows[2][1] == "refused: expression ends too early: '1 +'" and rows[2][3] == "0"
    assert evaluate(fnn2, path) == 1
    out = capsys.readouterr().out.splitlines()
    assert "answered 2 of 5 lines; exact " in out[0] and " of the answered, " in out[0] and " of all lines" in out[0]
    assert out[1:] == [
        "refused 3 lines:",
        "  line 4: expression ends too early: '1 +'",
        "  line 5: answer 'three' is not a number",
        "  line 6: expected 'expression<TAB>answer', found 3 tab-separated fields",
    ]


def test_a_too_long_line_is_refused_in_one_short_line(fnn2, tmp_path, capsys):
    path = tmp_path / "long.tsv"
    path.write_text(GOOD + " + ".join(["1"] * 20_000) + "\n")  # 80 kB; the file reads 15 tokens
    assert evaluate(fnn2, path, "--json") == 1
    result = json.loads(capsys.readouterr().out)
    (refused,) = result["refused"]
    assert refused["line"] == 3 and "holds at most 15" in refused["reason"] and len(refused["reason"]) <= 300
    assert result["n"] == 2


def test_a_line_past_the_files_exact_range_is_refused(exported_fnn2, tmp_path, capsys):
    directory = tmp_path / "fnn2"
    shutil.copytree(exported_fnn2[2], directory)
    sidecar = directory / "predcalc.json"
    sidecar.write_text(json.dumps({**json.loads(sidecar.read_text()), "float32_exact_below": 2**4}))
    path = tmp_path / "range.tsv"
    path.write_text(GOOD + "8 + 8\n")  # sizes sum to 16 = 2^4: past the bound
    assert evaluate(directory / "model_float32.tflite", path, "--json") == 1
    result = json.loads(capsys.readouterr().out)
    assert result["n"] == 2 and [r["line"] for r in result["refused"]] == [3]
    assert result["refused"][0]["reason"].startswith("fnn2 answers in float32, exact while the numbers' sizes")


def test_a_file_with_no_answerable_line_exits_2_after_its_summary(fnn2, tmp_path, capsys):
    path = tmp_path / "bad.tsv"
    path.write_text("1 +\n2 * 3\n")
    assert evaluate(fnn2, path, "--json") == 2
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert result["n"] == 0 and result["exact"] is None and [r["line"] for r in result["refused"]] == [1, 2]
    assert "numeric tokenizer encodes only" in result["refused"][1]["reason"]
    assert captured.err.count("\n") == 1 and "bad.tsv: no line could be answered (2 refused; line 1: " in captured.err


@pytest.mark.parametrize("content, message", [(None, "no such file"), ("# only a comment\n\n", "no expressions")])
def test_a_missing_or_empty_file_is_a_usage_error(fnn2, tmp_path, capsys, content, message):
    path = tmp_path / "mine.tsv"
    if content is not None:
        path.write_text(content)
    assert evaluate(fnn2, path) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and message in captured.err


SIGN_SCAN = RUNS / "33_trained_exact_scan" / "export" / "scan_exact"


@pytest.mark.skipif(not (SIGN_SCAN / "model.onnx").is_file(), reason="no committed sign scan export")
def test_the_sign_scans_refusal_names_the_arithmetic_its_file_declares():
    """The ONNX file reads float32 and answers in float64; the LiteRT file is float32 throughout."""
    onnx, litert = Predictor(SIGN_SCAN / "model.onnx"), Predictor(SIGN_SCAN / "model_float32.tflite")
    assert onnx.arithmetic() == ("float32", "float64") and litert.arithmetic() == ("float32", "float32")
    with pytest.raises(ValueError, match=r"reads its numbers in float32 and answers in float64") as error:
        onnx.check_input("16777216 + 1")
    assert "answers in float32" not in str(error.value) and "2^24 = 16,777,216" in str(error.value)
    with pytest.raises(ValueError, match=r"^scan_exact answers in float32, exact while"):
        litert.check_input("16777216 + 1")
    onnx.check_input("16777215 + 0")  # just below: answered
