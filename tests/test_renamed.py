"""Issue 43 renamed the prior report from "seed" to "reference": what was stored or typed under the
former names still loads and resolves, and what is saved now carries the new names."""

import io
import json
import zipfile
from pathlib import Path

import keras
import numpy as np
import pytest

from predcalc.data.protocol import reference_protocol
from predcalc.layers import ReferenceGRUCell, ReferenceLSTMCell
from predcalc.models.registry import RENAMED_MODELS, get_spec

ROOT = Path(__file__).resolve().parents[1]
OLD_CLASSES = {"ReferenceLSTMCell": "SeedLSTMCell", "ReferenceGRUCell": "SeedGRUCell"}  # old name (issue 43)


def _model(cell):
    inputs = keras.Input((5, 3))
    outputs = keras.layers.Dense(1)(keras.layers.RNN(cell)(inputs))
    return keras.Model(inputs, outputs)


def _config(path) -> str:
    with zipfile.ZipFile(path) as archive:
        return archive.read("config.json").decode()


def _with_config(path, target, config: str):
    """A copy of the ``.keras`` file ``path`` at ``target`` whose config.json is ``config``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(buffer, "w") as copy:
        for item in source.infolist():
            copy.writestr(item, config if item.filename == "config.json" else source.read(item.filename))
    Path(target).write_bytes(buffer.getvalue())


@pytest.mark.parametrize("cell", [ReferenceLSTMCell, ReferenceGRUCell], ids=lambda c: c.__name__)
def test_a_new_save_names_the_reference_cells_and_an_old_file_loads_under_them(tmp_path, cell):
    model = _model(cell(4))
    x = np.random.default_rng(0).normal(size=(7, 5, 3)).astype("float32")
    model.save(tmp_path / "new.keras")
    config = _config(tmp_path / "new.keras")
    new, old = cell.__name__, OLD_CLASSES[cell.__name__]
    assert f"predcalc>{new}" in config and "Seed" not in config

    _with_config(tmp_path / "new.keras", tmp_path / "old.keras", config.replace(new, old))
    assert f"predcalc>{old}" in _config(tmp_path / "old.keras")
    loaded = keras.saving.load_model(tmp_path / "old.keras")
    assert type(loaded.layers[1].cell) is cell
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=0, atol=1e-6)


def test_the_former_model_names_resolve_to_the_renamed_models():
    for old, new in RENAMED_MODELS.items():
        assert get_spec(old) is get_spec(new) and get_spec(new).name == new


def _renamed_stored_files():
    """Every stored ``model.keras`` under reports/ whose path or config names a renamed model or class."""
    names = set(RENAMED_MODELS.values()) | {"fnn2_reference_weights"}
    found = []
    for path in sorted((ROOT / "reports").rglob("model.keras")):
        config = _config(path)
        if path.parent.name in names or any(f"predcalc>{c}" in config for c in [*OLD_CLASSES, *OLD_CLASSES.values()]):
            found.append(path)
    return found


@pytest.mark.slow
def test_every_stored_keras_file_of_a_renamed_model_loads_and_scores_as_its_record():
    from predcalc.training.experiment import Results

    files = _renamed_stored_files()
    assert len(files) >= 3, files
    protocol = reference_protocol(0)
    for path in files:
        run = path.parents[2]
        name = path.parent.name
        stored = Results.from_stored(run, protocol, names=[name]).models[name]
        first = json.loads((run / "metrics.json").read_text())["models"][name]["runs"][0]["metrics"]
        for test_set, values in stored.predictions.items():
            if test_set not in first:
                continue
            truth = np.asarray(protocol.test_sets()[test_set].values, dtype=float)
            mae = float(np.mean(np.abs(np.asarray(values, dtype=float).ravel() - truth)))
            assert mae == pytest.approx(first[test_set]["mae"], rel=1e-4, abs=1e-5), (path, test_set)
