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
