"""The fine-tuned language models outside training, light at import (standard library and NumPy):
their prompt and answer text and its scoring, the LoRA adapter files and the command line's
predictors over them (``predcalc predict`` / ``evaluate``), and the LiteRT file.

The repository keeps the LoRA adapter only (``seed_K.lora.h5``, about a megabyte, with
``seed_K.json`` beside it: rank, targets, prompt template). :class:`GemmaAdapter` rebuilds the model
from the installed base weights (``gemma_weights``) plus the adapter; ``--model`` takes the adapter
file or the run folder, whose ``gemma_adapter.json`` names the adapter. :class:`GGUFGemma` runs a
merged GGUF file with llama.cpp, as a Jetson runs small language models.

keras-hub 0.32 exports no ``generate()`` loop, so the LiteRT file holds the next-token logits at one
position of a padded row; :class:`LiteRTGreedy` decodes greedily around it in Python.

Keras, keras-hub, TensorFlow, h5py and llama.cpp are imported where a model is built, run or written.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from predcalc.data.expressions import running_totals

if TYPE_CHECKING:
    from predcalc.data import Split

DEFAULT_TEMPLATE = "{expression} ="
RUN_INFO = "gemma_adapter.json"  # in a run folder: {"adapter": "adapters/seed_0.lora.h5", ...}
SUFFIX = ".lora.h5"
_ANSWER = re.compile(r"[+-]?\d+")
_SPECIAL = re.compile(r"<(?:end_of_turn|start_of_turn|eos|bos|pad|unk)>")


class LLMError(ValueError):
    """A bad model source or setting for LLM fine-tuning."""


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
    anything else around the number makes the answer unparseable.
    """
    cleaned = _SPECIAL.sub("", str(text)).strip()
    return int(cleaned) if _ANSWER.fullmatch(cleaned) else None


def without_special_tokens(texts) -> list[str]:
    """Each text with ``<eos>``, ``<end_of_turn>`` and the other special tokens removed."""
    return [_SPECIAL.sub("", str(text)) for text in texts]


def arithmetic_corpus(split: Split, template: str = DEFAULT_TEMPLATE) -> list[str]:
    """The tiny tokeniser's training lines: prompt and answer of each example, and a last line
    with every digit and operator (no test answer meets an unknown character)."""
    lines = [f"{prompt_text(e, template)} {answer_text(v)}" for e, v in zip(split.expressions, split.values)]
    return lines + ["0 1 2 3 4 5 6 7 8 9 + - ="]


def token_lists(tokenizer, texts) -> list[list[int]]:
    """Token ids of each text, as Python lists."""
    out = tokenizer(list(texts))
    if hasattr(out, "to_list"):
        out = out.to_list()
    return [[int(i) for i in np.asarray(row).reshape(-1)] for row in out]


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


def answer_accuracy(generated, truths) -> tuple[float, int, list]:
    """``(accuracy, unparseable_count, parsed_answers)``; an unparseable generation is wrong."""
    generated, truths = list(generated), list(truths)
    if len(generated) != len(truths):
        raise LLMError(f"{len(generated)} generations but {len(truths)} answers")
    if not truths:
        raise LLMError("answer_accuracy needs at least one example")
    parsed = [parse_answer(g) for g in generated]
    correct = [p is not None and p == int(round(float(t))) for p, t in zip(parsed, truths)]
    return float(np.mean(correct)), sum(p is None for p in parsed), parsed


def stop_ids(tokenizer) -> list[int]:
    """``<eos>``, and ``<end_of_turn>`` where the vocabulary has it."""
    stops = {int(tokenizer.end_token_id)}
    try:
        turn = int(tokenizer.token_to_id("<end_of_turn>"))
        if tokenizer.id_to_token(turn) == "<end_of_turn>":
            stops.add(turn)
    except (KeyError, ValueError, IndexError):  # a vocabulary without turn markers
        pass
    return sorted(stops)


RESPONSES = ("answer", "scratchpad")  # what the model is trained to write after the prompt


