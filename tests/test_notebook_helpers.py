"""The notebook helpers of 06 (transformer) and 07 (Gemma LoRA) that need no trained model."""

import types

import matplotlib
import numpy as np

from predcalc.data import NumericTokenizer, reference_protocol
from predcalc.llm import finetune as llm
from predcalc.models.token_heads import PLAIN, REVERSED
from predcalc.notebooks import transformer_steps as notes

matplotlib.use("Agg")


def test_unseen_share_counts_new_slot_tokens():
    assert notes.unseen_share(PLAIN, np.array([1, 2, 3]), np.array([1, 2])) == 0.0
    assert notes.unseen_share(PLAIN, np.array([1, 2, 3]), np.array([1, 12])) == 0.5  # "12" needs slot 3
    assert notes.unseen_share(REVERSED, np.array([5, -7]), np.array([-5])) == 0.0
    shares = notes.unseen_shares(reference_protocol(0))
    assert set(shares) == {"plain", "reversed"} and shares["plain"]["in"] == 0.0
    assert shares["plain"]["out"] > 0


def test_token_labels_and_unparseable_table():
    tokenizer = NumericTokenizer()
    labels = notes.token_labels(tokenizer.encode("3 - -2 + 4"), tokenizer)
    assert labels[:6] == ["3", "-", "-2", "+", "4", "pad"] and len(labels) == tokenizer.length
    shares = notes.unparseable_table({"T": {"in": 0.0, "out": 0.125, "long": 0.5}})
    assert shares.iloc[0].tolist() == ["T", 0.0, 12.5, 50.0]


def test_llm_loss_figure():
    figure, axis = llm.plot_loss({"loss": [2.0, 1.0], "val_loss": [2.5, 1.5]}, "t")
    assert len(axis.lines) == 2


def test_shared_model_notebook_steps(tmp_path, capsys):
    import pandas as pd

    from predcalc.notebooks import steps

    assert steps.output_folder(tmp_path / "a" / "b").is_dir()
    protocol = reference_protocol(0)
    steps.show_protocol(protocol)
    out = capsys.readouterr().out
    assert f"     train: {protocol.counts()['train']:,}" in out
    assert f"{protocol.train.expressions[0]!r} = " in out
    spec = types.SimpleNamespace(label="M", shown_label="M")
    result = types.SimpleNamespace(
        spec=spec, runs=[{"train_seconds": 4.0, "epochs": 2}, {"train_seconds": 6.0, "epochs": 2}]
    )
    results = types.SimpleNamespace(
        models={"m": result}, exports={"m": {"float32": {"max_abs_diff": 1e-7}, "int8": {"error": "no"}}}
    )
    assert steps.seconds_per_epoch(results) == {"m": 2.5}
    table = pd.DataFrame(
        [
            {
                "model": "M",
                "source": "this run",
                "params": 1200,
                "MAE in": 0.1,
                "MAE out": 2.0,
                "MAE long": 3.0,
                "acc in": 0.5,
                "acc out": 0.25,
                "acc long": 0.0,
            },
            {
                "model": "M",
                "source": "published",
                "params": 1,
                "MAE in": 9,
                "MAE out": 9,
                "MAE long": 9,
                "acc in": 0,
                "acc out": 0,
                "acc long": 0,
            },
        ]
    )
    rows = steps.ours(table)
    assert len(rows) == 1
    assert steps.row_texts(rows.loc["M"])["acc_out"] == "25.0\u00a0%"
    assert steps.failed_exports(results, "m") == ["int8"] and steps.failed_exports(results, "other") == []


def _fake_results(protocol):
    """Two 'models' whose predictions are the rule itself and the rule plus one."""
    sets = protocol.test_sets()
    models = {}
    for name, shift in (("exact", 0.0), ("off", 1.0)):
        spec = types.SimpleNamespace(label=name.upper(), shown_label=name.upper(), reference_row=None)
        first = types.SimpleNamespace(params=10)
        predictions = {k: split.values.astype(float) + shift for k, split in sets.items()}
        models[name] = types.SimpleNamespace(
            spec=spec, first=first, predictions=predictions, runs=[{"train_seconds": 3.0, "epochs": 3}]
        )
    return types.SimpleNamespace(models=models, exports={})


