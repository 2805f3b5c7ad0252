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
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import re
import time
from pathlib import Path

import keras
import keras_hub
import numpy as np
import sentencepiece
import tensorflow as tf

from predcalc.data import Protocol, Split
from predcalc.training.fit import set_seed

DEFAULT_TEMPLATE = "{expression} ="
TURN_PIECES = ("<start_of_turn>", "<end_of_turn>")
TINY_CONFIG = {
    "num_layers": 2,
    "num_query_heads": 4,
    "num_key_value_heads": 1,
    "hidden_dim": 64,
    "intermediate_dim": 128,
    "head_dim": 16,
}
ARCHITECTURES = ("gemma3", "gemma")
LORA_FILE = "adapter.lora.h5"
_ANSWER = re.compile(r"[+-]?\d+")
_SPECIAL = re.compile(r"<(?:end_of_turn|start_of_turn|eos|bos|pad|unk)>")


class LLMError(ValueError):
    """A bad model source or setting for LLM fine-tuning."""


# ---------------------------------------------------------------------------------------------
# Text format


def prompt_text(expression: str, template: str = DEFAULT_TEMPLATE) -> str:
    """The prompt of one expression: ``"3 - -2 + 4"`` -> ``"3 - -2 + 4 ="``."""
    if "{expression}" not in template:
        raise LLMError(f"template must contain '{{expression}}'. Received: template={template!r}")
    return template.format(expression=expression)


def answer_text(value) -> str:
    """The answer text of an integer value: ``9.0`` -> ``"9"``, ``-12`` -> ``"-12"``."""
    number = float(value)
    if not number.is_integer():
        raise LLMError(f"answers must be integers. Received: value={value!r}")
    return str(int(number))


def parse_answer(text: str) -> int | None:
    """The integer a generated answer states, or None when it states no single integer.

    Special tokens (``<end_of_turn>``, ``<eos>``, ...) and surrounding whitespace are ignored;
    anything else around the number makes the answer unparseable:
    ``"9"`` -> 9, ``" -12<end_of_turn>"`` -> -12, ``"abc"``, ``"1 2"``, ``"--3"``, ``""`` -> None.
    """
    cleaned = _SPECIAL.sub("", str(text)).strip()
    if not _ANSWER.fullmatch(cleaned):
        return None
    return int(cleaned)


def arithmetic_corpus(split: Split, template: str = DEFAULT_TEMPLATE) -> list[str]:
    """The lines the tiny model's tokeniser is trained on: prompt and answer of each example.

    A last line holds every digit and operator, so that no test answer meets an unknown
    character even if the training answers missed one.
    """
    lines = [f"{prompt_text(e, template)} {answer_text(v)}" for e, v in zip(split.expressions, split.values)]
    return lines + ["0 1 2 3 4 5 6 7 8 9 + - ="]


# ---------------------------------------------------------------------------------------------
# Models


def train_sentencepiece(texts, vocabulary_size: int = 24) -> bytes:
    """A SentencePiece BPE model trained on ``texts`` (Gemma's special ids, digits split).

    Ids: ``<pad>`` 0, ``<eos>`` 1, ``<bos>`` 2, ``<unk>`` 3, then ``<start_of_turn>`` and
    ``<end_of_turn>`` (generation stops on the latter, as in Gemma), then the learned pieces.
    Every digit is its own piece, as in Gemma's own tokeniser. Single-threaded, so the same
    texts give the same model.
    """

    texts = [str(t) for t in texts]
    if not texts:
        raise LLMError("train_sentencepiece needs at least one text")
    if vocabulary_size < 8:
        raise LLMError(f"vocabulary_size must be at least 8. Received: vocabulary_size={vocabulary_size}")
    buffer = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_writer=buffer,
        vocab_size=vocabulary_size,
        model_type="bpe",
        split_digits=True,
        hard_vocab_limit=False,
        num_threads=1,
        minloglevel=2,
        pad_id=0,
        eos_id=1,
        bos_id=2,
        unk_id=3,
        pad_piece="<pad>",
        eos_piece="<eos>",
        bos_piece="<bos>",
        unk_piece="<unk>",
        user_defined_symbols=list(TURN_PIECES),
    )
    return buffer.getvalue()