def answer_response(value) -> str:
    """The trained answer text: a space, then the integer (" 9", " -12")."""
    return " " + answer_text(value)


def scratchpad_response(expression: str) -> str:
    """The running total after each term from the second on, the last being the answer:
    ``"-3 + 4 - 2"`` -> ``" 1 = -1"`` (the prompt's ``=`` before it: ``-3 + 4 - 2 = 1 = -1``)."""
    return " " + " = ".join(answer_text(total) for total in running_totals(expression))


def response_text(expression: str, value, response: str = "answer") -> str:
    """What the model writes after the prompt in the ``response`` format (``RESPONSES``)."""
    if response == "answer":
        return answer_response(value)
    if response == "scratchpad":
        return scratchpad_response(expression)
    raise LLMError(f"response must be one of {RESPONSES}. Received: response={response!r}")


def final_answer(text: str, response: str = "answer") -> int | None:
    """The integer a generation states as its answer: the whole text, or after a scratchpad's last ``=``."""
    return parse_answer(str(text).rsplit("=", 1)[-1] if response == "scratchpad" else text)


def prompts_and_answers(split: Split, template: str = DEFAULT_TEMPLATE, response: str = "answer"):
    return (
        [prompt_text(e, template) for e in split.expressions],
        [response_text(e, v, response) for e, v in zip(split.expressions, split.values)],
    )


@dataclasses.dataclass
class Packed:
    """Token rows ``<bos> prompt answer <eos>`` (inputs), and each row's answer positions."""

    token_ids: np.ndarray  # (n, length) int32
    padding_mask: np.ndarray  # (n, length) int32
    positions: np.ndarray  # (n, k) int32: the input positions whose next token is an answer token
    targets: np.ndarray  # (n, k) int32: those next tokens (answer tokens, then <eos>)
    weights: np.ndarray  # (n, k) float32: 1 where a target is real, 0 where padded


def pack(
    tokenizer, split: Split, template: str = DEFAULT_TEMPLATE, length: int | None = None, response: str = "answer"
) -> Packed:
    """The split packed for training or teacher-forced scoring (lengths rounded up to 8)."""
    prompts, answers = prompts_and_answers(split, template, response)
    rows = [
        ([tokenizer.start_token_id] + p, r + [tokenizer.end_token_id])
        for p, r in zip(token_lists(tokenizer, prompts), token_lists(tokenizer, answers))
    ]
    needed = max(len(p) + len(r) for p, r in rows) - 1
    length = int(length or 8 * math.ceil(needed / 8))
    if needed > length:
        raise LLMError(f"length={length} is too short: the longest example needs {needed}")
    k = max(len(r) for _, r in rows)
    n = len(rows)
    token_ids = np.full((n, length), tokenizer.pad_token_id, dtype="int32")
    positions = np.zeros((n, k), dtype="int32")
    targets = np.full((n, k), tokenizer.pad_token_id, dtype="int32")
    weights = np.zeros((n, k), dtype="float32")
    for i, (p, r) in enumerate(rows):
        sequence = (p + r)[:-1]  # the last target (<eos>) is never an input
        token_ids[i, : len(sequence)] = sequence
        positions[i, : len(r)] = np.arange(len(p) - 1, len(p) - 1 + len(r))
        targets[i, : len(r)] = r
        weights[i, : len(r)] = 1.0
    padding_mask = (np.arange(length)[None, :] < np.array([len(p) + len(r) - 1 for p, r in rows])[:, None]).astype(
        "int32"
    )
    return Packed(token_ids, padding_mask, positions, targets, weights)


# ---------------------------------------------------------------------------------------------
# Adapter files and the command line's predictors


class GemmaAdapterError(ValueError):
    """A path that is not a Gemma adapter, or an adapter without its description."""


def is_gemma_adapter(path) -> bool:
    """Whether ``path`` is a LoRA adapter file or a run folder that names one."""
    path = Path(str(path))
    return path.name.endswith(SUFFIX) or (path.is_dir() and (path / RUN_INFO).is_file())


