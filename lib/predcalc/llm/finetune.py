"""Supervised LoRA fine-tuning of a keras-hub Gemma causal LM on the reference protocol.

Every expression becomes a prompt and an answer (``"3 - -2 + 4 ="`` -> ``"9"``), packed as
``<bos> prompt answer <eos>`` with the loss on the answer tokens only (the prompt masked, as
``Gemma3CausalLMPreprocessor`` does). LoRA (``backbone.enable_lora(rank)``) freezes every weight
and adds to each adapted kernel ``W`` of shape ``(*in_axes, out)`` a trainable ``(alpha / rank) *
A @ B``, ``A: (*in_axes, rank)``, ``B: (rank, out)``. Answers come from greedy generation, parsed as
one integer (an answer that does not parse is wrong), or from one teacher-forced pass.

Model source: a keras-hub preset directory on disk, or by default a *tiny* Gemma 3 (or Gemma) built
from a config with a SentencePiece tokeniser trained here: random weights, a check of the pipeline,
not a Gemma result. Nothing is downloaded. The text side and the LiteRT file: ``llm_deploy``.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import time
from pathlib import Path

import keras
import keras_hub
import numpy as np
import sentencepiece
import tensorflow as tf
from tqdm.auto import tqdm

from predcalc.data import Protocol, Split
from predcalc.llm.deploy import (
    DEFAULT_TEMPLATE,
    LLMError,
    answer_accuracy,
    answer_text,
    arithmetic_corpus,
    pack,
    prompt_text,
    prompts_and_answers,
    stop_ids,
    subsample,
    token_lists,
    without_special_tokens,
)
from predcalc.llm.deploy import parse_answer as parse_answer  # re-exported: finetune.parse_answer
from predcalc.training.fit import set_seed

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


# ---------------------------------------------------------------------------------------------
# Models


def train_sentencepiece(texts, vocabulary_size: int = 24) -> bytes:
    """A SentencePiece BPE model trained on ``texts``: ``<pad>`` 0, ``<eos>`` 1, ``<bos>`` 2,
    ``<unk>`` 3, then ``<start_of_turn>`` and ``<end_of_turn>``, then the learned pieces; every
    digit its own piece, as in Gemma. Single-threaded, so the same texts give the same model."""
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
    """A tiny, randomly initialised Gemma 3 (or Gemma) causal LM with a tokeniser trained on
    ``texts``; ``config`` overrides ``TINY_CONFIG`` (num_layers, hidden_dim, ...)."""
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
    models = keras_hub.models
    if architecture == "gemma3":
        tokenizer = models.Gemma3Tokenizer(proto=proto, has_vision_tokens=False)
        backbone = models.Gemma3Backbone(
            vocabulary_size=tokenizer.vocabulary_size(), image_size=16, vision_encoder=None, **settings
        )
        preprocessor = models.Gemma3CausalLMPreprocessor(tokenizer=tokenizer, sequence_length=sequence_length)
        return models.Gemma3CausalLM(backbone=backbone, preprocessor=preprocessor)
    tokenizer = models.GemmaTokenizer(proto=proto)
    backbone = models.GemmaBackbone(vocabulary_size=tokenizer.vocabulary_size(), **settings)
    preprocessor = models.GemmaCausalLMPreprocessor(tokenizer=tokenizer, sequence_length=sequence_length)
    return models.GemmaCausalLM(backbone=backbone, preprocessor=preprocessor)


def load_preset(path):
    """A causal LM from a keras-hub preset directory on disk (nothing is downloaded)."""
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
    """``(model, info)``: a preset directory when ``preset`` is set, else the tiny model;
    ``info = {"label", "pretrained", "params", "source"}``, ``params`` counted before LoRA."""
    if preset:
        model = load_preset(preset)
        params = int(model.backbone.count_params())
        label, source = f"{Path(preset).name} (pre-trained preset, {params:,} params)", str(preset)
        return model, {"label": label, "pretrained": True, "params": params, "source": source}
    if texts is None:
        raise LLMError("the tiny model needs texts to train its tokeniser on (arithmetic_corpus(...))")
    model = build_tiny_model(texts, architecture=architecture, sequence_length=sequence_length, seed=seed, **config)
    params = int(model.backbone.count_params())
    name = "Gemma 3" if architecture == "gemma3" else "Gemma"
    label, source = f"tiny {name} (not pre-trained, {params:,} params)", f"tiny {architecture} from config"
    return model, {"label": label, "pretrained": False, "params": params, "source": source}


def _lora_targets(backbone, targets):
    return list(targets) if targets else list(backbone.default_lora_layer_names())


def enable_lora(model, rank: int, targets=None) -> int:
    """Freeze the backbone and add rank-``rank`` LoRA adapters to ``targets`` (default keras-hub's
    ``query`` and ``value``); returns the trainable count."""
    if not isinstance(rank, (int, np.integer)) or isinstance(rank, bool) or rank < 1:
        raise LLMError(f"lora_rank must be a positive integer. Received: lora_rank={rank!r}")
    backbone = model.backbone
    if getattr(backbone, "_lora_enabled_layers", None):
        raise LLMError(f"LoRA is already enabled on this model (rank {backbone._lora_rank})")
    targets = _lora_targets(backbone, targets)
    names = {layer.name for layer in backbone._flatten_layers(include_self=False)}
    if not any(t in names for t in targets):
        raise LLMError(f"no layer of this backbone is named {targets}; LoRA needs e.g. 'query', 'value'")
    backbone.enable_lora(int(rank), target_layer_names=targets)
    return trainable_count(model)


def trainable_count(model) -> int:
    """How many weights training updates."""
    return int(sum(math.prod(w.shape) for w in model.trainable_weights))


def lora_parameter_count(backbone, rank: int, targets=None) -> int:
    """Trainable LoRA weights from the adapted kernels' shapes, rank * (prod(in axes) + out) each,
    counted before ``enable_lora`` runs."""
    targets = set(_lora_targets(backbone, targets))
    total = 0
    for layer in backbone._flatten_layers(include_self=False):
        if layer.name in targets and hasattr(layer, "enable_lora") and layer.weights:
            shape = tuple(layer.kernel.shape)
            total += int(rank) * (math.prod(shape[:-1]) + shape[-1])
    return total


class Detached:
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


def save(model, directory) -> dict:
    """The adapted model as a keras-hub preset (LoRA merged into the weights) and, when LoRA is
    on, the adapter alone (``adapter.lora.h5``, for ``load_adapted``)."""
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


# ---------------------------------------------------------------------------------------------
# Fine-tuning with fit


def packed_length(tokenizer, prompts, responses) -> int:
    """The longest ``<bos> prompt answer <eos>`` sequence, minus one (inputs and targets shift)."""
    lengths = [len(p) + len(r) + 1 for p, r in zip(token_lists(tokenizer, prompts), token_lists(tokenizer, responses))]
    return max(lengths)


def pack_examples(tokenizer, prompts, responses, sequence_length: int):
    """``(x, y, sample_weight)``: ``<bos> prompt answer <eos>`` padded to ``sequence_length + 1``,
    inputs all but the last token, targets all but the first, weight 1 on the answer and
    ``<eos>`` targets only (the layout of ``Gemma3CausalLMPreprocessor``, for any Gemma tokeniser)."""
    prompts, responses = list(prompts), list(responses)
    if len(prompts) != len(responses):
        raise LLMError(f"{len(prompts)} prompts but {len(responses)} responses")
    rows = [
        ([tokenizer.start_token_id] + p, r + [tokenizer.end_token_id])
        for p, r in zip(token_lists(tokenizer, prompts), token_lists(tokenizer, responses))
    ]
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
    """Fine-tuning on the training split with ``fit``, validated on the validation split: Adam with
    a linear warm-up and cosine decay to zero, the loss on the answer tokens. Trains whatever is
    trainable (``enable_lora`` first for LoRA; without it, every weight: the full control).
    ``sequence_length`` defaults to the shortest that holds every example."""
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
        )
    return FineTuning(
        history={k: [float(v) for v in vs] for k, vs in history.history.items()},
        epochs=int(epochs),
        steps=steps,
        seconds=time.perf_counter() - start,
        sequence_length=sequence_length,
        trainable_params=trainable_count(model),
    )


# ---------------------------------------------------------------------------------------------
# Generation and evaluation


def generate(model, prompts, max_new_tokens: int = 5, batch_size: int = 64) -> list[str]:
    """Greedy completions of ``prompts`` (the prompt left out), stopped at ``<eos>`` /
    ``<end_of_turn>`` or after ``max_new_tokens`` tokens.

    Prompts are packed as ``<bos> prompt``, padded to one length (a multiple of 8) in batches of
    a fixed size (the last padded with copies), so the compiled generate function is traced once
    per length; greedy decoding makes each completion independent of its batch.
    """
    if max_new_tokens < 1:
        raise LLMError(f"max_new_tokens must be at least 1. Received: max_new_tokens={max_new_tokens}")
    prompts = list(prompts)
    if not prompts:
        return []
    tokenizer = model.preprocessor.tokenizer
    rows = [[tokenizer.start_token_id] + p for p in token_lists(tokenizer, prompts)]
    length = 8 * math.ceil((max(len(r) for r in rows) + max_new_tokens) / 8)
    stops = stop_ids(tokenizer)
    texts = []
    with Detached(model):
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
                ids = []
                for token in generated[i, len(row) :]:
                    if int(token) in stops:
                        break
                    ids.append(int(token))
                ids = ids[:max_new_tokens]
                texts.append(str(tokenizer.detokenize(ids)) if ids else "")
    return texts


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
        prompts = [prompt_text(e, template) for e in split.expressions]
        generated = generate(model, prompts, max_new_tokens=max_new_tokens, batch_size=batch_size)
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


def llm_record(info: dict, lora_rank: int | None, tuning: FineTuning, evaluation: Evaluation, **extra) -> dict:
    """The ``"llm"`` entry of a notebook's metrics.json (what ``predcalc report`` reads)."""
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
        **extra,
    }
    return json.loads(json.dumps(record, default=float))


