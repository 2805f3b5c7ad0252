import json

from predcalc.report.recipe_ablation import (
    FULL_PEAK_SWEEP,
    PEAK_SWEEP,
    SWEEP,
    peak_probe_lines,
    peak_probe_table,
    recipe_ablation_lines,
    recipe_ablation_table,
)


def _runs(maes, accuracy=1.0):
    return [
        {"seed": s, "metrics": {k: {"mae": m, "accuracy": accuracy} for k in ("in", "out", "long")}}
        for s, m in enumerate(maes)
    ]


def _sweep_run(root, name, kwargs, seed, mae, error=None):
    folder = root / SWEEP / f"06_transformer__{name}"
    folder.mkdir(parents=True)
    parameters = {
        "models": ["transformer4_reference"],
        "model_kwargs": {"transformer4_reference": kwargs},
        "epochs": 200,
        "patience": 200,
        "seeds": [seed],
    }
    (folder / "run.json").write_text(json.dumps({"parameters": parameters, "error": error}))
    (folder / "metrics.json").write_text(json.dumps({"models": {"transformer4_reference": {"runs": _runs([mae])}}}))


def test_one_row_per_undone_choice_beside_the_stored_runs(tmp_path):
    _sweep_run(tmp_path, "a", {"cls": False}, 0, 0.06)
    _sweep_run(tmp_path, "b", {"cls": False}, 1, 0.08)
    _sweep_run(tmp_path, "c", {"scale_embedding": False}, 0, 0.05)
    _sweep_run(tmp_path, "d", {"scale_embedding": False}, 1, 9.0, error="KeyboardInterrupt: stopped")  # not finished
    records = [
        {
            "notebook": "06_transformer",
            "parameters": {"epochs": 200, "patience": 200},
            "models": {
                "transformer4_reference": {"runs": _runs([0.03, 0.05])},
                "transformer4_gated": {"runs": _runs([0.02, 0.02])},
                "transformer4": {
                    "runs": _runs([0.1, 0.12], 0.99),
                    "kept_from": {"parameters": {"epochs": 200, "patience": 20}},
                },
            },
        },
        {
            "notebook": "06_transformer",
            "parameters": {"epochs": 200, "patience": 200},  # a seed-split sweep
            "models": {"transformer4_local": {"runs": _runs([0.003, 0.005])}},
        },
        {
            "notebook": "06_transformer",
            "parameters": {"epochs": 200, "patience": 200},
            "models": {"transformer4_local_bounded": {"runs": _runs([0.001, 0.002, 0.003])}},
        },
    ]
    table = recipe_ablation_table(records, tmp_path).set_index("variant")
    assert list(table.index) == [
        "every choice of the prior report's recipe",
        "gated value readout instead of the CLS token",
        "gated readout, local token features, padding masked",
        "as transformer4_local, the features of tanh(x_t)",
        "this project's transformer4 recipe",
        "mean pooling instead of the CLS token",
        "no sqrt(d_model) scale on the embedding",
    ]
    assert table.loc["every choice of the prior report's recipe", "MAE in"] == "0.04 [0.03-0.05]"
    assert table.loc["every choice of the prior report's recipe", "trained"] == "200 epochs, no early stopping"
    assert table.loc["gated value readout instead of the CLS token", "MAE out"] == "0.02 [0.02-0.02]"
    assert table.loc["gated readout, local token features, padding masked", "MAE long"] == "0.004 [0.003-0.005]"
    assert table.loc["as transformer4_local, the features of tanh(x_t)", "seeds"] == 3
    assert table.loc["this project's transformer4 recipe", "trained"] == "200 epochs, early stopping (patience 20)"
    assert table.loc["this project's transformer4 recipe", "exact in"] == "99.00 % (0/2 exact, 99.00-99.00)"
    assert table.loc["mean pooling instead of the CLS token", "MAE out"] == "0.07 [0.06-0.08]"
    assert table.loc["no sqrt(d_model) scale on the embedding", "seeds"] == 1  # the failed run is left out
    assert (
        recipe_ablation_lines(records, tmp_path)[0] == "## The prior report's transformer recipe: which choice matters"
    )