def adapter_file(path) -> Path:
    """The adapter file ``path`` stands for (itself, or the one its run folder names)."""
    path = Path(str(path))
    if path.is_dir():
        info = json.loads((path / RUN_INFO).read_text())
        path = path / info["adapter"]
    if not path.is_file():
        raise FileNotFoundError(f"no LoRA adapter file at {path}")
    return path


def description(adapter: Path) -> dict:
    """``seed_K.json`` beside ``seed_K.lora.h5``: rank, targets and prompt template."""
    sidecar = adapter.with_name(adapter.name[: -len(SUFFIX)] + ".json")
    if not sidecar.is_file():
        raise GemmaAdapterError(f"{adapter.name} has no {sidecar.name} beside it (rank, targets, template)")
    return json.loads(sidecar.read_text())


def write_description(adapter: Path, rank: int, targets, template: str, **extra) -> Path:
    sidecar = adapter.with_name(adapter.name[: -len(SUFFIX)] + ".json")
    record = {"rank": int(rank), "targets": list(targets), "template": template, **extra}
    sidecar.write_text(json.dumps(record, indent=1) + "\n")
    return sidecar


def rebuild(path):
    """The fine-tuned model: the base Gemma 3 270M with the adapter put back on; and its description."""
    from predcalc.llm import finetune, weights  # Keras and keras-hub: only where a model is built

    adapter = adapter_file(path)
    info = description(adapter)
    model = weights.load()
    finetune.enable_lora(model, int(info["rank"]), list(info["targets"]))
    model.backbone.load_lora_weights(str(adapter))
    return model, info


class _Predictor:
    """The Predictor interface (``name``, ``check_answer``, ``predict``) over generated answers."""

    def check_answer(self, exact) -> None:
        """Any integer can be written; a fraction cannot."""
        if getattr(exact, "denominator", 1) != 1:
            raise GemmaAdapterError(f"the fine-tuned Gemma writes integers only; the exact value is {exact}")

    def predict(self, expressions) -> np.ndarray:
        """Parsed answers as floats; NaN where the model wrote no single integer."""
        parsed = [parse_answer(text) for text in self.answers(list(expressions))]
        return np.array([np.nan if p is None else float(p) for p in parsed], dtype=np.float64)


class GemmaAdapter(_Predictor):
    """The fine-tuned Gemma: base weights + the LoRA adapter ``path`` stands for, greedy decoding."""

    def __init__(self, path, batch_size: int = 16):
        self.path = Path(str(path))
        self.model, self.info = rebuild(self.path)
        self.batch_size = int(batch_size)

    @property
    def name(self) -> str:
        return f"Gemma 3 270M + LoRA ({adapter_file(self.path).name})"

    def answers(self, expressions) -> list[str]:
        """The generated answer text of each expression (greedy decoding)."""
        from predcalc.llm import finetune  # Keras and keras-hub: only where a model runs

        prompts = [prompt_text(e, self.info.get("template", DEFAULT_TEMPLATE)) for e in expressions]
        return finetune.generate(self.model, prompts, max_new_tokens=8, batch_size=self.batch_size)


_LOG_CALLBACKS = []  # llama.cpp keeps a pointer to the callback: it must outlive every call


def _quiet_llama_cpp(llama_cpp) -> None:
    """llama.cpp's C log (its loader, its caches) off: the terminal shows answers only."""
    if not _LOG_CALLBACKS:
        _LOG_CALLBACKS.append(llama_cpp.llama_log_callback(lambda level, text, data: None))
        llama_cpp.llama_log_set(_LOG_CALLBACKS[0], None)


