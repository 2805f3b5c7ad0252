"""A new export format is one registered module: export_trained writes and checks it, the
predictor opens it by its file name and bench times it, with no other change."""

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from predcalc.deploy import bench
from predcalc.deploy.export import export_trained
from predcalc.deploy.formats import EXACT, FORMATS, ExportFormat, for_path, get_format, register
from predcalc.deploy.predictor import Predictor


class KerasBytes(ExportFormat):
    """A stand-in format: the .keras file under another name, run through Keras."""

    name, filename, parity, runtime = "dummy", "model.dummy", EXACT, "dummy_runtime"

    def write(self, job, path):
        job.trained.model.save(path.with_suffix(".keras.tmp.keras"))
        shutil.move(path.with_suffix(".keras.tmp.keras"), path)
        return {"bytes": path.stat().st_size}

    def open(self, path, num_threads: int = 1):
        import keras

        with tempfile.TemporaryDirectory() as scratch:
            copy = Path(scratch) / "model.keras"
            shutil.copy(path, copy)
            model = keras.saving.load_model(copy)
        return lambda inputs: model.predict(np.asarray(inputs), verbose=0)


@pytest.fixture
def dummy_format():
    fmt = register(KerasBytes())
    yield fmt
    FORMATS.pop(fmt.name)


def test_a_registered_format_is_exported_predicted_and_benched(exported_fnn2, dummy_format, tmp_path):
    protocol, trained, _, _ = exported_fnn2
    directory = tmp_path / "fnn2"
    report = export_trained(
        trained, directory, {"in": protocol.test_in}, protocol.train.expressions[:50], saved_model=False
    )
    assert report["dummy"]["verdict"] == "use" and report["dummy"]["max_abs_diff"] < 1e-6, report["dummy"]
    assert (directory / "model.dummy").stat().st_size == report["dummy"]["bytes"]
    assert {"float32", "onnx", "dummy"} <= set(report)  # written beside the built-in formats

    assert for_path(directory / "model.dummy") is dummy_format is get_format("dummy")
    expressions = list(protocol.test_out.expressions[:10])
    np.testing.assert_allclose(
        Predictor(directory / "model.dummy").predict(expressions), trained.predict(expressions), atol=1e-6
    )

    trained.model.save(directory / "model.keras")
    result = bench.bench_model(directory / "model.keras", runs=3, batch=expressions, repeats=1)
    rows = {row["runtime"]: row for row in result["results"]}
    assert result["errors"] == {} and rows["dummy_runtime"]["artifact"] == "model.dummy"
    assert rows["dummy_runtime"]["max_abs_diff"] < 1e-6 and rows["dummy_runtime"]["latency_median_us"] > 0


def test_format_names_are_unique_and_unknown_files_are_refused(tmp_path):
    with pytest.raises(ValueError, match="registered twice"):
        register(type("Again", (ExportFormat,), {"name": "onnx"})())
    (tmp_path / "model.xyz").write_bytes(b"")
    with pytest.raises(ValueError, match="unsupported model file 'model.xyz'"):
        for_path(tmp_path / "model.xyz")
    with pytest.raises(ValueError, match="unknown export format 'nope'"):
        get_format("nope")