def test_term_weights_speed_and_summary(capsys, tmp_path):
    import json

    import pandas as pd

    from predcalc.notebooks import steps

    protocol = reference_protocol(0)
    results = _fake_results(protocol)
    steps.show_speed(results)
    assert "EXACT: 1.00 s per epoch, 3 epochs" in capsys.readouterr().out
    weights = steps.show_term_weights(results, protocol)
    assert list(weights.columns[:2]) == ["model", "test set"] and len(weights) == 4
    exact_in = weights[(weights.model == "EXACT") & (weights["test set"] == "in")].iloc[0]
    np.testing.assert_allclose([exact_in["w1"], exact_in["w2"], exact_in["w3"], exact_in["b"]], [1, 1, 1, 0], atol=1e-6)
    table = pd.DataFrame(
        [
            {
                "model": "EXACT",
                "source": "this run",
                "params": 10,
                "MAE in": 0.5,
                "MAE out": 1.0,
                "MAE long": 2.0,
                "acc in": 1.0,
                "acc out": 1.0,
                "acc long": 1.0,
            }
        ]
    )
    assert steps.term_weight_texts(weights, "EXACT") == {
        "weights_in": "1.00, 1.00, 1.00",
        "weights_long4": "1.00, 1.00, 1.00, 1.00",
    }
    assert steps.row_texts(table.iloc[0])["out_ratio"] == "2"
    figure = steps.plot_accuracy_by_length(results, protocol)
    exact, off = figure.axes[0].lines[:2]
    assert [exact.get_label(), off.get_label()] == ["EXACT", "OFF"]
    assert list(exact.get_ydata()) == [100.0] * 7 and exact.get_marker() != off.get_marker()
    assert exact.get_xdata()[0] < 2 < off.get_xdata()[0]  # side by side, not one over the other
    assert exact.get_zorder() > off.get_zorder()  # the headline on top
    path = steps.write_study(tmp_path, "99_x", protocol, {"a": 1}, study={"k": 2})
    record = json.loads(path.read_text())
    assert record["kind"] == "study" and record["study"] == {"k": 2} and record["data"]["seed"] == 0


def test_parallel_vs_loop_step_times_both_paths(monkeypatch):
    import keras

    from predcalc.studies.speed import parallel_vs_loop_step
    from predcalc.training import fit

    built = []

    def fake_build(name, parallel):
        built.append((name, parallel))
        return None, keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)]), None

    monkeypatch.setattr(fit, "build", fake_build)
    x, y = np.ones((4, 3), "float32"), np.zeros(4, "float32")
    medians = parallel_vs_loop_step("mamba", x, y, repeats=2)
    assert built == [("mamba", True), ("mamba", False)]
    assert set(medians) == {True, False} and all(s > 0 for s in medians.values())


def test_reference_recipe_lines_score_the_reference_way_beside_the_published_row():
    from predcalc.report.findings import baseline_runs, load_runs

    stored = next(r for r in load_runs() if r.notebook == "06_transformer").models["transformer4_reference"]
    spec = types.SimpleNamespace(reference_row=stored.reference_row)
    runs = [run.to_json() for run in stored.runs]  # as a notebook's results hold them
    results = types.SimpleNamespace(models={"transformer4_reference": types.SimpleNamespace(runs=runs, spec=spec)})
    lines = notes.reference_recipe_lines(results, baseline_runs(load_runs()), 40)
    assert len(lines) == 2
    assert lines[0].startswith(f"transformer4_reference ({len(stored.runs)} seed(s), 40 epochs at most): MAE in ")
    assert "prior report: MAE in " in lines[1] and lines[1].startswith(" " * len("transformer4_reference"))
    assert notes.reference_recipe_lines(results, None, 40) == []
    assert notes.reference_recipe_lines(types.SimpleNamespace(models={}), baseline_runs(load_runs()), 40) == []