class GGUFGemma(_Predictor):
    """A GGUF file run by llama.cpp (``llama-cpp-python``), greedy, on ``threads`` threads: one this
    project wrote (``weights.write_gguf``), or any Gemma GGUF trained on the same prompt."""

    def __init__(self, path, threads: int = 2, template: str | None = None, context: int = 128):
        try:
            import llama_cpp  # llama.cpp's Python binding: the optional extra
        except ImportError as error:
            raise GemmaAdapterError("running a .gguf file needs llama-cpp-python: pip install '.[llama]'") from error
        _quiet_llama_cpp(llama_cpp)
        self.path, self.threads = Path(str(path)), int(threads)
        if not self.path.is_file():
            raise GemmaAdapterError(f"no GGUF file at {self.path}")
        self.template = template or DEFAULT_TEMPLATE
        started = time.perf_counter()
        self.llama = llama_cpp.Llama(
            model_path=str(self.path),
            n_ctx=context,
            n_threads=self.threads,
            n_threads_batch=self.threads,
            verbose=False,
        )
        self.load_seconds = time.perf_counter() - started
        self.generated_tokens = 0
        self.decode_seconds = 0.0

    @property
    def name(self) -> str:
        return f"Gemma 3 270M + LoRA, merged ({self.path.name}, llama.cpp)"

    def answers(self, expressions, max_new_tokens: int = 8) -> list[str]:
        """The generated text of each expression: greedy, up to ``max_new_tokens`` tokens."""
        texts = []
        for expression in expressions:
            started = time.perf_counter()
            result = self.llama.create_completion(
                prompt_text(expression, self.template), max_tokens=max_new_tokens, temperature=0.0, top_k=1
            )
            self.decode_seconds += time.perf_counter() - started
            self.generated_tokens += int(result["usage"]["completion_tokens"])
            texts.append(result["choices"][0]["text"])
        return texts


def publish(record: dict, work, output, chosen_seed: int | None = None) -> dict:
    """Keep the LoRA adapter of ``chosen_seed`` (default the first seed: chosen before any score)
    in ``output/adapters``, stored as float16 to keep the repository small, with its description;
    ``gemma_adapter.json`` names it for ``predcalc --model <output>``."""
    import h5py  # the adapter's file format, only where one is written

    from predcalc.llm.weights import LABEL

    work, output = Path(work), Path(output)
    chosen = record["seeds"][0] if chosen_seed is None else next(s for s in record["seeds"] if s["seed"] == chosen_seed)
    folder = output / "adapters"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / chosen["adapter"]
    with h5py.File(work / "adapters" / chosen["adapter"], "r") as source, h5py.File(target, "w") as store:

        def copy(name, item):
            if isinstance(item, h5py.Group):
                store.require_group(name)
            else:
                values = item[()]
                store.create_dataset(name, data=values.astype(np.float16) if values.dtype == np.float32 else values)
            store[name].attrs.update(dict(item.attrs))

        store.attrs.update(dict(source.attrs))
        source.visititems(copy)
    write_description(
        target,
        chosen["recipe"]["rank"],
        chosen["recipe"]["targets"],
        DEFAULT_TEMPLATE,
        seed=chosen["seed"],
        base=LABEL,
        stored_as="float16 (trained in float32)",
    )
    info = {"adapter": f"adapters/{chosen['adapter']}", "seed": chosen["seed"], "base": LABEL}
    (output / RUN_INFO).write_text(json.dumps(info, indent=1) + "\n")
    return info


def load_stage(path: Path):
    """A stored stage of a resumable study (JSON), or None."""
    return json.loads(path.read_text()) if path.is_file() else None