def full_finetune_control(protocol, test_sets: dict, *, architecture, seed, template, max_new_tokens, **fit):
    """The same tiny model with every weight trained (``fit``: ``fine_tune``'s epochs, batch_size,
    learning_rate, sequence_length); returns ``(record, tuning)``."""
    model, info = load_model(
        "", texts=arithmetic_corpus(protocol.train, template), architecture=architecture, seed=seed
    )
    tuning = fine_tune(model, protocol, seed=seed, template=template, **fit)
    evaluation = evaluate(model, test_sets, template=template, max_new_tokens=max_new_tokens)
    info = {**info, "label": info["label"] + ", all weights trained (control)"}
    return llm_record(info, None, tuning, evaluation, learning_rate=fit["learning_rate"]), tuning


def plot_loss(history: dict, title: str):
    """Training and validation loss per epoch (log scale); returns ``(figure, axis)``."""
    import matplotlib.pyplot as plt  # figures only where one is drawn

    figure, axis = plt.subplots(figsize=(6, 3.5))
    epochs_axis = np.arange(1, len(history["loss"]) + 1)
    axis.plot(epochs_axis, history["loss"], label="training")
    axis.plot(epochs_axis, history["val_loss"], label="validation")
    axis.set(xlabel="epoch", ylabel="answer-token cross-entropy", yscale="log")
    axis.set_title(title, fontsize=9)
    axis.legend()
    axis.grid(alpha=0.3)
    figure.tight_layout()
    return figure, axis


