"""The digit models' ONNX files (`predcalc.deploy.digit_files`): an untrained tiny decoder and a
tiny column GRU exported by the module's command line (TensorFlow backend, in a child process),
then run by ONNX Runtime with the NumPy decoding loop: the same logits, tokens and answers as
Keras, and the parity the sidecar records."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from predcalc.data import digits
from predcalc.deploy.digit_files import LITERT_FILE, ONNX_FILE, SIDECAR, DigitFile
from predcalc.models.digits import DIGIT_MODELS
from predcalc.training.digits import answers

LIB = Path(__file__).resolve().parents[1] / "lib"
MODELS = {
    "digits_coupled_scratch": dict(dim=16, heads=2, depth=1),
    "digits_coupled_learned": dict(dim=16, heads=2, depth=1),  # learned id tables
    "digits_column_gru": dict(units=8),
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """``{name: (folder, Keras model)}``: each tiny checkpoint with the ``state.json`` `export`
    reads, exported by ``python -m predcalc.deploy.digit_files`` (one child for both)."""
    root = tmp_path_factory.mktemp("digit_files")
    out = {}
    for name, sizes in MODELS.items():
        folder = root / name
        folder.mkdir()
        keras.utils.set_random_seed(0)
        model = DIGIT_MODELS.named(name).build(**sizes)
        model.save(folder / "checkpoint.keras")
        (folder / "state.json").write_text(json.dumps({"model": name, "seed": 0, "steps": 0}))
        out[name] = folder, model
    environment = {
        **os.environ,
        "KERAS_BACKEND": "tensorflow",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "TF_ENABLE_ONEDNN_OPTS": "0",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(LIB), os.environ.get("PYTHONPATH")])),
    }
    folders = [str(folder) for folder, _ in out.values()]
    result = subprocess.run(
        [sys.executable, "-m", "predcalc.deploy.digit_files", *folders],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert all(f"{folder}: {ONNX_FILE}, parity" in result.stdout for folder in folders), result.stdout
    assert all(f"{LITERT_FILE}, parity" in line for line in result.stdout.splitlines()), result.stdout
    return out


def _expressions():
    rng = np.random.default_rng(3)
    return digits.draw(rng, 5, terms=(2, 3), digits=(1, 4)) + digits.draw(rng, 3, terms=(3, 3), digits=(11, 11))


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_the_sidecar_says_what_the_file_is_and_its_parity(exported, name):
    folder, _ = exported[name]
    info = json.loads((folder / SIDECAR).read_text())
    spec = DIGIT_MODELS.named(name)
    assert (info["model"], info["label"], info["family"], info["kind"]) == (name, spec.label, spec.family, "trained")
    assert info["format"] == (None if spec.format is None else vars(spec.format))
    assert info["tables"] == (None if spec.tables is None else list(spec.tables))
    assert info["box"] == {"digits": [1, 10], "terms": [2, 3]} and (info["seed"], info["steps"]) == (0, 0)
    assert 0 <= info["parity_max_logit_difference"] < 1e-4
    assert DigitFile(folder).format == spec.format
    assert info["litert"]["bytes"] == (folder / LITERT_FILE).stat().st_size  # builtin kernels only
    assert info["bytes"] == (folder / ONNX_FILE).stat().st_size
    assert 0 <= info["litert"]["parity_max_logit_difference"] < 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_the_litert_file_gives_the_answers_the_onnx_file_gives(exported, name):
    folder, _ = exported[name]
    litert = DigitFile(folder, runtime="litert")
    assert litert.name.endswith(f"({LITERT_FILE})") and DigitFile(folder / LITERT_FILE).runtime == "litert"
    batch = _expressions()
    assert litert.answers(batch) == DigitFile(folder).answers(batch)


def test_an_unknown_runtime_is_refused_in_one_line(tmp_path):
    with pytest.raises(ValueError, match="runtime must be one of onnx, litert, not 'trt'"):
        DigitFile(tmp_path, runtime="trt")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["digits_coupled_scratch", "digits_coupled_learned"])
def test_the_decoder_file_writes_the_tokens_keras_writes(exported, name):
    folder, model = exported[name]
    file, spec = DigitFile(folder), DIGIT_MODELS.named(name)
    batch = _expressions()
    encoded = [digits.encode(e, spec.format) for e in batch[5:]]  # one shape: 3 terms of 11 digits
    arrays = [np.stack([getattr(x, n) for x in encoded]) for n in ("tokens", "ids", "levels")]
    np.testing.assert_allclose(file.logits(*arrays), np.asarray(model.predict_on_batch(arrays)), atol=1e-4)
    written = {}

    def recording(run, key):
        def logits_at(t, i, lv, position):
            logits = np.asarray(run(t, i, lv))[:, position - 1, :]
            written.setdefault(key, []).append(np.argmax(logits, axis=-1))
            return logits

        return logits_at

    from_keras = digits.greedy(batch, spec.format, recording(lambda *a: model.predict_on_batch(list(a)), "keras"))
    from_file = digits.greedy(batch, spec.format, recording(file.logits, "file"))
    assert len(written["file"]) == len(written["keras"]) > 10
    for a, b in zip(written["file"], written["keras"], strict=True):
        np.testing.assert_array_equal(a, b)
    assert from_file == from_keras == file.answers(batch) == answers(model, spec, batch)


@pytest.mark.slow
def test_a_learned_table_file_refuses_what_its_tables_cannot_index(exported):
    file = DigitFile(exported["digits_coupled_learned"][0])
    id_table, level_table = DIGIT_MODELS.named("digits_coupled_learned").tables
    longest = id_table + digits.ID_FLOOR - 3  # scratch rows of W + 2 digits take ids 1..W + 2
    fits, too_long = (digits.parse(f"{'9' * w} + 1") for w in (longest, longest + 1))
    too_many = digits.parse(" + ".join(["1"] * ((level_table - 2) // 2 + 1)))  # answer level 2T + 2
    assert file.refusal(fits) is None
    for expression in (too_long, too_many):
        assert "learned tables" in file.refusal(expression)
    readable = digits.parse("12 - 3")
    assert file.answers([too_long, readable, too_many]) == [None, file.answers([readable])[0], None]


@pytest.mark.slow
def test_the_column_file_gives_the_answers_keras_gives(exported):
    folder, model = exported["digits_column_gru"]
    file, spec = DigitFile(folder), DIGIT_MODELS.named("digits_column_gru")
    batch = _expressions() + [digits.parse("1 + 2 + 3 + 4")]
    columns = digits.columns(batch[5:8])
    from_keras = model.predict_on_batch(columns)
    for key, value in file.columns(columns).items():
        np.testing.assert_allclose(value, np.asarray(from_keras[key]), atol=1e-5)
    expected = answers(model, spec, batch)
    assert file.answers(batch, batch_size=2) == expected and expected[-1] is None
    assert all(isinstance(answer, int) for answer in expected[:-1])


def test_a_folder_without_a_file_is_refused_in_one_line(tmp_path):
    for folder in (tmp_path / "missing", tmp_path):
        with pytest.raises(FileNotFoundError, match=f"holds no {ONNX_FILE} with its {SIDECAR}") as error:
            DigitFile(folder)
        assert "\n" not in str(error.value)
    (tmp_path / ONNX_FILE).write_bytes(b"")  # a file without its sidecar
    with pytest.raises(FileNotFoundError, match=SIDECAR):
        DigitFile(tmp_path)


@pytest.mark.slow
def test_a_seed_is_scored_once_through_its_file_with_the_skip_rule_and_litert_checked(exported, tmp_path):
    from predcalc.deploy.digit_scores import LITERT_CHECK, SCORES, litert_check, score_seed

    folder = tmp_path / "seed"
    shutil.copytree(exported["digits_coupled_scratch"][0], folder)
    rng = np.random.default_rng(5)
    sets = {
        "digits_30": digits.draw(rng, 2, terms=(3, 3), digits=(30, 30)),
        "digits_50": digits.draw(rng, 2, terms=(3, 3), digits=(50, 50)),
    }
    scores = score_seed(folder, sets, suite_seed=1, keras_check=1)
    assert scores["sets"]["digits_30"]["exact"] == 0.0  # untrained
    assert scores["sets"]["digits_50"]["skipped"] == "0 % on digits_30"
    assert scores["parity"] == {"digits_30": {"checked": 1, "differing": 0}}
    stored = json.loads((folder / SCORES).read_text())
    stored["sets"]["digits_30"]["marker"] = True  # a rerun with the same file and sets reads the cache
    (folder / SCORES).write_text(json.dumps(stored))
    assert score_seed(folder, sets, suite_seed=1, keras_check=1)["sets"]["digits_30"]["marker"]
    assert "marker" not in score_seed(folder, sets, suite_seed=2, keras_check=1)["sets"]["digits_30"]
    checked = litert_check(folder, sets, 1, 2, scores)
    assert checked["sets"] == {"digits_30": {"checked": 2, "differing": 0}} and (folder / LITERT_CHECK).is_file()
    (folder / LITERT_FILE).unlink()  # a clone: the files of models the findings do not carry stay out
    (folder / ONNX_FILE).unlink()
    assert litert_check(folder, sets, 1, 2, scores) == checked
    assert score_seed(folder, sets, suite_seed=1, keras_check=1) == json.loads((folder / SCORES).read_text())
    (folder / LITERT_CHECK).unlink()
    assert litert_check(folder, sets, 1, 2, scores) is None
    (folder / SCORES).unlink()
    with pytest.raises(FileNotFoundError, match=f"holds no {ONNX_FILE} and no {SCORES}"):
        score_seed(folder, sets, suite_seed=1)
