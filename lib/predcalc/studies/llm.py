"""Supervised LoRA fine-tuning of a keras-hub Gemma causal LM on the reference protocol.

The prior report (section 4 of its write-up) fine-tuned pre-trained LLMs (Gemma 3 1B and 270M) to
answer the protocol's expressions and reported exact accuracy: 93.41 / 63.33 / 39.57 % (1B)
and 54.22 / 9.67 / 28.0 % (270M) in range / out of range / long (the prior report's published rows). This module does
the same with keras-hub:

- every expression becomes a prompt and an answer text: ``"3 - -2 + 4 ="`` -> ``"9"``;
- the model is packed as ``<bos> prompt answer <eos>`` and the loss counts only the answer
  tokens (the prompt is masked, as ``Gemma3CausalLMPreprocessor`` does);
- LoRA (``backbone.enable_lora(rank)``) freezes every weight and adds, to each adapted
  ``EinsumDense`` kernel ``W`` of shape ``(*in_axes, out)``, a trainable update
  ``W + (alpha / rank) * A @ B`` with ``A: (*in_axes, rank)`` and ``B: (rank, out)``,
  i.e. ``rank * (prod(in_axes) + out)`` weights per adapted kernel;
- answers come from greedy generation and are parsed as one integer; an answer that does
  not parse counts as wrong and is returned with the others.

Model source: a keras-hub preset directory on disk (a Gemma 2 / Gemma 3 Keras preset, for
example from Kaggle), loaded with ``CausalLM.from_preset(path)``; or, by default, a *tiny*
Gemma 3 (or Gemma) built from a config with a SentencePiece tokeniser trained here on the
arithmetic text. Nothing is downloaded. The tiny model starts from random weights, so its
results are labelled "tiny Gemma 3 (not pre-trained, N params)": it checks the pipeline and
shows what LoRA does without pre-training; it is not a Gemma result.

Training, generation and saving run on the TensorFlow and JAX backends; the LiteRT export
needs TensorFlow. The LiteRT file holds the logits function only (keras-hub 0.32 does not
export ``generate()`` and its key/value cache): ``LiteRTGreedy`` decodes around it.

The study is split by job, and this module gathers it (the notebooks and tests import it from
here) and writes its record: :mod:`~predcalc.studies.llm_text` (prompts, answers, token ids,
subsamples, exact accuracy; no Keras), :mod:`~predcalc.studies.llm_models` (the tiny model and its
tokeniser, presets, LoRA, saving), :mod:`~predcalc.studies.llm_training` (packing and
fine-tuning) and :mod:`~predcalc.studies.llm_generation` (greedy decoding, evaluation, the LiteRT
file).
"""

from __future__ import annotations

import json

from predcalc.studies.llm_generation import Evaluation, LiteRTGreedy, evaluate, export_litert, generate, stop_ids
from predcalc.studies.llm_models import (
    ARCHITECTURES,
    LORA_FILE,
    TINY_CONFIG,
    TURN_PIECES,
    Detached,
    build_tiny_model,
    enable_lora,
    load_adapted,
    load_model,
    load_preset,
    lora_parameter_count,
    save,
    train_sentencepiece,
    trainable_count,
)
from predcalc.studies.llm_text import (
    DEFAULT_TEMPLATE,
    LLMError,
    answer_accuracy,
    answer_text,
    arithmetic_corpus,
    parse_answer,
    prompt_text,
    subsample,
    token_lists,
)
from predcalc.studies.llm_training import FineTuning, fine_tune, pack_examples, packed_length

__all__ = [
    "ARCHITECTURES",
    "DEFAULT_TEMPLATE",
    "LORA_FILE",
    "TINY_CONFIG",
    "TURN_PIECES",
    "Detached",
    "Evaluation",
    "FineTuning",
    "LLMError",
    "LiteRTGreedy",
    "answer_accuracy",
    "answer_text",
    "arithmetic_corpus",
    "build_tiny_model",
    "enable_lora",
    "evaluate",
    "export_litert",
    "fine_tune",
    "generate",
    "llm_record",
    "load_adapted",
    "load_model",
    "load_preset",
    "lora_parameter_count",
    "pack_examples",
    "packed_length",
    "parse_answer",
    "prompt_text",
    "save",
    "stop_ids",
    "subsample",
    "token_lists",
    "train_sentencepiece",
    "trainable_count",
]


# ---------------------------------------------------------------------------------------------
# The record ``predcalc report`` reads


def llm_record(info: dict, lora_rank: int | None, tuning: FineTuning, evaluation: Evaluation, **extra) -> dict:
    """The ``"llm"`` entry of a notebook's metrics.json."""
    record = {
        "label": info["label"],
        "pretrained": info["pretrained"],
        "params": info["params"],
        "source": info["source"],
        "lora_rank": lora_rank,
        "trainable_params": tuning.trainable_params,
        "accuracy": evaluation.accuracy,
        "n": evaluation.n,
        "unparseable": evaluation.unparseable,
        "train_seconds": tuning.seconds,
        "epochs": tuning.epochs,
        "steps": tuning.steps,
        "sequence_length": tuning.sequence_length,
        "final_loss": tuning.history["loss"][-1],
        "final_val_loss": tuning.history.get("val_loss", [None])[-1],
    }
    record.update(extra)
    return json.loads(json.dumps(record, default=float))
