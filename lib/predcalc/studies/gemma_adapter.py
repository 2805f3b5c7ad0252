"""``predcalc predict`` / ``evaluate`` with the fine-tuned Gemma 3 270M: base weights + LoRA adapter.

The repository keeps the LoRA adapter only (``seed_K.lora.h5``, about a megabyte, with
``seed_K.json`` beside it: rank, targets, prompt template), not the merged weights. The model is
rebuilt from the installed base weights (``studies.gemma_weights``: the GGUF package, converted
once into a cached keras-hub preset) plus the adapter. ``--model`` takes the adapter file or the
run folder, whose ``gemma_adapter.json`` names the adapter the findings use.

Light at import (standard library and NumPy): Keras and keras-hub are imported when a model is
built.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

RUN_INFO = "gemma_adapter.json"  # in a run folder: {"adapter": "adapters/seed_0.lora.h5", ...}
SUFFIX = ".lora.h5"


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
    from predcalc.studies import gemma_weights, llm  # Keras and keras-hub: only where a model is built

    adapter = adapter_file(path)
    info = description(adapter)
    model = gemma_weights.load()
    llm.enable_lora(model, int(info["rank"]), list(info["targets"]))
    model.backbone.load_lora_weights(str(adapter))
    return model, info


class GemmaAdapter:
    """The Predictor interface (``name``, ``check_answer``, ``predict``) over the fine-tuned Gemma."""

    def __init__(self, path, batch_size: int = 16):
        self.path = Path(str(path))
        self.model, self.info = rebuild(self.path)
        self.batch_size = int(batch_size)

    @property
    def name(self) -> str:
        return f"Gemma 3 270M + LoRA ({adapter_file(self.path).name})"

    def check_answer(self, exact) -> None:
        """Any integer can be written; a fraction cannot."""
        if getattr(exact, "denominator", 1) != 1:
            raise GemmaAdapterError(f"the fine-tuned Gemma writes integers only; the exact value is {exact}")

    def answers(self, expressions) -> list[str]:
        """The generated answer text of each expression (greedy decoding)."""
        from predcalc.studies import llm  # Keras and keras-hub: only where a model runs

        prompts = [llm.prompt_text(e, self.info.get("template", llm.DEFAULT_TEMPLATE)) for e in expressions]
        return llm.generate(self.model, prompts, max_new_tokens=8, batch_size=self.batch_size)

    def predict(self, expressions) -> np.ndarray:
        """Parsed answers as floats; NaN where the model wrote no single integer."""
        from predcalc.studies import llm  # Keras and keras-hub: only where a model runs

        parsed = [llm.parse_answer(text) for text in self.answers(list(expressions))]
        return np.array([np.nan if p is None else float(p) for p in parsed], dtype=np.float64)


class GGUFGemma:
    """The Predictor interface over a GGUF file run by llama.cpp (``llama-cpp-python``): the merged
    fine-tuned model as a Jetson runs small language models. Greedy decoding, ``threads`` threads.

    The file must be one this project wrote (``gemma_weights.write_gguf``), or any Gemma GGUF
    trained on the same prompt, ``"3 - -2 + 4 ="`` -> ``" 9"``."""

    def __init__(self, path, threads: int = 2, template: str | None = None, context: int = 128):
        try:
            from llama_cpp import Llama  # llama.cpp's Python binding: the optional extra
        except ImportError as error:
            raise GemmaAdapterError("running a .gguf file needs llama-cpp-python: pip install '.[llama]'") from error
        import time

        from predcalc.studies import llm  # the prompt and answer text (no Keras needed)

        self.path, self.threads = Path(str(path)), int(threads)
        if not self.path.is_file():
            raise GemmaAdapterError(f"no GGUF file at {self.path}")
        self.template = template or llm.DEFAULT_TEMPLATE
        started = time.perf_counter()
        self.llama = Llama(
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

    def check_answer(self, exact) -> None:
        if getattr(exact, "denominator", 1) != 1:
            raise GemmaAdapterError(f"the fine-tuned Gemma writes integers only; the exact value is {exact}")

    def answers(self, expressions, max_new_tokens: int = 8) -> list[str]:
        """The generated text of each expression: greedy, up to ``max_new_tokens`` tokens."""
        import time

        from predcalc.studies import llm

        texts = []
        for expression in expressions:
            started = time.perf_counter()
            result = self.llama.create_completion(
                llm.prompt_text(expression, self.template), max_tokens=max_new_tokens, temperature=0.0, top_k=1
            )
            self.decode_seconds += time.perf_counter() - started
            self.generated_tokens += int(result["usage"]["completion_tokens"])
            texts.append(result["choices"][0]["text"])
        return texts

    def predict(self, expressions) -> np.ndarray:
        from predcalc.studies import llm

        parsed = [llm.parse_answer(text) for text in self.answers(list(expressions))]
        return np.array([np.nan if p is None else float(p) for p in parsed], dtype=np.float64)