# ---------------------------------------------------------------------------------------------
# The exact score in one teacher-forced pass (the packing: ``deploy.pack``)


def answer_logits(backbone, token_ids, padding_mask, positions):
    """Next-token logits at ``positions`` only: (batch, k, vocabulary)."""
    hidden = backbone({"token_ids": token_ids, "padding_mask": padding_mask})
    picked = tf.gather(hidden, positions, batch_dims=1)
    logits = backbone.token_embedding(picked, reverse=True)
    cap = getattr(backbone, "final_logit_soft_cap", None)
    if cap:
        logits = tf.tanh(logits / cap) * cap
    return logits


def exact_correct(
    model,
    split: Split,
    template: str = DEFAULT_TEMPLATE,
    batch_size: int = 32,
    progress: bool = False,
    response: str = "answer",
):
    """For each expression, whether greedy decoding writes exactly its answer and stops (a bool array).
    In the scratchpad format, every running total must be right as well as the answer.

    One teacher-forced pass: greedy decoding writes the answer and stops exactly when, at every answer
    position, the most likely next token is the answer's next token (the last being ``<eos>``, or
    ``<end_of_turn>``, the other token ``generate`` stops on); :func:`greedy_agreement` checks it.
    """
    tokenizer = model.preprocessor.tokenizer
    data = pack(tokenizer, split, template, response=response)
    stops = np.array(stop_ids(tokenizer))
    eos = int(tokenizer.end_token_id)
    backbone = model.backbone

    @tf.function(reduce_retracing=True)
    def predict(token_ids, padding_mask, positions):
        return tf.argmax(answer_logits(backbone, token_ids, padding_mask, positions), axis=-1, output_type=tf.int32)

    n = len(split)
    correct = np.zeros(n, dtype=bool)
    for begin in tqdm(range(0, n, batch_size), desc=f"score {split.name}", disable=not progress, leave=False):
        idx = np.arange(begin, min(begin + batch_size, n))
        full = np.concatenate([idx, np.full(batch_size - len(idx), idx[0])])  # one shape, one trace
        predicted = predict(data.token_ids[full], data.padding_mask[full], data.positions[full]).numpy()[: len(idx)]
        targets, weights = data.targets[idx], data.weights[idx] > 0
        match = predicted == targets
        # the other stop token in place of <eos> stops decoding all the same
        match |= (targets == eos) & np.isin(predicted, stops)
        correct[idx] = np.all(match | ~weights, axis=1)
    return correct