def build_tiny_model(
    texts, architecture: str = "gemma3", sequence_length: int = 24, vocabulary_size: int = 24, seed: int = 0, **config
):
    """A tiny, randomly initialised Gemma 3 (or Gemma) causal LM with its own tokeniser.

    Args:
        texts: the text the SentencePiece tokeniser is trained on (``arithmetic_corpus``).
        architecture: ``"gemma3"`` (``Gemma3Backbone``, text only) or ``"gemma"``.
        sequence_length: the preprocessor's sequence length (training packs its own).
        vocabulary_size: the SentencePiece vocabulary size asked for (at most; BPE on this
            small alphabet may stop below it).
        seed: initialisation seed.
        **config: overrides of ``TINY_CONFIG`` (num_layers, hidden_dim, ...).
    """

    if architecture not in ARCHITECTURES:
        raise LLMError(f"architecture must be one of {ARCHITECTURES}. Received: architecture={architecture!r}")
    unknown = set(config) - set(TINY_CONFIG)
    if unknown:
        raise LLMError(f"unknown tiny-model setting(s) {sorted(unknown)}; known: {sorted(TINY_CONFIG)}")
    settings = {**TINY_CONFIG, **config}
    for key, value in settings.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise LLMError(f"{key} must be a positive integer. Received: {key}={value!r}")
    proto = train_sentencepiece(texts, vocabulary_size)
    keras.utils.set_random_seed(int(seed))
    if architecture == "gemma3":
        tokenizer = keras_hub.models.Gemma3Tokenizer(proto=proto, has_vision_tokens=False)
        backbone = keras_hub.models.Gemma3Backbone(
            vocabulary_size=tokenizer.vocabulary_size(), image_size=16, vision_encoder=None, **settings
        )
        preprocessor = keras_hub.models.Gemma3CausalLMPreprocessor(tokenizer=tokenizer, sequence_length=sequence_length)
        model = keras_hub.models.Gemma3CausalLM(backbone=backbone, preprocessor=preprocessor)
    else:
        tokenizer = keras_hub.models.GemmaTokenizer(proto=proto)
        backbone = keras_hub.models.GemmaBackbone(vocabulary_size=tokenizer.vocabulary_size(), **settings)
        preprocessor = keras_hub.models.GemmaCausalLMPreprocessor(tokenizer=tokenizer, sequence_length=sequence_length)
        model = keras_hub.models.GemmaCausalLM(backbone=backbone, preprocessor=preprocessor)
    return model


def load_preset(path):
    """A causal LM from a keras-hub preset directory on disk (nothing is downloaded).

    Raises:
        FileNotFoundError: the directory does not exist.
        LLMError: it is not a keras-hub preset (no ``config.json``), or has no tokeniser.
    """

    path = Path(str(path)).expanduser()
    if not str(path).strip() or str(path) == ".":
        raise LLMError("preset must be a directory path; use build_tiny_model() for the tiny model")
    if not path.is_dir():
        raise FileNotFoundError(
            f"no preset directory at {path}: download a Gemma 2 / Gemma 3 Keras preset (e.g. from Kaggle) "
            f"and pass its directory, or leave the preset empty to use the tiny model"
        )
    if not (path / "config.json").is_file():
        raise LLMError(f"{path} is not a keras-hub preset: it has no config.json")
    model = keras_hub.models.CausalLM.from_preset(str(path))
    if model.preprocessor is None or getattr(model.preprocessor, "tokenizer", None) is None:
        raise LLMError(f"the preset at {path} has no tokenizer; fine-tuning needs one")
    return model


def load_model(
    preset: str = "", texts=None, architecture: str = "gemma3", sequence_length: int = 24, seed: int = 0, **config
):
    """The model to fine-tune: a preset directory when ``preset`` is set, else the tiny model.

    Returns:
        ``(model, info)`` with ``info = {"label", "pretrained", "params", "source"}``; ``params``
        counts the backbone before LoRA.
    """
    if preset:
        model = load_preset(preset)
        params = int(model.backbone.count_params())
        info = {
            "label": f"{Path(preset).name} (pre-trained preset, {params:,} params)",
            "pretrained": True,
            "params": params,
            "source": str(preset),
        }
    else:
        if texts is None:
            raise LLMError("the tiny model needs texts to train its tokeniser on (arithmetic_corpus(...))")
        model = build_tiny_model(texts, architecture=architecture, sequence_length=sequence_length, seed=seed, **config)
        params = int(model.backbone.count_params())
        name = "Gemma 3" if architecture == "gemma3" else "Gemma"
        info = {
            "label": f"tiny {name} (not pre-trained, {params:,} params)",
            "pretrained": False,
            "params": params,
            "source": f"tiny {architecture} from config",
        }
    return model, info


