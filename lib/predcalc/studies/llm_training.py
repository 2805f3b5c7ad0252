"""Supervised fine-tuning of the LoRA Gemma study (:mod:`predcalc.studies.llm`): examples packed as
``<bos> prompt answer <eos>`` with the prompt masked out of the loss, and the training run.
"""

from __future__ import annotations

import dataclasses
import math
import time

import keras
import numpy as np
import tensorflow as tf

from predcalc.data import Protocol, Split
from predcalc.studies.llm_models import Detached, trainable_count
from predcalc.studies.llm_text import DEFAULT_TEMPLATE, LLMError, answer_text, prompt_text, token_lists
from predcalc.training.fit import set_seed


def packed_length(tokenizer, prompts, responses) -> int:
    """The longest ``<bos> prompt answer <eos>`` sequence, minus one (inputs and targets shift)."""
    lengths = [len(p) + len(r) + 1 for p, r in zip(token_lists(tokenizer, prompts), token_lists(tokenizer, responses))]
    return max(lengths)


def pack_examples(tokenizer, prompts, responses, sequence_length: int):
    """Supervised examples with the prompt masked out of the loss.

    Each example is ``<bos> prompt answer <eos>`` padded to ``sequence_length + 1``; inputs
    are all but the last token, targets all but the first, and the sample weight is 1 on the
    answer and ``<eos>`` targets only: the layout ``Gemma3CausalLMPreprocessor`` builds from
    ``{"prompts", "responses"}``, for any Gemma tokeniser.

    Returns:
        ``(x, y, sample_weight)`` with ``x = {"token_ids", "padding_mask"}``, int32 arrays of
        shape ``(n, sequence_length)``.
    """
    prompts, responses = list(prompts), list(responses)
    if len(prompts) != len(responses):
        raise LLMError(f"{len(prompts)} prompts but {len(responses)} responses")
    rows = []
    for p, r in zip(token_lists(tokenizer, prompts), token_lists(tokenizer, responses)):
        rows.append(([tokenizer.start_token_id] + p, r + [tokenizer.end_token_id]))
    longest = max(len(p) + len(r) for p, r in rows)
    if longest > sequence_length + 1:
        cut = sum(len(p) + len(r) > sequence_length + 1 for p, r in rows)
        raise LLMError(
            f"sequence_length={sequence_length} truncates {cut} of {len(rows)} examples; "
            f"the longest needs sequence_length={longest - 1}"
        )
    tokens = np.full((len(rows), sequence_length + 1), tokenizer.pad_token_id, dtype="int32")
    answer = np.zeros((len(rows), sequence_length + 1), dtype=bool)
    for i, (p, r) in enumerate(rows):
        tokens[i, : len(p) + len(r)] = p + r
        answer[i, len(p) : len(p) + len(r)] = True
    x = {"token_ids": tokens[:, :-1], "padding_mask": (tokens[:, :-1] != tokenizer.pad_token_id).astype("int32")}
    return x, tokens[:, 1:], answer[:, 1:].astype("float32")


def _examples(split: Split, template: str):
    return [prompt_text(e, template) for e in split.expressions], [answer_text(v) for v in split.values]


@dataclasses.dataclass
class FineTuning:
    """What training did: per-epoch losses (answer tokens only), steps and time."""

    history: dict
    epochs: int
    steps: int
    seconds: float
    sequence_length: int
    trainable_params: int


def fine_tune(
    model,
    protocol: Protocol,
    epochs: int = 10,
    batch_size: int = 32,
    learning_rate: float = 1e-2,
    sequence_length: int | None = None,
    seed: int = 0,
    template: str = DEFAULT_TEMPLATE,
    warmup_fraction: float = 0.05,
    verbose: int = 0,
) -> FineTuning:
    """Supervised fine-tuning on the protocol's training split, validated on its validation split.

    Adam with a linear warm-up and cosine decay to zero; the loss is the cross-entropy of the
    answer tokens (prompt masked). Trains whatever is trainable: call ``enable_lora`` first for
    LoRA; without it every weight trains (a full fine-tuning control).

    Args:
        sequence_length: packed length; default the shortest that holds every example.
    """

    for name, value in (("epochs", epochs), ("batch_size", batch_size)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise LLMError(f"{name} must be a positive integer. Received: {name}={value!r}")
    if not learning_rate > 0:
        raise LLMError(f"learning_rate must be positive. Received: learning_rate={learning_rate}")
    tokenizer = model.preprocessor.tokenizer
    train_prompts, train_answers = _examples(protocol.train, template)
    validation_prompts, validation_answers = _examples(protocol.validation, template)
    needed = max(
        packed_length(tokenizer, train_prompts, train_answers),
        packed_length(tokenizer, validation_prompts, validation_answers),
    )
    sequence_length = int(sequence_length or needed)
    x, y, weight = pack_examples(tokenizer, train_prompts, train_answers, sequence_length)
    validation = pack_examples(tokenizer, validation_prompts, validation_answers, sequence_length)
    steps = int(epochs) * math.ceil(len(y) / batch_size)
    warmup = int(round(warmup_fraction * steps))
    schedule = keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0 if warmup else learning_rate,
        decay_steps=max(steps - warmup, 1),
        warmup_target=learning_rate if warmup else None,
        warmup_steps=warmup,
    )
    set_seed(seed)
    # keras-hub's fit batches NumPy inputs without shuffling (it ignores shuffle=True): shuffle here.
    batches = (
        tf.data.Dataset.from_tensor_slices((x, y, weight))
        .shuffle(len(y), seed=int(seed), reshuffle_each_iteration=True)
        .batch(int(batch_size))
    )
    model.compile(
        optimizer=keras.optimizers.Adam(schedule),
        sampler="greedy",
        weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="token_accuracy")],
    )
    start = time.perf_counter()
    with Detached(model):
        history = model.fit(
            batches,
            validation_data=tf.data.Dataset.from_tensor_slices(validation).batch(256),
            epochs=int(epochs),
            shuffle=False,
            verbose=verbose,
        )  # shuffled above
    seconds = time.perf_counter() - start
    return FineTuning(
        history={k: [float(v) for v in vs] for k, vs in history.history.items()},
        epochs=int(epochs),
        steps=steps,
        seconds=seconds,
        sequence_length=sequence_length,
        trainable_params=trainable_count(model),
    )
