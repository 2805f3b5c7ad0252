"""Every seed of the digit models scored on a suite through its exported ONNX file.

Each seed folder keeps ``scores.json``: the suite's seed, how many expressions of each set were
read, the ONNX file's SHA-256, each set's exact share, and the answers that differ from the Keras
model's on the first expressions of each set (parity). A rerun with the same file and sets reads
it instead of scoring again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from predcalc.data import digit_suite
from predcalc.deploy.digit_files import LITERT_FILE, ONNX_FILE, DigitFile

SCORES = "scores.json"
LITERT_CHECK = "litert.json"
# A decoder reads a whole sequence for every digit it writes, so a long set costs far more than a
# short one: a decoder seed that answers no expression of the set on the right exactly is not run on
# the set on the left (recorded as skipped, counted as not exact).
SKIP_UNLESS = {
    "digits_50": "digits_30",
    "digits_100": "digits_50",
    "terms_9": "terms_6",
    **{f"{edge}_30": "digits_30" for edge in ("carry_chain", "borrow_chain", "cancellation", "leading_cancel")},
}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _stored(cache: Path) -> dict:
    """A cached record (empty where there is none)."""
    return json.loads(cache.read_text()) if cache.is_file() else {}


def _matches(stored: dict, key: dict) -> bool:
    """Whether a cached record was made for ``key`` (its files' hashes, the sets and their sizes)."""
    return bool(stored) and {k: stored.get(k) for k in key} == key


def score_seed(
    folder, sets: dict, suite_seed: int, keras_check: int = 0, progress=None, cache_name: str = SCORES
) -> dict:
    """``{set: {"exact", "answered", "n"}}`` of one seed's ONNX file, cached in ``scores.json``.

    ``keras_check``: the first so many expressions of each set are also answered by the Keras
    checkpoint, and the answers that differ from the file's are counted (``parity``)."""
    folder = Path(folder)
    cache = folder / cache_name
    stored = _stored(cache)
    if not (folder / ONNX_FILE).is_file():
        if stored:  # a clone: only the recommended models' files are committed; the others' scores are
            return stored
        raise FileNotFoundError(f"{folder} holds no {ONNX_FILE} and no {cache_name}")
    digest = _sha256(folder / ONNX_FILE)
    key = {
        "suite_seed": suite_seed,
        "sizes": {k: len(v) for k, v in sets.items()},
        "onnx_sha256": digest,
        "keras_check": keras_check,
    }
    if _matches(stored, key):
        return stored
    file = DigitFile(folder)
    if keras_check and not (folder / "checkpoint.keras").is_file():  # a clone: the file alone is scored
        key["keras_check"] = keras_check = 0
    result = {**key, "sets": {}, "parity": {}}
    model = spec = None
    if keras_check:
        import keras  # the scoring machine trains too; a Jetson needs only the file above

        from predcalc.models.digits import DIGIT_MODELS  # registers the layers before loading
        from predcalc.training.digits import answers as keras_answers

        spec = DIGIT_MODELS.named(file.info["model"])
        model = keras.saving.load_model(folder / "checkpoint.keras", compile=False)
    for name, expressions in sets.items():
        before = SKIP_UNLESS.get(name)
        if before in result["sets"] and result["sets"][before]["exact"] == 0 and file.format is not None:
            result["sets"][name] = {"exact": 0.0, "answered": 0, "n": len(expressions), "skipped": f"0 % on {before}"}
            if progress is not None:
                progress(name)
            continue
        predicted = file.answers(expressions)
        answered = [p for p in predicted if p is not None]
        correct = sum(p == e.value for p, e in zip(predicted, expressions, strict=True))
        result["sets"][name] = {"exact": correct / len(expressions), "answered": len(answered), "n": len(expressions)}
        if model is not None:
            head = expressions[:keras_check]
            from_keras = keras_answers(model, spec, head)
            result["parity"][name] = {
                "checked": len(head),
                "differing": int(sum(a != b for a, b in zip(from_keras, predicted, strict=False))),
            }
        if progress is not None:
            progress(name)
    cache.write_text(json.dumps(result, indent=1) + "\n")
    return result


def litert_check(folder, sets: dict, suite_seed: int, count: int, scores: dict) -> dict | None:
    """The LiteRT file's answers against the ONNX file's on the first ``count`` expressions of each
    set that ``scores`` (the ONNX file's) did not skip: ``{set: {"checked", "differing"}}``, cached
    in ``litert.json``; None where the folder has no LiteRT file."""
    folder = Path(folder)
    cache = folder / LITERT_CHECK
    if not (folder / LITERT_FILE).is_file() or not (folder / ONNX_FILE).is_file():
        # a clone: the files of models the findings do not carry are not committed, their checks are
        return _stored(cache) or None
    key = {
        "suite_seed": suite_seed,
        "sizes": {k: min(count, len(v)) for k, v in sets.items()},
        "litert_sha256": _sha256(folder / LITERT_FILE),
        "onnx_sha256": _sha256(folder / ONNX_FILE),
    }
    stored = _stored(cache)
    if _matches(stored, key):
        return stored
    onnx, litert = DigitFile(folder), DigitFile(folder, runtime="litert")
    result = {**key, "sets": {}}
    for name, expressions in sets.items():
        if "skipped" in scores["sets"].get(name, {}):
            continue
        head = expressions[:count]
        differing = sum(a != b for a, b in zip(onnx.answers(head), litert.answers(head), strict=True))
        result["sets"][name] = {"checked": len(head), "differing": int(differing)}
    cache.write_text(json.dumps(result, indent=1) + "\n")
    return result


def suite_sets(names=None, count: int | None = None, seed: int = digit_suite.SUITE_SEED, long_count=None) -> dict:
    """The held-out suite's sets (``names``: all where None), each cut to its first ``count``, and
    a set of numbers of 20 digits or more to its first ``long_count`` (where given)."""
    sets = digit_suite.suite(seed)
    chosen = {k: v for k, v in sets.items() if names is None or k in names}
    out = {}
    for name, expressions in chosen.items():
        cap = count
        if long_count and max(len(str(abs(n))) for e in expressions for _, n in e.terms) >= 20:
            cap = min(cap or long_count, long_count)
        out[name] = expressions[:cap] if cap else expressions
    return out


def exact_seeds(values, threshold: float = 1.0) -> int:
    """How many seeds reach ``threshold`` (1.0: every expression exact)."""
    return int(np.sum(np.asarray(values) >= threshold - 1e-12))


def seeds_cell(values) -> str:
    """One table cell over seeds: every seed's exact share (%), and how many are exact on all."""
    values = list(values)
    shown = " / ".join(f"{100 * v:.1f}" for v in values)
    return f"{shown} ({exact_seeds(values)}/{len(values)} exact)"