def test_nothing_without_the_sweep(tmp_path):
    assert recipe_ablation_table([], tmp_path).empty and recipe_ablation_lines([], tmp_path) == []


def _peak_run(root, name, peak, seed, val_loss, mae, error=None, sweep=PEAK_SWEEP, epochs=25):
    folder = root / sweep / f"06_transformer__{name}"
    folder.mkdir(parents=True)
    parameters = {
        "models": ["transformer5_reference"],
        "model_kwargs": {"transformer5_reference": {"peak_learning_rate": peak}},
        "epochs": epochs,
        "patience": epochs,
        "seeds": [seed],
    }
    (folder / "run.json").write_text(json.dumps({"parameters": parameters, "error": error}))
    runs = [{**run, "best_val_loss": val_loss} for run in _runs([mae])]
    (folder / "metrics.json").write_text(json.dumps({"models": {"transformer5_reference": {"runs": runs}}}))


def test_peak_probe_one_row_per_rate_and_names_the_best(tmp_path):
    _peak_run(tmp_path, "a", 1.42e-3, 0, 20.0, 3.8)
    _peak_run(tmp_path, "b", 1.42e-3, 1, 22.0, 3.6)
    _peak_run(tmp_path, "c", 2e-4, 0, 0.1, 0.25)
    _peak_run(tmp_path, "d", 2e-4, 1, 0.3, 0.35)
    _peak_run(tmp_path, "e", 5e-5, 0, 9.0, 1.0, error="KeyboardInterrupt: stopped")  # not finished
    table = peak_probe_table(tmp_path)
    assert list(table["peak learning rate"]) == ["0.00142", "0.0002"]
    assert list(table["best val MSE"]) == ["21 [20-22]", "0.2 [0.1-0.3]"]
    assert table.loc[1, "trained"] == "25 epochs, no early stopping" and table.loc[1, "MAE in"] == "0.3 [0.25-0.35]"
    lines = peak_probe_lines(tmp_path)
    assert lines[0] == "### transformer5_reference: the peak learning rate"
    assert "the lowest mean validation MSE is at a peak of 0.0002;" in lines[2]
    assert peak_probe_table(tmp_path / "none").empty and peak_probe_lines(tmp_path / "none") == []


def test_full_length_peaks_sit_below_the_probe_with_the_notebook_run(tmp_path):
    tmp = tmp_path
    _peak_run(tmp, "a", 2e-4, 0, 0.2, 0.3)
    _peak_run(tmp, "b", 5e-4, 0, 0.02, 0.05, sweep=FULL_PEAK_SWEEP, epochs=200)
    runs = [{**run, "best_val_loss": 0.01} for run in _runs([0.06, 0.08])]
    stored = {
        "notebook": "06_transformer",
        "parameters": {"epochs": 200, "patience": 200},
        "models": {"transformer5_reference": {"runs": runs}},
    }  # trained at the model's own peak, 2e-4
    table = peak_probe_table(tmp, [stored])
    assert list(zip(table["peak learning rate"], table["trained"], table["seeds"])) == [
        ("0.0002", "25 epochs, no early stopping", 1),
        ("0.0005", "200 epochs, no early stopping", 1),
        ("0.0002", "200 epochs, no early stopping", 2),
    ]
    text = peak_probe_lines(tmp, [stored])[-2]
    assert "the lowest mean in-range MAE is 0.05 at a peak of 0.0005 (1 seed)" in text
    assert "on seed 0, which every full-length peak has: 0.05 at 0.0005, 0.06 at 0.0002" in text
    assert text.endswith(
        "the prior report published 0.0366 (mean of 5 runs): within these peaks the rate does not close "
        "the in-range gap."
    )
