"""The fine-tuned Gemma 3 270M outside Keras: a LiteRT file of its next-token logits, checked.

keras-hub 0.32 exports no ``generate()`` loop, so the file holds one function: token ids and
padding mask of one padded row (fixed length) and a position -> the next-token logits at that
position (the output head runs at that one position only). :class:`LiteRTGemma` decodes greedily
around it in Python without a key/value cache (each new token re-runs the padded row; answers
are a few tokens). The base weights and the LoRA update are folded into the file's constants.

:func:`check` compares its answers with Keras' ``generate()`` on the same expressions and
times loading and decoding on this machine.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from predcalc.studies import llm


class GemmaExportError(ValueError):
    """An expression too long for the file's fixed row."""


def export_litert(model, path, sequence_length: int = 32) -> dict:
    """Write the logits-at-a-position function of ``model`` as a float32 LiteRT file."""
    import keras  # the model library, only where a file is written
    import tensorflow as tf  # the converter, only where a file is written

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
        path.write_bytes(converter.convert())
    return {"path": str(path), "bytes": path.stat().st_size, "sequence_length": int(sequence_length)}


class LiteRTGemma:
    """Greedy decoding with an :func:`export_litert` file and the model's tokenizer."""

    def __init__(self, path, tokenizer, num_threads: int = 2):
        from ai_edge_litert.interpreter import Interpreter  # the runtime, only where a file is run

        started = time.perf_counter()
        self.interpreter = Interpreter(model_path=str(path), num_threads=num_threads)
        self.interpreter.allocate_tensors()
        self.load_seconds = time.perf_counter() - started
        inputs = {d["name"]: d for d in self.interpreter.get_input_details()}
        self.inputs = {
            key: next(d for name, d in inputs.items() if key in name)
            for key in ("token_ids", "padding_mask", "position")
        }
        self.output = self.interpreter.get_output_details()[0]
        self.length = int(self.inputs["token_ids"]["shape"][1])
        self.tokenizer = tokenizer
        self.stops = set(llm.stop_ids(tokenizer))
        self.generated_tokens = 0

    def next_token(self, tokens: np.ndarray, position: int) -> int:
        mask = (np.arange(self.length) <= position).astype("int32")[None, :]
        self.interpreter.set_tensor(self.inputs["token_ids"]["index"], tokens)
        self.interpreter.set_tensor(self.inputs["padding_mask"]["index"], mask)
        self.interpreter.set_tensor(self.inputs["position"]["index"], np.array([position], dtype="int32"))
        self.interpreter.invoke()
        return int(np.argmax(self.interpreter.get_tensor(self.output["index"]).reshape(-1)))

    def generate(self, prompts, max_new_tokens: int = 6) -> list[str]:
        texts = []
        for row in llm.token_lists(self.tokenizer, prompts):
            row = [self.tokenizer.start_token_id] + row
            if len(row) + max_new_tokens > self.length + 1:
                raise GemmaExportError(
                    f"the prompt needs {len(row) + max_new_tokens} positions; the file has {self.length}"
                )
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


def check(model, path, expressions, template: str = llm.DEFAULT_TEMPLATE, max_new_tokens: int = 6) -> dict:
    """The file's answers against Keras' on ``expressions``; size, load time, tokens per second."""
    prompts = [llm.prompt_text(e, template) for e in expressions]
    started = time.perf_counter()
    keras_texts = llm.generate(model, prompts, max_new_tokens=max_new_tokens, batch_size=16)
    keras_seconds = time.perf_counter() - started
    runner = LiteRTGemma(path, model.preprocessor.tokenizer)
    started = time.perf_counter()
    file_texts = runner.generate(prompts, max_new_tokens=max_new_tokens)
    seconds = time.perf_counter() - started
    keras_answers = [llm.parse_answer(t) for t in keras_texts]
    file_answers = [llm.parse_answer(t) for t in file_texts]
    same = sum(a == b for a, b in zip(keras_answers, file_answers))
    return {
        "format": "LiteRT (float32)",
        "n": len(expressions),
        "same": int(same),
        "same_text": int(sum(a == b for a, b in zip(keras_texts, file_texts))),
        "differing": [
            {"expression": e, "keras": k, "file": f}
            for e, k, f in zip(expressions, keras_texts, file_texts)
            if llm.parse_answer(k) != llm.parse_answer(f)
        ][:10],
        "size_mb": round(Path(path).stat().st_size / 1e6, 1),
        "load_seconds": round(runner.load_seconds, 2),
        "generated_tokens": runner.generated_tokens,
        "tokens_per_second": round(runner.generated_tokens / seconds, 2),
        "decode_seconds": round(seconds, 1),
        "keras_seconds_batched": round(keras_seconds, 1),
        "threads": 2,
    }
