"""The steps of notebook 07 (LoRA fine-tuning of Gemma) above ``predcalc.studies.llm``: the loss
figure, the control run, the LiteRT export with its agreement check, and the Markdown of the
examples, the exports and the conclusion."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from predcalc.studies import llm

SPLITS = ("in", "out", "long")
NOT_EXPORTED = (
    "generate() with its key/value cache (keras-hub 0.32 exports the logits function "
    "only; decoding runs in Python around the interpreter); TensorRT (not available "
    "on this machine: TensorFlow from PyPI is built without it)"
)


def plot_loss(history: dict, title: str):
    """Training and validation loss per epoch (log scale); returns ``(figure, axis)``."""

    figure, axis = plt.subplots(figsize=(6, 3.5))
    epochs_axis = np.arange(1, len(history["loss"]) + 1)
    axis.plot(epochs_axis, history["loss"], label="training")
    axis.plot(epochs_axis, history["val_loss"], label="validation")
    axis.set_xlabel("epoch")
    axis.set_ylabel("answer-token cross-entropy")
    axis.set_yscale("log")
    axis.set_title(title, fontsize=9)
    axis.legend()
    axis.grid(alpha=0.3)
    figure.tight_layout()
    return figure, axis


def examples_markdown(evaluation, names) -> str:
    """Three right and three wrong generations of each test set, as a Markdown table."""
    lines = ["| test set | expression | truth | generated | parsed | right |", "|---|---|---|---|---|---|"]
    for name in names:
        for correct in (True, False):
            for row in evaluation.examples(name, correct, k=3):
                lines.append(
                    f"| {name} | `{row['expression']}` | {row['truth']} | `{row['generated']!r}` | "
                    f"{row['answer']} | {'yes' if row['correct'] else 'no'} |"
                )
    return "\n".join(lines)


def full_finetune_control(
    protocol,
    test_sets: dict,
    *,
    architecture: str,
    seed: int,
    template: str,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    sequence_length,
    max_new_tokens: int,
):
    """The same tiny model with every weight trained; returns ``(record, tuning)``."""
    model, info = llm.load_model(
        "", texts=llm.arithmetic_corpus(protocol.train, template), architecture=architecture, seed=seed
    )
    tuning = llm.fine_tune(
        model,
        protocol,
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
        sequence_length=sequence_length,
        seed=seed,
        template=template,
    )
    evaluation = llm.evaluate(model, test_sets, template=template, max_new_tokens=max_new_tokens)
    record = llm.llm_record(
        {**info, "label": info["label"] + ", all weights trained (control)"},
        None,
        tuning,
        evaluation,
        learning_rate=learning_rate,
    )
    return record, tuning


def export_and_check(
    model,
    test_sets: dict,
    directory,
    *,
    template: str,
    max_new_tokens: int,
    check: int,
    seed: int,
    quantizations=("float32", "int8_dynamic"),
) -> dict:
    """LiteRT files of ``model``; each one's greedy generations compared with Keras' on ``check``
    expressions per test set. A failed export is reported under ``error``, not raised."""
    tokenizer = model.preprocessor.tokenizer
    longest = max(
        len(ids)
        for split in test_sets.values()
        for ids in llm.token_lists(tokenizer, [llm.prompt_text(e, template) for e in split.expressions])
    )
    length = 8 * -(-(longest + 1 + max_new_tokens) // 8)
    exports = {}
    for quantization in quantizations:
        try:
            result = llm.export_litert(model, directory / f"gemma_{quantization}.tflite", length, quantization)
            generator = llm.LiteRTGreedy(result["path"], tokenizer)
            agreement, accuracy, counts = {}, {}, {}
            for name, split in test_sets.items():
                sample = llm.subsample(split, check, seed)
                prompts = [llm.prompt_text(e, template) for e in sample.expressions]
                lite = generator.generate(prompts, max_new_tokens)
                keras_text = llm.generate(model, prompts, max_new_tokens)
                agreement[name] = float(np.mean([a == b for a, b in zip(lite, keras_text)]))
                accuracy[name] = llm.answer_accuracy(lite, sample.values)[0]
                counts[name] = len(sample)
            exports[quantization] = {
                "bytes": result["bytes"],
                "sequence_length": length,
                "same_generation": agreement,
                "accuracy": accuracy,
                "n": counts,
            }
        except Exception as error:  # noqa: BLE001  the LiteRT converter raises its own classes; reported, not hidden
            exports[quantization] = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
    exports["not_exported"] = NOT_EXPORTED
    return exports


def exports_markdown(exports: dict, names) -> str:
    lines = [
        "| file | KB | same generation as Keras (in / out / long) | LiteRT accuracy (in / out / long) |",
        "|---|---|---|---|",
    ]
    for name, item in exports.items():
        if name == "not_exported":
            continue
        if "error" in item:
            lines.append(f"| {name} | | failed: {item['error']} | |")
        else:
            lines.append(
                f"| {name} | {item['bytes'] / 1024:.0f} | "
                + " / ".join(f"{100 * item['same_generation'][t]:.0f} %" for t in names)
                + " | "
                + " / ".join(f"{100 * item['accuracy'][t]:.1f} %" for t in names)
                + " |"
            )
    return "\n".join(lines) + f"\n\nNot exported: {exports['not_exported']}."


def triple(accuracy: dict) -> str:
    return " / ".join(f"{100 * accuracy[t]:.2f} %" for t in SPLITS)


def conclusion(entry: dict, control, pretrained: bool, lora_rank: int, epochs: int, reference_rows: dict) -> str:
    """``reference_rows``: the prior report's published rows (``report.anchors.REFERENCE_LLM_ROWS``)."""
    seed = {name: {t: row[f"accuracy_{t}"] for t in SPLITS} for name, row in reference_rows.items()}
    text = [
        f"**{entry['label']}**, LoRA rank {lora_rank} ({entry['trainable_params']:,} trainable weights), "
        f"{epochs} epochs in {entry['train_seconds']:.0f} s: exact accuracy {triple(entry['accuracy'])} "
        f"(in range / out of range / long; unparseable answers "
        f"{' / '.join(str(entry['unparseable'][t]) for t in SPLITS)}). "
        f"The prior report's fine-tuned Gemma 3 1B reached {triple(seed['Gemma 3 1B'])} and Gemma 3 270M "
        f"{triple(seed['Gemma 3 270M'])}."
    ]
    if control:
        text.append(
            f"Training every weight of the same tiny model instead ({control['trainable_params']:,} weights) "
            f"reached {triple(control['accuracy'])}."
        )
    if not pretrained:
        text.append(
            "The tiny model starts from random weights, so LoRA can only re-route attention inside "
            "a network that has learned nothing: these rows check the pipeline (training, generation, "
            "parsing, saving, export) and are not a measurement of Gemma. A pre-trained Gemma preset "
            "(`preset = ...`) runs the same code."
        )
    return " ".join(text)
