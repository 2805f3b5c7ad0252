"""The notebook helpers of 06 (transformer) and 07 (Gemma LoRA) that need no trained model."""

import types

import matplotlib
import numpy as np

from predcalc.data import NumericTokenizer, seed_protocol
from predcalc.models.token_heads import PLAIN, REVERSED
from predcalc.report import transformer_notebook as notes
from predcalc.studies import llm_steps

matplotlib.use("Agg")


def test_unseen_share_counts_new_slot_tokens():
    assert notes.unseen_share(PLAIN, np.array([1, 2, 3]), np.array([1, 2])) == 0.0
    assert notes.unseen_share(PLAIN, np.array([1, 2, 3]), np.array([1, 12])) == 0.5  # "12" needs slot 3
    assert notes.unseen_share(REVERSED, np.array([5, -7]), np.array([-5])) == 0.0
    shares = notes.unseen_shares(seed_protocol(0))
    assert set(shares) == {"plain", "reversed"} and shares["plain"]["in"] == 0.0
    assert shares["plain"]["out"] > 0


def test_token_labels_and_unparseable_markdown():
    tokenizer = NumericTokenizer()
    labels = notes.token_labels(tokenizer.encode("3 - -2 + 4"), tokenizer)
    assert labels[:6] == ["3", "-", "-2", "+", "4", "pad"] and len(labels) == tokenizer.length
    text = notes.unparseable_markdown({"T": {"in": 0.0, "out": 0.125, "long": 0.5}})
    assert "- T: in 0.0 %, out 12.5 %, long 50.0 %" in text


def test_llm_steps_markdown():
    evaluation = types.SimpleNamespace(examples=lambda name, correct, k: [
        {"expression": "1 + 2", "truth": 3, "generated": " 3", "answer": 3 if correct else None, "correct": correct}])
    table = llm_steps.examples_markdown(evaluation, ["in"])
    assert table.count("\n") == 3 and "| in | `1 + 2` | 3 | `' 3'` | 3 | yes |" in table
    exports = {"float32": {"bytes": 2048, "same_generation": {"in": 1.0}, "accuracy": {"in": 0.5}},
               "int8_dynamic": {"error": "RuntimeError: no"}, "not_exported": llm_steps.NOT_EXPORTED}
    text = llm_steps.exports_markdown(exports, ["in"])
    assert "| float32 | 2 | 100 % | 50.0 % |" in text and "failed: RuntimeError: no" in text
    assert text.endswith(llm_steps.NOT_EXPORTED + ".")
    entry = {"label": "tiny", "trainable_params": 10, "train_seconds": 2.0, "accuracy": {"in": 1, "out": 0.5, "long": 0},
             "unparseable": {"in": 0, "out": 1, "long": 2}}
    seed_rows = {n: {"accuracy_in": 0.9, "accuracy_out": 0.5, "accuracy_long": 0.3} for n in ("Gemma 3 1B", "Gemma 3 270M")}
    text = llm_steps.conclusion(entry, {"trainable_params": 20, "accuracy": entry["accuracy"]}, False, 4, 3, seed_rows)
    assert "100.00 % / 50.00 % / 0.00 %" in text and "unparseable answers 0 / 1 / 2" in text
    assert "20 weights" in text and "not a measurement of Gemma" in text
    figure, axis = llm_steps.plot_loss({"loss": [2.0, 1.0], "val_loss": [2.5, 1.5]}, "t")
    assert len(axis.lines) == 2