def exact_accuracy(
    model,
    sets: dict,
    template: str = DEFAULT_TEMPLATE,
    batch_size: int = 32,
    progress: bool = True,
    response: str = "answer",
) -> dict:
    """``{name: {"accuracy", "correct", "n"}}`` for every split in ``sets``."""
    out = {}
    for name, split in sets.items():
        correct = exact_correct(model, split, template, batch_size, progress, response)
        out[name] = {"accuracy": float(correct.mean()), "correct": int(correct.sum()), "n": len(split)}
    return out


def greedy_agreement(
    model, split: Split, template: str = DEFAULT_TEMPLATE, batch_size: int = 16, response: str = "answer"
) -> dict:
    """Decode ``split`` with ``generate`` and compare with :func:`exact_correct`."""
    prompts, responses = prompts_and_answers(split, template, response)
    longest = max(len(r) for r in responses)  # characters: at least as many as tokens
    generated = generate(model, prompts, max_new_tokens=max(6, longest + 2), batch_size=batch_size)
    # decoding is right when it writes the whole response (a scratchpad with every total)
    by_decoding = np.array([g.strip() == r.strip() for g, r in zip(without_special_tokens(generated), responses)])
    by_pass = exact_correct(model, split, template, batch_size, response=response)
    return {
        "n": len(split),
        "agree": int((by_decoding == by_pass).sum()),
        "decoding_accuracy": float(by_decoding.mean()),
        "pass_accuracy": float(by_pass.mean()),
    }
