"""The models of the LoRA Gemma study (:mod:`predcalc.studies.llm`): the tiny Gemma 3 (or Gemma) built
here with its own SentencePiece tokeniser, a keras-hub preset read from disk, LoRA adapters, and the
adapted model saved and put back together. Nothing is downloaded.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import keras
import keras_hub
import numpy as np
import sentencepiece

from predcalc.studies.llm_text import LLMError

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
