"""The text side of the LoRA Gemma study (:mod:`predcalc.studies.llm`): prompts, answers, token ids,
subsamples of a split and the exact accuracy of generated answers. NumPy only (no Keras), so what
reads or scores answers needs no model.
"""

from __future__ import annotations

import re

import numpy as np

from predcalc.data import Split

DEFAULT_TEMPLATE = "{expression} ="
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