# ---------------------------------------------------------------------------------------------
# LoRA


def _lora_targets(backbone, targets):
    return list(targets) if targets else list(backbone.default_lora_layer_names())


def enable_lora(model, rank: int, targets=None) -> int:
    """Freeze the backbone and add rank-``rank`` LoRA adapters; returns the trainable count.

    Args:
        rank: the LoRA rank, a positive integer.
        targets: layer names to adapt (default: keras-hub's ``query`` and ``value``).
    """
    if not isinstance(rank, (int, np.integer)) or isinstance(rank, bool) or rank < 1:
        raise LLMError(f"lora_rank must be a positive integer. Received: lora_rank={rank!r}")
    backbone = model.backbone
    if getattr(backbone, "_lora_enabled_layers", None):
        raise LLMError(f"LoRA is already enabled on this model (rank {backbone._lora_rank})")
    targets = _lora_targets(backbone, targets)
    names = {layer.name for layer in backbone._flatten_layers(include_self=False)}
    missing = [t for t in targets if t not in names]
    if len(missing) == len(targets):
        raise LLMError(f"no layer of this backbone is named {targets}; LoRA needs e.g. 'query', 'value'")
    backbone.enable_lora(int(rank), target_layer_names=targets)
    return trainable_count(model)


def trainable_count(model) -> int:
    """How many weights training updates."""
    return int(sum(math.prod(w.shape) for w in model.trainable_weights))


def lora_parameter_count(backbone, rank: int, targets=None) -> int:
    """Trainable LoRA weights, from the adapted kernels' shapes: rank * (prod(in axes) + out) each.

    Counted before ``enable_lora`` runs; compare with ``trainable_count`` after it.
    """
    targets = set(_lora_targets(backbone, targets))
    total = 0
    for layer in backbone._flatten_layers(include_self=False):
        if layer.name in targets and hasattr(layer, "enable_lora") and layer.weights:
            shape = tuple(layer.kernel.shape)
            total += int(rank) * (math.prod(shape[:-1]) + shape[-1])
    return total


# ---------------------------------------------------------------------------------------------
# Packing, training


def token_lists(tokenizer, texts) -> list[list[int]]:
    """Token ids of each text, as Python lists."""
    out = tokenizer(list(texts))
    if hasattr(out, "to_list"):
        out = out.to_list()
    return [[int(i) for i in np.asarray(row).reshape(-1)] for row in out]


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


class _Detached:
    """Take the preprocessor off a keras-hub task for a while (inputs are packed already)."""

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        self.preprocessor = self.model.preprocessor
        self.model.preprocessor = None
        return self.preprocessor

    def __exit__(self, *exc):
        self.model.preprocessor = self.preprocessor
        return False


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
    with _Detached(model):
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


# ---------------------------------------------------------------------------------------------
# Generation and evaluation


def _stop_ids(tokenizer) -> list[int]:
    """``<eos>``, and ``<end_of_turn>`` where the vocabulary has it."""
    stops = {int(tokenizer.end_token_id)}
    try:
        turn = int(tokenizer.token_to_id("<end_of_turn>"))
        if tokenizer.id_to_token(turn) == "<end_of_turn>":
            stops.add(turn)
    except (KeyError, ValueError, IndexError):  # a vocabulary without turn markers
        pass
    return sorted(stops)


def _completion_ids(row, start: int, stops) -> list[int]:
    new = []
    for token in row[start:]:
        if int(token) in stops:
            break
        new.append(int(token))
    return new


