"""Deployment: ONNX parity, TF-TRT's clear error, `predcalc export`, `predcalc bench`, the report section."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from predcalc.cli import main
from predcalc.deploy.export import FORMATS, ONNXModel, artifact_path, export_trained

ROOT = Path(__file__).resolve().parents[1]


def test_onnx_matches_keras_or_records_the_converters_reason(exported_fnn2):
    protocol, trained, directory, report = exported_fnn2
    if importlib.util.find_spec("tf2onnx") is None:  # Keras' TF-backend ONNX export needs it
        assert report["onnx"]["error"].startswith("ImportError: This requires the tf2onnx module")
        assert not (directory / "model.onnx").exists()
        return
    assert "error" not in report["onnx"], report["onnx"]
    assert (directory / "model.onnx").stat().st_size == report["onnx"]["bytes"]
    assert report["onnx"]["batch"] is None  # a flexible batch: one call for a whole test set
    assert report["onnx"]["max_abs_diff"] < 1e-4
    assert set(report["onnx"]["accuracy_change"]) == {"in", "out"}
    for name, change in report["onnx"]["accuracy_change"].items():  # at most one rounding flips
        assert abs(change) <= 1 / len(getattr(protocol, f"test_{name}")), (name, change)
    x = trained.tokenizer.encode_batch(protocol.test_out.expressions)
    np.testing.assert_allclose(ONNXModel(directory / "model.onnx")(x), trained.model.predict(x, verbose=0), atol=1e-4)


def test_a_format_that_cannot_convert_is_recorded_and_the_others_go_on(exported_fnn2, tmp_path):
    import keras

    protocol, trained, _, _ = exported_fnn2
    inputs = keras.Input((trained.tokenizer.length,))
    hidden = keras.layers.Lambda(lambda t: keras.ops.log1p(keras.ops.abs(t)))(keras.layers.Dense(4)(inputs))
    model = keras.Model(inputs, keras.layers.Dense(1)(hidden))  # tf2onnx has no ONNX form of Log1p
    model_like = types.SimpleNamespace(spec=trained.spec, tokenizer=trained.tokenizer, model=model)
    test_sets = {"in": protocol.test_in}
    report = export_trained(
        model_like,
        tmp_path / "log1p",
        test_sets,
        protocol.train.expressions[:20],
        formats=("onnx", "float32"),
        saved_model=False,
    )
    if importlib.util.find_spec("tf2onnx") is None:
        assert "requires the tf2onnx module" in report["onnx"]["error"]
    else:
        # tf2onnx's reason, then the PyTorch backend's (it cannot reload a Lambda layer's code)
        assert report["onnx"]["error"].startswith(
            "tf2onnx: UnsupportedOpsError: tf2onnx: Unsupported ops: Counter({'Log1p': 1}) | torch: "
        )
        assert report["onnx"]["verdict"] == "unsuitable"
    assert not (tmp_path / "log1p" / "model.onnx").exists()
    assert report["float32"]["max_abs_diff"] < 1e-4  # the format after the failure was still exported


def test_tensorrt_missing_is_a_clear_error(exported_fnn2, capsys):
    from predcalc.deploy import tensorrt

    directory = exported_fnn2[2]
    available, reason = tensorrt.tensorrt_status()
    if available:
        pytest.skip(f"this TensorFlow has TensorRT ({reason})")
    assert "without TensorRT support" in reason  # TensorFlow from PyPI
    with pytest.raises(
        tensorrt.TensorRTUnavailableError,
        match="TensorRT is not available: TensorFlow .* built "
        "without TensorRT.*on a Jetson, install NVIDIA's TensorFlow for JetPack",
    ):
        tensorrt.convert(directory / "saved_model", precision="FP16")
    assert not (directory / "saved_model_trt_fp16").exists()
    assert issubclass(tensorrt.TensorRTUnavailableError, RuntimeError)  # `predcalc` prints it on one line
    assert tensorrt.main([str(directory), "--precision", "int8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("predcalc tensorrt: error: TensorRT is not available")


def test_tensorrt_argument_errors(exported_fnn2, tmp_path):
    from predcalc.deploy import tensorrt

    saved_model = exported_fnn2[2] / "saved_model"
    with pytest.raises(ValueError, match="unknown TensorRT precision 'INT4'"):
        tensorrt.convert(saved_model, precision="int4")
    with pytest.raises(ValueError, match="INT8 needs calibration_inputs"):
        tensorrt.convert(saved_model, precision="INT8")
    with pytest.raises(FileNotFoundError, match="no SavedModel"):
        tensorrt.convert(tmp_path, precision="FP32")


def _copy_model(source: Path, target: Path) -> Path:
    target.mkdir(parents=True)
    for name in ("model.keras", "predcalc.json"):
        shutil.copy(source / name, target / name)
    return target / "model.keras"


@pytest.mark.slow
def test_export_command_on_a_run_directory(exported_fnn2, tmp_path, capsys):
    run = tmp_path / "runs" / "01_tiny"
    model_file = _copy_model(exported_fnn2[2], run / "export" / "fnn2")
    broken = run / "export" / "broken"  # sorts first: the batch must go on after it fails
    broken.mkdir()
    (broken / "model.keras").write_bytes(b"not a keras file")
    (broken / "predcalc.json").write_text((exported_fnn2[2] / "predcalc.json").read_text())
    (run / "metrics.json").write_text(
        json.dumps({"notebook": "01_tiny", "data": {"seed": 0}, "models": {"fnn2": {"label": "FNN2", "export": None}}})
    )
    assert main(["export", str(run)]) == 1
    out, err = capsys.readouterr()
    assert "FAILED: " in err and "broken/model.keras" in err
    record = json.loads((model_file.parent / "export.json").read_text())
    assert record["model"] == "fnn2" and record["data_seed"] == 0
    for fmt in FORMATS:
        info = record["formats"][fmt]
        if "error" in info:  # only ONNX may fail here, and only for want of its converter
            assert fmt == "onnx" and "tf2onnx" in info["error"]
            continue
        assert artifact_path(model_file.parent, fmt).stat().st_size == info["bytes"]
        assert set(info["accuracy_change"]) == {"in", "out", "long", "out22", "long4"}
        assert f"| {fmt} |" in out
    assert record["formats"]["float32"]["max_abs_diff"] < 1e-4
    assert (model_file.parent / "saved_model" / "saved_model.pb").is_file() and model_file.is_file()
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["models"]["fnn2"]["export"] == record["formats"]  # what `predcalc report` reads


def test_export_command_on_a_single_file_and_bad_paths(exported_fnn2, tmp_path, capsys):
    model_file = _copy_model(exported_fnn2[2], tmp_path / "alone")
    assert main(["export", str(model_file), "--formats", "float32"]) == 0
    record = json.loads((tmp_path / "alone" / "export.json").read_text())
    assert set(record["formats"]) == {"saved_model", "float32"} and record["data_seed"] == 0
    assert main(["export", str(tmp_path / "nothing")]) == 2
    assert "no such run directory or model file" in capsys.readouterr().err


def test_bench_writes_latency_and_throughput(exported_fnn2, tmp_path, capsys):
    output = tmp_path / "bench.json"
    assert (
        main(["bench", "--model", str(exported_fnn2[2]), "--runs", "5", "--batch", "40", "--output", str(output)]) == 0
    )
    assert "| keras_predict |" in capsys.readouterr().out
    record = json.loads(output.read_text())
    assert {"created", "backend", "threads", "runs", "expression", "batch", "models"} <= set(record)
    assert record["runs"] == 5 and record["batch"] == 40 and record["expression"] == "3 - -2 + 4"
    (model,) = record["models"]
    assert model["model"] == "fnn2" and model["errors"] == {}
    rows = {row["runtime"]: row for row in model["results"]}
    expected = {
        "keras_predict",
        "keras_call",
        "python_exact",
        "encode_only",
        *(f"litert_{fmt}" for fmt in ("float32", "float16", "int8_dynamic", "int8")),
    }
    if (exported_fnn2[2] / "model.onnx").exists():
        expected.add("onnxruntime")
    assert set(rows) == expected
    for row in rows.values():
        assert 0 < row["latency_median_us"] <= row["latency_p99_us"]
        assert row["throughput_per_s"] > 0 and row["latency_ratio"] > 0 and row["throughput_ratio"] > 0
    assert rows["keras_predict"]["latency_ratio"] == 1 and rows["keras_predict"]["max_abs_diff"] == 0
    assert rows["litert_float32"]["max_abs_diff"] < 1e-4 and rows["litert_float32"]["inference_per_s"] > 0
    assert rows["python_exact"]["max_abs_diff"] is None and rows["python_exact"]["inference_per_s"] is None

    assert main(["bench", "--model", str(exported_fnn2[2]), "--runs", "0"]) == 2


# Python source that makes importing Keras, TensorFlow, SciPy, pandas, JAX or PyTorch fail.
BLOCK_HEAVY_IMPORTS = (
    "import sys\n"
    "class Block:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in {'keras', 'tensorflow', 'scipy', 'pandas', 'jax', 'torch'}:\n"
    "            raise ImportError('blocked: ' + name)\n"
    "sys.meta_path.insert(0, Block())\n"
)


def test_the_calculator_runs_without_keras_tensorflow_or_scipy(exported_fnn2):
    """What a Jetson needs for `predcalc predict`: NumPy and the artifact's runtime."""
    directory = exported_fnn2[2]
    blocker = (
        BLOCK_HEAVY_IMPORTS + "from predcalc.cli import main\n"
        "sys.exit(main(['predict', '3 - -2 + 4', '--model', sys.argv[1]]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}
    artifacts = [directory / "model_float32.tflite"]
    if (directory / "model.onnx").exists():
        artifacts.append(directory / "model.onnx")
    for artifact in artifacts:
        result = subprocess.run([sys.executable, "-c", blocker, str(artifact)], capture_output=True, text=True, env=env)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("3 - -2 + 4 = ") and f"({artifact.name})" in result.stdout


def test_the_deploy_package_imports_without_keras_tensorflow_or_scipy():
    """predcalc.deploy imports only NumPy at import time (heavy imports live inside functions)."""
    blocker = (
        BLOCK_HEAVY_IMPORTS + "import predcalc.deploy.export, predcalc.deploy.predictor, predcalc.deploy.tensorrt\n"
        "import predcalc.deploy.bench, predcalc.paths, predcalc.cli\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}
    result = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr


def test_evaluate_and_token_decoding_without_keras_tensorflow_or_scipy(exported_fnn2, tmp_path):
    """`predcalc evaluate` and a token model's answer decoding need only NumPy (the runtime extra)."""
    directory = exported_fnn2[2]
    tsv = tmp_path / "few.tsv"
    tsv.write_text("3 - -2 + 4\t9\n1 + 1\t2\n")
    code = (
        BLOCK_HEAVY_IMPORTS + "import numpy as np\n"
        "from predcalc.data.answers import AnswerFormat\n"
        "fmt = AnswerFormat(digits=3, reversed=True)\n"
        "logits = np.eye(14)[fmt.encode([17, -4])]\n"
        "assert list(fmt.values_from_logits(logits.reshape(2, -1))) == [17.0, -4.0]\n"
        "import predcalc.training.metrics\n"
        "from predcalc.cli import main\n"
        "sys.exit(main(['evaluate', '--model', sys.argv[1], '--file', sys.argv[2], '--json']))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}
    result = subprocess.run(
        [sys.executable, "-c", code, str(directory / "model_float32.tflite"), str(tsv)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 2


def test_predictor_routes_a_long_expression_to_a_longer_litert_file(tmp_path, monkeypatch):
    """predcalc.json's litert_lengths: an expression too long for the trained length runs on the
    shortest longer file that holds it; one too long for all of them is refused."""
    import predcalc.deploy.formats.litert as litert
    from predcalc.data import TokenizerError
    from predcalc.deploy.predictor import Predictor

    class FakeLiteRT:
        def __init__(self, path, num_threads=1):
            self.path = Path(path)

        def __call__(self, inputs):  # the input length, so the test sees which file answered
            return np.full((len(inputs), 1), float(np.asarray(inputs).shape[1]), dtype=np.float32)

    monkeypatch.setattr(litert, "LiteRTModel", FakeLiteRT)
    (tmp_path / "predcalc.json").write_text(
        json.dumps(
            {"model": "lstm", "tokenizer": "numeric", "tokenizer_config": {"length": 15}, "litert_lengths": [60, 30]}
        )
    )
    for name in ("model_float32.tflite", "model_float32_len30.tflite", "model_float32_len60.tflite"):
        (tmp_path / name).write_bytes(b"")
    predictor = Predictor(tmp_path / "model_float32.tflite")
    short, middle, long = "1 + 2", " + ".join(["1"] * 12), " + ".join(["1"] * 25)  # 3, 23, 49 tokens
    assert list(predictor.predict([middle, short, long, short])) == [30.0, 15.0, 60.0, 15.0]
    assert predictor.max_tokens == 60
    with pytest.raises(TokenizerError, match="at most 60"):
        predictor.predict([" + ".join(["1"] * 31)])
    # another file (here float16) has no longer siblings: the trained length only
    (tmp_path / "model_float16.tflite").write_bytes(b"")
    with pytest.raises(TokenizerError, match="at most 15"):
        Predictor(tmp_path / "model_float16.tflite").predict([middle])
