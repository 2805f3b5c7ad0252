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