def generate(model, prompts, max_new_tokens: int = 5, batch_size: int = 64) -> list[str]:
    """Greedy completions of ``prompts`` (the prompt itself left out), stopped at ``<eos>`` /
    ``<end_of_turn>`` or after ``max_new_tokens`` tokens, whichever comes first.

    Prompts are packed as ``<bos> prompt`` and padded to one length (a multiple of 8), in
    batches of a fixed size (the last one padded with copies), so the compiled generate
    function is traced once per length. Greedy decoding makes each completion independent of
    the batch it runs in.
    """
    if max_new_tokens < 1:
        raise LLMError(f"max_new_tokens must be at least 1. Received: max_new_tokens={max_new_tokens}")
    prompts = list(prompts)
    if not prompts:
        return []
    tokenizer = model.preprocessor.tokenizer
    rows = [[tokenizer.start_token_id] + p for p in token_lists(tokenizer, prompts)]
    # Lengths rounded up to a multiple of 8: fewer shapes, fewer traces of the generate function.
    length = 8 * math.ceil((max(len(r) for r in rows) + max_new_tokens) / 8)
    stops = _stop_ids(tokenizer)
    texts = []
    with _Detached(model):
        if getattr(model, "sampler", None) is None or type(model.sampler).__name__ != "GreedySampler":
            model.compile(sampler="greedy")
        generate_function = model.make_generate_function()
        for begin in range(0, len(rows), batch_size):
            chunk = rows[begin : begin + batch_size]
            padded = chunk + [chunk[0]] * (batch_size - len(chunk))
            tokens = np.full((batch_size, length), tokenizer.pad_token_id, dtype="int32")
            for i, row in enumerate(padded):
                tokens[i, : len(row)] = row
            # The compiled generate function itself: CausalLM.generate() cannot concatenate the
            # text-only Gemma3CausalLM's outputs ({"images": None}) in keras-hub 0.32.
            out = generate_function(
                {"token_ids": tokens, "padding_mask": tokens != tokenizer.pad_token_id}, stop_token_ids=tuple(stops)
            )
            generated = np.asarray(out["token_ids"])
            for i, row in enumerate(chunk):
                ids = _completion_ids(generated[i], len(row), stops)[:max_new_tokens]
                texts.append(str(tokenizer.detokenize(ids)) if ids else "")
    return texts


def subsample(split: Split, n: int | None, seed: int = 0) -> Split:
    """At most ``n`` expressions of ``split`` drawn without replacement (seeded), in their
    original order; ``None`` or 0 keeps every expression."""
    if not n or n >= len(split):
        return split
    if n < 0:
        raise LLMError(f"the test subsample size must be positive or 0 (all). Received: {n}")
    keep = np.zeros(len(split), dtype=bool)
    keep[np.random.default_rng(seed).choice(len(split), size=int(n), replace=False)] = True
    return split.subset(keep, split.name)


@dataclasses.dataclass
class Evaluation:
    """Exact accuracy per test set, with every generation."""

    accuracy: dict
    n: dict
    unparseable: dict
    rows: dict  # test set -> list of {"expression", "truth", "generated", "answer", "correct"}
    seconds: float

    def examples(self, test_set: str, correct: bool, k: int = 5) -> list[dict]:
        return [r for r in self.rows[test_set] if r["correct"] == correct][:k]


def answer_accuracy(generated, truths) -> tuple[float, int, list]:
    """Share of generations whose parsed answer equals the truth; unparseable ones are wrong.

    Returns:
        ``(accuracy, unparseable_count, parsed_answers)``.
    """
    generated, truths = list(generated), list(truths)
    if len(generated) != len(truths):
        raise LLMError(f"{len(generated)} generations but {len(truths)} answers")
    if not truths:
        raise LLMError("answer_accuracy needs at least one example")
    parsed = [parse_answer(g) for g in generated]
    correct = [p is not None and p == int(round(float(t))) for p, t in zip(parsed, truths)]
    return float(np.mean(correct)), sum(p is None for p in parsed), parsed


def evaluate(
    model,
    test_sets: dict,
    sample: int | None = None,
    seed: int = 0,
    template: str = DEFAULT_TEMPLATE,
    batch_size: int = 64,
    max_new_tokens: int = 5,
) -> Evaluation:
    """Greedy generation and exact accuracy on each test set (optionally a seeded subsample)."""
    start = time.perf_counter()
    accuracy, counts, unparseable, rows = {}, {}, {}, {}
    for name, split in test_sets.items():
        split = subsample(split, sample, seed)
        generated = generate(
            model,
            [prompt_text(e, template) for e in split.expressions],
            max_new_tokens=max_new_tokens,
            batch_size=batch_size,
        )
        accuracy[name], unparseable[name], parsed = answer_accuracy(generated, split.values)
        counts[name] = len(split)
        rows[name] = [
            {
                "expression": e,
                "truth": int(round(float(t))),
                "generated": g,
                "answer": a,
                "correct": a is not None and a == int(round(float(t))),
            }
            for e, t, g, a in zip(split.expressions, split.values, generated, parsed)
        ]
    return Evaluation(accuracy, counts, unparseable, rows, time.perf_counter() - start)


# ---------------------------------------------------------------------------------------------
# Saving, reloading, export