def store_stage(path: Path, record: dict) -> dict:
    """``record`` stored as ``path`` (written atomically); returns it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1, default=float))
    tmp.replace(path)
    return record


def export_expressions(protocol, n: int = 200, seed: int = 0) -> list[str]:
    """``n`` expressions for the export check: about a third from each test set (seeded)."""
    parts = [n - 2 * (n // 3), n // 3, n // 3]
    return [
        e
        for name, k in zip(("in", "out", "long"), parts)
        for e in subsample(protocol.test_sets()[name], k, seed).expressions
    ]


def export_stage(protocol, work, adapter, n: int = 200) -> dict:
    """The fine-tuned model as a LiteRT file, checked against Keras on ``n`` expressions (stored)."""
    work = Path(work)
    stored = work / "export.json"
    record = load_stage(stored)
    if record is not None:
        return record
    model, _ = rebuild(adapter)
    path = work / "export" / "gemma3_270m_lora.tflite"
    started = time.perf_counter()
    export_litert(model, path, sequence_length=32)
    convert_seconds = time.perf_counter() - started
    result = check_litert(model, path, export_expressions(protocol, n))
    return store_stage(stored, {**result, "convert_seconds": round(convert_seconds, 1), "adapter": Path(adapter).name})


# ---------------------------------------------------------------------------------------------
# The LiteRT file


def export_litert(model, path, sequence_length: int = 32, quantization: str = "float32") -> dict:
    """The next-token logits at one position of a padded ``(1, sequence_length)`` row as a LiteRT
    file (builtin ops; the output head runs at that position only; base weights and LoRA folded
    into its constants). ``quantization``: ``"float32"`` or ``"int8_dynamic"`` (dynamic-range)."""
    import keras  # the model library, only where a file is written
    import tensorflow as tf  # the converter, only where a file is written

    if quantization not in ("float32", "int8_dynamic"):
        raise LLMError(f"quantization must be 'float32' or 'int8_dynamic'. Received: quantization={quantization!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    backbone = model.backbone
    shape = (1, int(sequence_length))
    signature = [
        tf.TensorSpec(shape, tf.int32, name="token_ids"),
        tf.TensorSpec(shape, tf.int32, name="padding_mask"),
        tf.TensorSpec((1,), tf.int32, name="position"),
    ]

    def logits(token_ids, padding_mask, position):
        hidden = backbone({"token_ids": token_ids, "padding_mask": padding_mask})
        return backbone.token_embedding(tf.gather(hidden, position, axis=1), reverse=True)

    archive = keras.export.ExportArchive()
    archive.track(backbone)
    archive.add_endpoint("serve", logits, input_signature=signature)
    with tempfile.TemporaryDirectory(dir=path.parent) as saved:
        archive.write_out(saved, verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(saved)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        if quantization == "int8_dynamic":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        path.write_bytes(converter.convert())
    return {"path": str(path), "bytes": path.stat().st_size, "sequence_length": int(sequence_length)}


class LiteRTGreedy:
    """Greedy decoding with an :func:`export_litert` file and the model's tokeniser, without a
    key/value cache (each new token re-runs the padded row; answers are a few tokens)."""

    def __init__(self, path, tokenizer, num_threads: int = 2):
        from ai_edge_litert.interpreter import Interpreter  # the runtime, only where a file is run

        if not Path(path).is_file():
            raise FileNotFoundError(f"no such model file: {path}")
        started = time.perf_counter()
        self.interpreter = Interpreter(model_path=str(path), num_threads=num_threads)
        self.interpreter.allocate_tensors()
        self.load_seconds = time.perf_counter() - started
        inputs = self.interpreter.get_input_details()
        self.inputs = {
            key: next(d for d in inputs if key in d["name"]) for key in ("token_ids", "padding_mask", "position")
        }
        self.output = self.interpreter.get_output_details()[0]
        self.length = int(self.inputs["token_ids"]["shape"][1])
        self.tokenizer = tokenizer
        self.stops = set(stop_ids(tokenizer))
        self.generated_tokens = 0

    def next_token(self, tokens: np.ndarray, position: int) -> int:
        mask = (np.arange(self.length) <= position).astype("int32")[None, :]
        self.interpreter.set_tensor(self.inputs["token_ids"]["index"], tokens)
        self.interpreter.set_tensor(self.inputs["padding_mask"]["index"], mask)
        self.interpreter.set_tensor(self.inputs["position"]["index"], np.array([position], dtype="int32"))
        self.interpreter.invoke()
        return int(np.argmax(self.interpreter.get_tensor(self.output["index"]).reshape(-1)))

    def generate(self, prompts, max_new_tokens: int = 5) -> list[str]:
        texts = []
        for row in token_lists(self.tokenizer, prompts):
            row = [self.tokenizer.start_token_id] + row
            if len(row) + max_new_tokens > self.length + 1:
                raise LLMError(f"the prompt needs {len(row) + max_new_tokens} positions; the file has {self.length}")
            tokens = np.full((1, self.length), self.tokenizer.pad_token_id, dtype="int32")
            tokens[0, : len(row)] = row
            new = []
            for position in range(len(row) - 1, len(row) - 1 + max_new_tokens):
                token = self.next_token(tokens, position)
                self.generated_tokens += 1
                if token in self.stops:
                    break
                new.append(token)
                if position + 1 < self.length:
                    tokens[0, position + 1] = token
            texts.append(str(self.tokenizer.detokenize(new)) if new else "")
        return texts


def agreement(expressions, keras_texts, file_texts, strip: bool = False) -> dict:
    """How a file's generated texts agree with Keras' on the same expressions: the parsed answers
    that are the same, the texts that are the same (``strip``: ignoring surrounding whitespace),
    and the first 10 expressions whose answers differ."""
    keras_answers = [parse_answer(t) for t in keras_texts]
    file_answers = [parse_answer(t) for t in file_texts]
    same_text = [(k.strip() == f.strip()) if strip else k == f for k, f in zip(keras_texts, file_texts)]
    return {
        "same": int(sum(a == b for a, b in zip(keras_answers, file_answers))),
        "same_text": int(sum(same_text)),
        "differing": [
            {"expression": e, "keras": k, "file": f}
            for e, k, f, a, b in zip(expressions, keras_texts, file_texts, keras_answers, file_answers)
            if a != b
        ][:10],
    }


def check_litert(model, path, expressions, template: str = DEFAULT_TEMPLATE, max_new_tokens: int = 6) -> dict:
    """The file's answers against Keras' on ``expressions``; size, load time, tokens per second."""
    prompts = [prompt_text(e, template) for e in expressions]
    started = time.perf_counter()
    from predcalc.llm.finetune import generate  # Keras: only where a model runs

    keras_texts = generate(model, prompts, max_new_tokens=max_new_tokens, batch_size=16)
    keras_seconds = time.perf_counter() - started
    runner = LiteRTGreedy(path, model.preprocessor.tokenizer)
    started = time.perf_counter()
    file_texts = runner.generate(prompts, max_new_tokens=max_new_tokens)
    seconds = time.perf_counter() - started
    return {
        "format": "LiteRT (float32)",
        "n": len(expressions),
        **agreement(expressions, keras_texts, file_texts),
        "size_mb": round(Path(path).stat().st_size / 1e6, 1),
        "load_seconds": round(runner.load_seconds, 2),
        "generated_tokens": runner.generated_tokens,
        "tokens_per_second": round(runner.generated_tokens / seconds, 2),
        "decode_seconds": round(seconds, 1),
        "keras_seconds_batched": round(keras_seconds, 1),
        "threads": 2,
    }


def export_and_check(model, test_sets: dict, directory, *, template, max_new_tokens, check, seed, quantizations=None):
    """LiteRT files of ``model`` (float32 and int8_dynamic), each checked against Keras on ``check``
    expressions per test set; a failed export is reported under ``error``, not raised."""
    expressions = [e for split in test_sets.values() for e in subsample(split, check, seed).expressions]
    longest = max(
        len(ids) for ids in token_lists(model.preprocessor.tokenizer, [prompt_text(e, template) for e in expressions])
    )
    length = 8 * math.ceil((longest + 1 + max_new_tokens) / 8)
    exports = {}
    for quantization in quantizations or ("float32", "int8_dynamic"):
        try:
            path = export_litert(model, Path(directory) / f"gemma_{quantization}.tflite", length, quantization)["path"]
            result = check_litert(model, path, expressions, template, max_new_tokens)
            exports[quantization] = {**result, "format": f"LiteRT ({quantization})", "sequence_length": length}
        except Exception as error:  # noqa: BLE001  the LiteRT converter raises its own classes; reported, not hidden
            exports[quantization] = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
    return exports
