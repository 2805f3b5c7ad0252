"""Export parity: every LiteRT artifact is run and compared with the Keras model."""

import json

import numpy as np
import pytest

from predcalc.deploy.export import LITERT_FORMATS, LiteRTModel
from predcalc.deploy.predictor import Predictor


def test_every_format_is_written_and_runs(exported_fnn2):
    _, _, directory, report = exported_fnn2
    for fmt in LITERT_FORMATS:
        assert "error" not in report[fmt], report[fmt]
        assert (directory / f"model_{fmt}.tflite").stat().st_size == report[fmt]["bytes"]
        assert report[fmt]["tf_select"] is False  # builtin ops suffice for the FNN
    assert (directory / "saved_model" / "saved_model.pb").is_file()
    assert json.loads((directory / "predcalc.json").read_text())["tokenizer"] == "numeric"


def test_export_json_gives_every_artifact_its_size_and_verdict(exported_fnn2):
    _, _, directory, report = exported_fnn2
    record = json.loads((directory / "export.json").read_text())
    assert record["model"] == "fnn2" and record["source"].endswith("fnn2/model.keras")
    assert record["formats"] == json.loads(json.dumps(report))
    for name, entry in record["formats"].items():
        if name != "saved_model":
            assert entry["bytes"] > 0 and entry["verdict"] in ("use", "unsuitable"), name


def test_parity_with_keras(exported_fnn2):
    protocol, trained, directory, report = exported_fnn2
    assert report["float32"]["max_abs_diff"] < 1e-4
    assert report["float16"]["max_abs_diff"] < 0.05
    x = trained.tokenizer.encode_batch(protocol.test_in.expressions[:50])
    keras_values = trained.model.predict(x, verbose=0).reshape(-1)
    litert_values = LiteRTModel(directory / "model_float32.tflite")(x).reshape(-1)
    np.testing.assert_allclose(litert_values, keras_values, atol=1e-4)


def test_float16_is_smaller_than_float32(exported_fnn2):
    report = exported_fnn2[3]
    assert report["float16"]["bytes"] < report["float32"]["bytes"]


def test_keras_save_load_round_trip_and_predictor(exported_fnn2, tmp_path):
    import keras

    protocol, trained, directory, _ = exported_fnn2
    expressions = list(protocol.test_out.expressions[:20])
    from_keras = Predictor(directory / "model.keras").predict(expressions)
    from_litert = Predictor(directory / "model_float32.tflite").predict(expressions)
    np.testing.assert_allclose(from_keras, trained.predict(expressions), atol=1e-6)
    np.testing.assert_allclose(from_litert, from_keras, atol=1e-4)
    # the model in memory round-trips too (another xdist worker's fixture may have loaded it from model.keras)
    trained.model.save(tmp_path / "again.keras")
    x = trained.tokenizer.encode_batch(expressions)
    again = keras.saving.load_model(tmp_path / "again.keras").predict(x, verbose=0)
    np.testing.assert_array_equal(again, trained.model.predict(x, verbose=0))


def test_predictor_errors(exported_fnn2, tmp_path):
    directory = exported_fnn2[2]
    with pytest.raises(FileNotFoundError, match="no model file"):
        Predictor(tmp_path / "absent.tflite")
    lonely = tmp_path / "model.tflite"
    lonely.write_bytes((directory / "model_float32.tflite").read_bytes())
    with pytest.raises(FileNotFoundError, match="predcalc.json is missing"):
        Predictor(lonely)
    with pytest.raises(ValueError, match="unknown format"):
        from predcalc.deploy.export import converter_options

        converter_options("int4", None, __import__("tensorflow"))


def test_a_crashing_converter_becomes_an_error_not_a_dead_process(exported_fnn2, monkeypatch):
    """int8 converts in a child process; a child that dies is reported with its signal."""
    import subprocess

    from predcalc.deploy import export

    trained = exported_fnn2[1]

    class Crashed:
        returncode, stdout, stderr = -11, "", ""

    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: Crashed())
    with pytest.raises(
        RuntimeError,
        match="int8 conversion or first run failed in a child process: the converter crashed \\(SIGSEGV\\)",
    ):
        export.export_litert(trained.model, "/tmp/never.tflite", "int8", np.zeros((2, 15), np.float32))


def test_verdicts_of_checked_artifacts():
    """float32 and ONNX (EXACT parity) must match Keras; a quantised file may lose at most 2 points anywhere."""
    from predcalc.deploy.formats import EXACT, QUANTISED, get_format, verdict

    def record(diff, *changes):
        return {"max_abs_diff": diff, "accuracy_change": dict(zip(("in", "out", "long"), changes))}

    assert get_format("float32").parity == get_format("onnx").parity == EXACT
    assert get_format("int8").parity == get_format("float16").parity == QUANTISED
    assert verdict(record(1e-5, 0.0, 0.0, 0.0), EXACT, False) == ("use", "matches Keras")
    assert verdict(record(1.1, 0.0, 0.0, 0.0), EXACT, False)[0] == "unsuitable"  # a silent wrong converter
    assert verdict(record(2.3e-3, 0.0, 0.0, 0.0), EXACT, False, scale=10.0)[0] == "use"  # relative 2.3e-4
    assert verdict(record(2.3e-3, 0.0, 0.0, 0.0), EXACT, False, scale=1.0)[0] == "unsuitable"
    assert verdict(record(1e9, 0.0, 0.0, 0.0), EXACT, True)[0] == "use"  # token answers: accuracy decides
    assert verdict(record(1e-5, -0.1, 0.0, 0.0), EXACT, False)[0] == "unsuitable"
    assert verdict(record(0.9, -0.019, 0.01, 0.0), QUANTISED, False)[0] == "use"
    decision, reason = verdict(record(0.9, 0.0, -0.021, 0.0), QUANTISED, False)
    assert decision == "unsuitable" and reason == "loses 2.1 points of exact accuracy (limit 2)"


def test_drop_stack_traces_removes_the_exporters_paths_and_keeps_the_graph(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    from predcalc.deploy.export import drop_stack_traces

    node = helper.make_node("Relu", ["x"], ["y"])
    node.metadata_props.add(key="pkg.torch.onnx.stack_trace", value='File "/home/someone/layer.py", line 4')
    node.metadata_props.add(key="namespace", value="relu")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
    )
    path = tmp_path / "model.onnx"
    onnx.save(helper.make_model(graph), str(path))
    drop_stack_traces(path)
    kept = onnx.load(str(path))
    assert [(p.key, p.value) for p in kept.graph.node[0].metadata_props] == [("namespace", "relu")]
    assert b"/home/someone" not in path.read_bytes() and kept.graph.node[0].op_type == "Relu"


def test_a_stored_model_is_checked_on_its_own_runs_data():
    from predcalc.deploy.export import _check_data

    suite_run = {
        "data": {"suite_seed": 0},
        "parameters": {"train_size": 50, "test_size": 5},
        "extended": {"scope": {"operators": "+-*/", "parentheses": True}},
    }
    protocol, label = _check_data(suite_run, None)
    assert label == {"suite_seed": 0} and "depth_3" in protocol.test_sets() and len(protocol.train) == 50
    assert any("*" in e or "/" in e for e in protocol.train.expressions)
    protocol, label = _check_data({"data": {"seed": 3}}, None)
    assert label == {"data_seed": 3} and set(protocol.test_sets()) >= {"in", "out", "long"}
    assert _check_data(suite_run, 1)[1] == {"data_seed": 1}  # an explicit seed names the reference protocol
    assert _check_data(None, None)[1] == {"data_seed": 0}