def save(model, directory) -> dict:
    """Save the adapted model as a keras-hub preset (LoRA merged into the weights) and, when
    LoRA is on, the adapter alone (``adapter.lora.h5``, for ``load_adapted``)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"preset": directory / "preset"}
    model.save_to_preset(str(paths["preset"]))
    if getattr(model.backbone, "_lora_enabled_layers", None):
        paths["lora"] = directory / LORA_FILE
        model.backbone.save_lora_weights(str(paths["lora"]))
    return paths


def load_adapted(base_preset, lora_path):
    """A base preset with a saved LoRA adapter put back on (rank read from the file)."""
    lora_path = Path(lora_path)
    if not lora_path.is_file():
        raise FileNotFoundError(f"no LoRA adapter file at {lora_path}")
    model = load_preset(base_preset)
    model.backbone.load_lora_weights(str(lora_path))
    return model


def export_litert(model, path, sequence_length: int, quantization: str = "float32") -> dict:
    """The causal LM's logits function as a LiteRT file with a fixed input of (1, sequence_length).

    The file maps ``token_ids`` and ``padding_mask`` (int32) to next-token logits at every
    position; ``LiteRTGreedy`` runs greedy decoding around it (no key/value cache: each new
    token re-runs the whole padded sequence, fine for answers of a few tokens). Builtin ops
    only; ``quantization`` is ``"float32"`` or ``"int8_dynamic"`` (dynamic-range weights).
    """

    if quantization not in ("float32", "int8_dynamic"):
        raise LLMError(f"quantization must be 'float32' or 'int8_dynamic'. Received: quantization={quantization!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    shape = (1, int(sequence_length))
    signature = {name: tf.TensorSpec(shape, tf.int32, name=name) for name in ("token_ids", "padding_mask")}
    options = {"optimizations": [tf.lite.Optimize.DEFAULT]} if quantization == "int8_dynamic" else {}
    with _Detached(model):
        model.export(
            str(path),
            format="litert",
            verbose=False,
            input_signature=[signature],
            target_spec={"supported_ops": [tf.lite.OpsSet.TFLITE_BUILTINS]},
            **options,
        )
    return {
        "path": str(path),
        "bytes": path.stat().st_size,
        "sequence_length": int(sequence_length),
        "quantization": quantization,
    }


class LiteRTGreedy:
    """Greedy generation with an ``export_litert`` file and the model's tokeniser."""

    def __init__(self, path, tokenizer, num_threads: int = 1):
        from ai_edge_litert.interpreter import Interpreter  # the runtime, only where a LiteRT file is run

        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"no such model file: {self.path}")
        self.tokenizer = tokenizer
        self.interpreter = Interpreter(model_path=str(self.path), num_threads=num_threads)
        self.interpreter.allocate_tensors()
        inputs = self.interpreter.get_input_details()
        self.token_input = next(d for d in inputs if "token_ids" in d["name"])
        self.mask_input = next(d for d in inputs if "padding_mask" in d["name"])
        self.output = self.interpreter.get_output_details()[0]
        self.length = int(self.token_input["shape"][1])
        self.stops = _stop_ids(tokenizer)

    def logits(self, tokens: np.ndarray) -> np.ndarray:
        """Logits of one padded (1, length) row of token ids."""
        mask = (tokens != self.tokenizer.pad_token_id).astype("int32")
        self.interpreter.set_tensor(self.token_input["index"], tokens.astype("int32"))
        self.interpreter.set_tensor(self.mask_input["index"], mask)
        self.interpreter.invoke()
        return self.interpreter.get_tensor(self.output["index"])

    def generate(self, prompts, max_new_tokens: int = 5) -> list[str]:
        texts = []
        for row in token_lists(self.tokenizer, prompts):
            row = [self.tokenizer.start_token_id] + row
            if len(row) + max_new_tokens > self.length:
                raise LLMError(f"the prompt needs {len(row) + max_new_tokens} positions; the file has {self.length}")
            tokens = np.full((1, self.length), self.tokenizer.pad_token_id, dtype="int32")
            tokens[0, : len(row)] = row
            new = []
            for position in range(len(row), len(row) + max_new_tokens):
                token = int(np.argmax(self.logits(tokens)[0, position - 1]))
                if token in self.stops:
                    break
                tokens[0, position] = token
                new.append(token)
            texts.append(str(self.tokenizer.detokenize(new)) if new else "")
        return texts


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
