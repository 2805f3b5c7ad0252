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
