"""Generation in the LoRA Gemma study (:mod:`predcalc.studies.llm`): greedy decoding with Keras, the
evaluation on test sets, and the LiteRT file of the logits function with greedy decoding around it
(keras-hub 0.32 does not export ``generate()`` and its key/value cache).
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import tensorflow as tf

from predcalc.studies.llm_models import Detached
from predcalc.studies.llm_text import DEFAULT_TEMPLATE, LLMError, answer_accuracy, prompt_text, subsample, token_lists


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
                ids = _completion_ids(generated[i], len(row), stops)[:max_new_tokens]
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
    with Detached(model):
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
        self.stops = stop_ids(tokenizer)

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
