"""predcalc.paths: repository-relative paths and writes that skip identical bytes."""

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
    notebook.cells = [nbformat.v4.new_code_cell("plot()", outputs=[nbformat.v4.new_output(
        "display_data", data={"image/png": base64.b64encode(raw).decode(), "text/plain": "<Figure>"})])]
    path = tmp_path / "n.ipynb"
    nbformat.write(notebook, path)
    assert paths.compact_notebook_images(path) is True
    assert paths.compact_notebook_images(path) is False
    stored = nbformat.read(path, as_version=4).cells[0].outputs[0].data["image/png"]
    assert base64.b64decode(stored) == compact
