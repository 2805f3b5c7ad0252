"""predcalc.paths: repository-relative paths and writes that skip identical bytes."""

import json
import os

from predcalc import paths


def test_relative_inside_and_outside_the_repository(tmp_path):
    assert paths.relative(paths.RUNS / "01_fnn") == "reports/runs/01_fnn"
    assert paths.relative(tmp_path / "x") == str(tmp_path / "x")


def test_write_if_changed_skips_equal_bytes(tmp_path):
    path = tmp_path / "a.json"
    assert paths.write_if_changed(path, "{}") is True
    os.utime(path, (1, 1))
    assert paths.write_if_changed(path, "{}") is False
    assert path.stat().st_mtime == 1
    assert paths.write_if_changed(path, b"{ }") is True
    assert path.read_text() == "{ }"


def test_save_figure_writes_once(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    path = tmp_path / "f.png"
    assert paths.save_figure(figure, path) is True
    assert paths.save_figure(figure, path) is False
    plt.close(figure)


def test_figures_are_stored_as_palette_pngs_that_look_the_same(tmp_path):
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import nbformat
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    figure, ax = plt.subplots()
    ax.scatter(rng.normal(size=500), rng.normal(size=500), s=4, alpha=0.4)
    ax.set_title("a plot with blended points")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    raw = buffer.getvalue()
    compact = paths.compact_png(raw)
    assert len(compact) < 0.6 * len(raw)
    before = np.asarray(Image.open(io.BytesIO(raw)).convert("RGB"), float)
    after = np.asarray(Image.open(io.BytesIO(compact)).convert("RGB"), float)
    assert before.shape == after.shape and np.abs(before - after).mean() < 2  # of 255
    assert paths.compact_png(compact) is compact  # already a palette: left alone
    paths.save_figure(figure, tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes() == compact
    plt.close(figure)

    import base64

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "plot()",
            outputs=[
                nbformat.v4.new_output(
                    "display_data", data={"image/png": base64.b64encode(raw).decode(), "text/plain": "<Figure>"}
                )
            ],
        )
    ]
    path = tmp_path / "n.ipynb"
    nbformat.write(notebook, path)
    assert paths.compact_notebook_images(path) is True
    assert paths.compact_notebook_images(path) is False
    stored = nbformat.read(path, as_version=4).cells[0].outputs[0].data["image/png"]
    assert base64.b64decode(stored) == compact


def test_a_record_that_changes_only_its_times_is_not_rewritten(tmp_path):
    path = tmp_path / "metrics.json"
    record = {"created": "2026-01-01T00:00:00+00:00", "models": {"fnn2": {"mae": 0.5, "train_seconds": 3.0}}}
    assert paths.write_json_if_changed(path, record) is True
    os.utime(path, (1, 1))
    rerun = {"created": "2026-02-02T00:00:00+00:00", "models": {"fnn2": {"mae": 0.5, "train_seconds": 4.2}}}
    assert paths.write_json_if_changed(path, rerun) is False
    assert path.stat().st_mtime == 1 and "2026-01-01" in path.read_text()
    changed = {**rerun, "models": {"fnn2": {"mae": 0.49, "train_seconds": 4.2}}}
    assert paths.write_json_if_changed(path, changed) is True
    assert '"mae": 0.49' in path.read_text()
    assert paths.write_json_if_changed(path, {**changed, "note": float("nan")}) is True  # NaN compares as NaN
    assert paths.write_json_if_changed(path, {**changed, "note": float("nan")}) is False


def test_a_keras_file_of_the_same_model_is_not_rewritten(tmp_path):
    import keras
    import numpy as np

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    path = tmp_path / "model.keras"
    assert paths.save_keras_if_changed(model, path) is True
    first = path.read_bytes()
    os.utime(path, (1, 1))
    assert paths.save_keras_if_changed(model, path) is False  # a new save date alone is no change
    assert path.read_bytes() == first and path.stat().st_mtime == 1
    digest = paths.keras_digest(path)
    model.save(tmp_path / "again.keras")
    assert paths.keras_digest(tmp_path / "again.keras") == digest
    model.layers[0].bias.assign(np.ones(2, "float32"))
    assert paths.save_keras_if_changed(model, path) is True
    assert paths.keras_digest(path) != digest
    assert not list(tmp_path.glob(".*"))  # no temporary file left behind


def _notebook(stdout, started):
    cell = {
        "cell_type": "code",
        "execution_count": 1,
        "id": "a",
        "source": ["print(1)"],
        "metadata": {"papermill": {"start_time": started}},
        "outputs": [{"name": "stdout", "output_type": "stream", "text": [stdout]}],
    }
    return json.dumps(
        {"cells": [cell], "metadata": {"papermill": {"start_time": started}}, "nbformat": 4, "nbformat_minor": 5}
    )


def test_keep_unchanged_puts_back_files_whose_results_did_not_change(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    for folder, started, mae, rate in ((old, "10:00", 0.5, "3.1"), (new, "11:00", 0.5, "2.7")):
        folder.mkdir()
        (folder / "metrics.json").write_text(json.dumps({"created": started, "mae": mae}))
        (folder / "run.ipynb").write_text(
            _notebook(f"fit: 100%| 5/5 [00:0{rate[0]}<00:00, {rate} it/s]\nMAE 0.5", started)
        )
        (folder / "figure.png").write_bytes(b"png" + started.encode())
    (new / "only_new.json").write_text("{}")
    assert paths.keep_unchanged(new, old) == ["metrics.json", "run.ipynb"]
    assert (new / "metrics.json").read_text() == (old / "metrics.json").read_text()
    assert (new / "run.ipynb").read_text() == (old / "run.ipynb").read_text()
    assert (new / "figure.png").read_bytes() == b"png11:00"  # other bytes: a new figure
    (new / "run.ipynb").write_text(_notebook("MAE 0.4", "12:00"))
    assert not paths.same_results(new / "run.ipynb", old / "run.ipynb")  # a number changed
