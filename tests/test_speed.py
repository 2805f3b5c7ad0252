import numpy as np
import pytest

from predcalc.studies import speed


def test_interleaved_timings_rotates_order_and_counts_repeats():
    calls = []
    candidates = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    times = speed.interleaved_timings(candidates, repeats=3, warmup=1)
    assert calls[:3] == ["a", "b", "c"]  # warm-up, once each
    assert calls[3:] == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]  # rotating start
    assert {k: len(v) for k, v in times.items()} == {"a": 3, "b": 3, "c": 3}
    assert all(t >= 0 for v in times.values() for t in v)


def test_medians_and_errors():
    assert speed.medians({"x": [3.0, 1.0, 2.0], "y": [4.0, 1.0]}) == {"x": 2.0, "y": 2.5}
    with pytest.raises(ValueError, match="repeats=0"):
        speed.interleaved_timings({"a": lambda: None}, repeats=0)
    with pytest.raises(ValueError, match="at least one callable"):
        speed.interleaved_timings({})


def test_peak_memory_sees_a_numpy_allocation():
    small = speed.peak_memory(lambda: None)
    large = speed.peak_memory(lambda: np.ones(2_000_000))  # 16 MB through Python's allocator
    assert large["tracemalloc_peak"] >= 16_000_000 > small["tracemalloc_peak"]
    assert set(large) == {"tracemalloc_peak", "rss_peak_growth"} and large["rss_peak_growth"] >= 0


def test_speedups_are_ratios_of_medians():
    records = [
        {"length": 64, "kind": k, "train_step": s, "inference": s / 2}
        for k, s in [
            ("keras_gru", 8.0),
            ("min_gru_parallel", 2.0),
            ("min_gru_scan", 16.0),
            ("min_gru_step", 4.0),
            ("keras_lstm", 9.0),
            ("min_lstm_parallel", 3.0),
            ("min_lstm_step", 1.0),
        ]
    ]
    rows = speed.speedups(records)
    assert rows == [
        {
            "length": 64,
            "family": "min_gru",
            "phase": "train_step",
            "parallel_vs_keras": 4.0,
            "scan_vs_keras": 0.5,
            "step_vs_keras": 2.0,
            "parallel_vs_step": 2.0,
        },
        {
            "length": 64,
            "family": "min_lstm",
            "phase": "train_step",
            "parallel_vs_keras": 3.0,
            "scan_vs_keras": None,
            "step_vs_keras": 9.0,
            "parallel_vs_step": 1 / 3,
        },
    ]
    assert speed.speedups(records, "inference")[0]["parallel_vs_keras"] == 4.0
    with pytest.raises(ValueError, match="phase='backward'"):
        speed.speedups(records, "backward")


@pytest.mark.slow
def test_build_layer_and_tiny_profile():
    with pytest.raises(ValueError, match="kind='min_rnn'"):
        speed.build_layer("min_rnn", 4)
    assert not speed.build_layer("min_lstm_step", 4).parallel
    assert speed.build_layer("min_gru_scan", 4).layers[0].return_sequences  # the whole sequence, then its last step
    records = speed.profile(
        lengths=[3],
        kinds=["keras_gru", "min_gru_parallel", "min_gru_scan"],
        repeats=2,
        warmup=1,
        batch=2,
        units=2,
        features=1,
        memory=False,
    )
    assert [(r["length"], r["kind"]) for r in records] == [
        (3, "keras_gru"),
        (3, "min_gru_parallel"),
        (3, "min_gru_scan"),
    ]
    assert all(len(r["train_step_times"]) == 2 and r["train_step"] > 0 and r["inference"] > 0 for r in records)


def test_speed_figure_keeps_every_legend_off_the_panels(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    records = [
        {"length": length, "kind": kind, "train_step": 1e-3 * length / (1 + i), "inference": 5e-4 * length / (1 + i)}
        for length in (64, 512, 4096)
        for i, kind in enumerate(speed.KINDS)
    ]
    figure = speed.plot_speed(records, batch=8, units=32, path=tmp_path / "speed.png")
    assert (tmp_path / "speed.png").stat().st_size > 0
    figure.canvas.draw()
    axes = figure.get_axes()
    assert len(axes) == 3 and all(axis.get_legend() is None for axis in axes)
    legends = [legend for sub in figure.subfigs for legend in sub.legends]
    assert [len(legend.get_texts()) for legend in legends] == [len(speed.KINDS), 6]
    assert any("paper, T4 GPU (175x @ 512" in text.get_text() for text in legends[1].get_texts())
    for legend, axis in zip(legends, (axes[0], axes[2])):  # each legend under its panels
        assert legend.get_window_extent().y1 <= axis.get_window_extent().y0