def test_the_conclusion_table_sets_each_model_beside_the_prior_reports_row_and_names_kept_runs():
    import pandas as pd

    row = {
        "params": 38209,
        "MAE in": 0.0389,
        "MAE out": 4.642,
        "MAE long": 3.915,
        "acc in": 0.9993,
        "acc out": 0.0722,
        "acc long": 0.1826,
    }
    table = pd.DataFrame(
        [
            {"model": "t4 seed recipe", "source": "06_transformer", **row},
            {"model": "t4", "source": "06_transformer", **row, "acc out": 0.1},
            {"model": "tokens", "source": "06_transformer", **row, "acc out": 0.2},
            {"model": "transformer4 (encoder, regression)", "source": "published", **row},
        ]
    )
    runs = [{"metrics": {t: {"unparseable": 1, "n": 4} for t in ("in", "out", "long")}}] * 2
    record = {
        "parameters": {"epochs": 200},
        "models": {
            "transformer4_reference": {
                "label": "t4 seed recipe",
                "reference_row": "transformer4 (encoder, regression)",
                "runs": runs,
            },
            "transformer4": {
                "label": "t4",
                "reference_row": "transformer4 (encoder, regression)",
                "runs": runs,
                "kept_from": {"created": "2026-11-23T17:59:09+00:00", "parameters": {"epochs": 150}},
            },
            "transformer_tokens": {"label": "tokens", "reference_row": None, "runs": runs},
        },
    }
    frame = notes.conclusion_table(table, record).set_index("model")
    assert frame.index.tolist() == ["transformer4", "transformer4_reference", "transformer_tokens"]
    kept, fresh, tokens = (frame.loc[name] for name in frame.index)
    assert kept["run"] == "kept from 2026-11-23" and kept["epochs at most"] == 150 and kept["seeds"] == 2
    assert fresh["run"] == "this run" and fresh["epochs at most"] == 200
    assert fresh["params"] == fresh["prior report params"] == 38209
    assert fresh["MAE in"] == 0.0389 and fresh["prior report MAE in"] == 0.0393
    assert fresh["prior report MAE long"] == 3.886  # the prior report's transformer4 long MAE is an absolute error
    assert tokens["unparseable out %"] == 25.0 and pd.isna(tokens["prior report params"])
    assert notes.best_token_head(table, record) == "transformer_tokens"
    unseen = {"plain": {"out": 0.125}, "reversed": {"out": 0.0}}
    texts = notes.digit_texts(table, record, unseen, np.array([-14, 13]))
    assert texts["digits_verdict"] == "more" and texts["best_head_out"] == "20.0\u00a0%"  # t4: 10.0 %
    assert (texts["train_min"], texts["train_max"], texts["unseen_reversed"]) == ("-14", "13", "0.0\u00a0%")


def test_unparseable_shares_and_token_models_read_a_record():
    runs = [{"metrics": {t: {"unparseable": u, "n": 4} for t in ("in", "out", "long")}} for u in (0, 2)]
    models = {"transformer_tokens": {"label": "T", "runs": runs}, "transformer4": {"label": "R", "runs": runs}}
    assert notes.token_models(models) == ["transformer_tokens"]
    assert notes.unparseable_shares(models, ["transformer_tokens"]) == {"T": {"in": 0.25, "out": 0.25, "long": 0.25}}


def test_loss_plot_draws_a_panel_only_for_heads_the_run_trained():
    def result(label):
        history = {"loss": [2.0, 1.0], "val_loss": [2.5, 1.5]}
        return types.SimpleNamespace(
            spec=types.SimpleNamespace(label=label, shown_label=label), first=types.SimpleNamespace(history=history)
        )

    regression_only = types.SimpleNamespace(models={"t5": result("T5")})
    figure = notes.plot_losses(regression_only, [])
    assert [axis.get_title() for axis in figure.axes] == ["regression heads: MSE"]
    both = types.SimpleNamespace(models={"t5": result("T5"), "tok": result("TOK")})
    figure = notes.plot_losses(both, ["tok"])
    assert [axis.get_title() for axis in figure.axes] == [
        "regression heads: MSE",
        "token heads: cross-entropy per slot",
    ]
    assert [len(axis.lines) for axis in figure.axes] == [2, 2]
    legend = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert legend == ["T5", "train", "validation"]  # each model once, then the two line styles
    assert figure.axes[0].get_legend().get_bbox_to_anchor().y0 < figure.axes[0].bbox.y0  # below the curves


def test_long_by_terms_gives_each_models_mae_per_count():
    from predcalc.data.protocol import make_split

    split = make_split("long", ["1 + 2", "3 - 1", "1 + 2 + 3", "1 + 1 + 1 + 1"])
    spec = types.SimpleNamespace(label="M")
    result = types.SimpleNamespace(spec=spec, predictions={"long": np.array([3.0, 1.0, 6.0, 0.0])})
    table = notes.long_by_terms(types.SimpleNamespace(models={"m": result}), split)
    assert list(table.columns) == ["model", "2 terms", "3 terms", "4 terms"]
    assert table.iloc[0].tolist() == ["M", 0.5, 0.0, 4.0]
