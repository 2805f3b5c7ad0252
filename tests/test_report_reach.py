"""The findings' summary figure (predcalc.report.reach): the box named truly, development and held-out
sets told apart, models at the same value kept apart."""

import matplotlib
import matplotlib.colors as mcolors
import numpy as np
import pandas as pd

from predcalc.report import reach

matplotlib.use("Agg")


def frame():
    rows = []
    for model, accuracy in (("exact_a", 1.0), ("exact_b", 1.0), ("weak", 0.3)):
        for k, (set_name, label) in enumerate(reach.PROTOCOL_POINTS):
            rows.append(dict(model=model, panel="development", set=set_name, label=label, order=k, mean=accuracy))
        if model != "weak":
            for k, set_name in enumerate(("digits_3", "terms_40", "terms_300")):
                read = set_name != "terms_300" or model == "exact_a"  # exact_b's files cannot read 300 terms
                rows.append(
                    dict(
                        model=model, panel="heldout", set=set_name, label=set_name, order=k, mean=1.0 if read else None
                    )
                )
                rows[-1]["read"] = read
    table = pd.DataFrame(rows)
    table["read"] = table["read"].fillna(True).astype(bool)
    table["source"] = table["panel"].map({"development": "protocol", "heldout": "heldout"})
    return table.assign(min=table["mean"], max=table["mean"], seeds=5, scored_in="files")


def test_reach_figure_has_a_development_panel_and_a_held_out_panel():
    figure = reach.draw_reach(frame())
    development, held = figure.axes[:2]
    assert development.get_title().startswith("development") and "held-out suite 5151" in held.get_title()
    ticks = [t.get_text() for t in development.get_xticklabels()]
    assert len(ticks) == 3 and "(training box)" in ticks[0] and "-5..4" in ticks[0]
    assert [t.get_text() for t in held.get_xticklabels()] == ["digits_3", "terms_40", "terms_300"]

    white = mcolors.to_rgba("white")
    for axis, gid in ((development, "protocol"), (held, "heldout")):
        markers = [line for line in axis.lines if line.get_gid() in reach.SOURCES and len(line.get_xdata())]
        assert {line.get_gid() for line in markers} == {gid}  # each panel holds one kind of set
        for line in markers:  # open markers: held out
            assert (mcolors.to_rgba(line.get_markerfacecolor()) == white) == (gid == "heldout")
    drawn = {
        line.get_label(): int(np.isfinite(np.asarray(line.get_ydata(), float)).sum())
        for line in held.lines
        if line.get_label() in ("exact_a", "exact_b")
    }
    assert drawn == {"exact_a": 3, "exact_b": 2}  # a set the files cannot read is not drawn (not a 0)
    legend = figure.legends[0]
    assert "development" in legend.get_title().get_text() and "held-out" in legend.get_title().get_text()
    assert [t.get_text() for t in legend.get_texts()] == ["exact_a", "exact_b", "weak"]


def test_models_at_the_same_value_stay_apart():
    figure = reach.draw_reach(frame())
    lines = {line.get_label(): line for line in figure.axes[0].lines if line.get_label() in ("exact_a", "exact_b")}
    a, b = lines["exact_a"], lines["exact_b"]
    assert list(a.get_ydata()) == list(b.get_ydata())  # the same values...
    assert min(abs(x - y) for x, y in zip(a.get_xdata(), b.get_xdata())) >= reach.OFFSET  # ...side by side
    assert a.get_marker() != b.get_marker()
    assert a.get_linestyle() == b.get_linestyle() == "None"  # points, not lines: the sets are kinds, not a scale


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
    read = {"accuracy": 0.5}
    unread = {"too_long": "needs 599 tokens; the files read 159"}
    third = {
        "suite": {"seed": 5151},
        "models": {
            name: {s: {"digits_3": read, "terms_300": unread} for s in ("0", "1")} for name in ("scan_typed", "gru")
        },
    }
    return SimpleNamespace(
        models={name: ({}, m) for name, m in models.items()},
        notebooks=[stored(extended), stored(exact)],
        edges={"third_heldout_record": third},
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
    # the extended suite, and the trained exact scan, all on the one held-out suite
    assert models == ["lstm", "scan_typed", "scan_typed_solved", "scan_exact"]
    exact = frame[frame["model"] == "scan_exact"]
    assert set(exact.loc[exact["read"] & (exact["source"] == "heldout"), "set"]) == {"digits_6", "terms_300"}
    assert len(exact[exact["source"] == "protocol"]) == 3
    typed = frame[(frame["model"] == "scan_typed") & (frame["source"] == "heldout")].set_index("set")
    assert typed.loc["digits_3", "mean"] == 0.5 and not typed.loc["terms_300", "read"]  # not read, not 0
