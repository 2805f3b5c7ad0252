"""The findings' summary figure (predcalc.report.reach): the box named truly, development and held-out
sets told apart, models at the same value kept apart."""

import matplotlib
import matplotlib.colors as mcolors
import pandas as pd

from predcalc.report import reach

matplotlib.use("Agg")

PROTOCOL = [("digits", 1, "|n| <= 5", "in"), ("digits", 1.5, "|n| 5..8", "out"), ("terms", 3, "3", "in")]
HELDOUT = [("digits", 2, "2 digits"), ("terms", 40, "40")]


def frame():
    rows = []
    for model, accuracy in (("exact_a", 1.0), ("exact_b", 1.0), ("weak", 0.3)):
        for axis, distance, label, _ in PROTOCOL:
            rows.append(dict(model=model, axis=axis, distance=distance, label=label, source="protocol", mean=accuracy))
        if model != "weak":
            for axis, distance, label in HELDOUT:
                rows.append(dict(model=model, axis=axis, distance=distance, label=label, source="heldout", mean=1.0))
    table = pd.DataFrame(rows)
    return table.assign(min=table["mean"], max=table["mean"])


def test_reach_figure_names_the_box_and_marks_held_out_sets_apart():
    figure = reach.draw_reach(frame())
    digits, terms = figure.axes[:2]
    ticks = [t.get_text() for t in digits.get_xticklabels()]
    assert ticks == ["-5..4\n(training box)", "-8..-5, 5..8", "2 digits"]
    assert [t.get_text() for t in terms.get_xticklabels()][0] == "3\n(training box)"
    assert "|n| <= 5" not in " ".join(ticks) + digits.get_title() + terms.get_title()

    white = mcolors.to_rgba("white")
    for axis in (digits, terms):
        (boundary,) = [line.get_xdata()[0] for line in axis.lines if line.get_gid() == "boundary"]
        markers = [line for line in axis.lines if line.get_gid() in reach.SOURCES and len(line.get_xdata())]
        assert {line.get_gid() for line in markers} == {"protocol", "heldout"}
        for line in markers:
            held_out = line.get_gid() == "heldout"
            assert (mcolors.to_rgba(line.get_markerfacecolor()) == white) == held_out  # open: held-out
            assert all((x > boundary) == held_out for x in line.get_xdata())  # right of the line: held-out
        joining = [
            line for line in axis.lines if line.get_gid() is None and line.get_linestyle() not in ("None", "none")
        ]
        assert joining and all(len({x > boundary for x in line.get_xdata()}) == 1 for line in joining)  # not joined
    legend = figure.legends[0]
    assert "development" in legend.get_title().get_text() and "held-out" in legend.get_title().get_text()


def test_models_at_the_same_value_stay_apart():
    figure = reach.draw_reach(frame())
    lines = {line.get_label(): line for line in figure.axes[0].lines if line.get_label() in ("exact_a", "exact_b")}
    a, b = lines["exact_a"], lines["exact_b"]
    assert list(a.get_ydata()) == list(b.get_ydata())  # the same values...
    assert min(abs(x - y) for x, y in zip(a.get_xdata(), b.get_xdata())) >= reach.OFFSET  # ...side by side
    assert a.get_linestyle() != b.get_linestyle() and a.get_marker() != b.get_marker()
    assert a.get_linewidth() > b.get_linewidth()  # the later line drawn over the earlier leaves it visible


def test_plot_reach_writes_the_png(tmp_path):
    path = reach.plot_reach(frame(), tmp_path / "figures" / "reach.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _fake_findings():
    """Two LSTM-family models (the one with the lower validation loss has the lower accuracy), the typed scan
    with its two finishes, the trained exact scan's record and a calculator record."""
    from types import SimpleNamespace

    from predcalc.record import ModelRecord

    def model(accuracy, val_loss):
        metrics = {t: {"accuracy": accuracy, "mae": 0.1} for t in ("in", "out", "long")}
        runs = [{"seed": s, "best_val_loss": val_loss, "metrics": metrics} for s in range(2)]
        return ModelRecord.from_json({"label": "m", "params": 10, "runs": runs}, "test")

    def stored(entries):  # a stored record as the report reads it: its entries and its JSON form
        return SimpleNamespace(entries=entries, to_json=lambda: entries)

    models = {
        "lstm": model(0.2, 0.01),
        "gru": model(0.9, 0.5),
        "scan_typed": model(1.0, 0.001),
        "scan_typed_solved": model(1.0, 0.001),
        "scan_typed_readout_solved": model(1.0, 0.001),
    }
    families = ["digits_1"]
    extended = {
        "extended": {
            "families": families,
            "models": {
                "scan_typed_solved": {"runs": [{"metrics": {"digits_1": {"accuracy": 0.9}}}]},
                "scan_typed_readout_solved": {"runs": [{"metrics": {"digits_1": {"accuracy": 0.5}}}]},
            },
        }
    }
    seeds = {s: {"scores": {"in": 1.0, "out": 1.0, "long": 1.0}, "weights": {"w": [1.0]}} for s in ("0", "1")}
    sets = {"digits_6": "3 numbers of 6 digits", "terms_300": "300 numbers"}
    exact = {
        "seeds": seeds,
        "data": {"heldout": {"sets": sets, "seed": 5151}},
        "heldout": {"onnx": {s: {n: 1.0 for n in sets} for s in seeds}},
        "ablation": {},
        "float32_bound": {"bound": 2**24},
    }
    score = {"mean": 0.5, "min": 0.4, "max": 0.6}
    return SimpleNamespace(
        models={name: ({}, m) for name, m in models.items()},
        notebooks=[stored(extended), stored(exact)],
        edges={"heldout": {"scan_typed": {"digits_exactly_3": score}, "gru": {"digits_exactly_3": score}}},
        accuracy=lambda name, test_set: [r.metrics[test_set]["accuracy"] for r in models[name].runs],
        study=lambda kind: (
            [stored({"held_out": {"families": {"iid": {"mean": 1.0, "min": 1.0, "seeds": 5}}}})]
            if kind == "calculator"
            else []
        ),
    )


def test_the_figure_draws_the_answers_models_the_trained_exact_scan_and_not_the_calculator():
    frame = reach.reach_frame(_fake_findings())
    models = list(dict.fromkeys(frame["model"]))
    # chosen as in the Answer: the lower validation loss (not the higher accuracy shown), the finish best on
    # the extended suite, and the trained exact scan with its own held-out suite
    assert models == ["lstm", "scan_typed", "scan_typed_solved", "scan_exact"]
    exact = frame[frame["model"] == "scan_exact"]
    assert set(exact.loc[exact["source"] == "heldout", "label"]) == {"6 digits", "300"}
    assert len(exact[exact["source"] == "protocol"]) == 4
    caption = reach.reach_caption(frame, 5)
    assert "its own held-out suite" in caption and "calculator is not drawn" in caption
    assert "not joined" in caption and "retrained copies" not in caption
    shifted = reach.reach_caption(frame, 5, {"name": "typed scan", "set": "terms_40", "points": 0.23})
    assert "retrained copies of the stored seeds (retraining moved one seed of the typed scan by 23.0 points" in shifted
