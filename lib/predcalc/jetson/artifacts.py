"""What is checked: the recommended artifacts, the fixed inputs, each file's digest."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from predcalc.jetson.settings import CALCULATOR_EXPRESSIONS, NOT_RECOMMENDED_FORMATS, REFERENCE_TEST_SETS

# -- what is checked -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Artifact:
    """One file to run: ``skipped`` holds the reason where it cannot be, ``not_recommended`` why it is
    run and recorded but not recommended for the Jetson (:data:`NOT_RECOMMENDED_FORMATS`)."""

    name: str  # e.g. "fnn2/model_float32.tflite"
    path: Path
    runtime: str  # "LiteRT" or "ONNX Runtime"
    note: str
    skipped: str | None = None
    not_recommended: str | None = None

    @property
    def calculator(self) -> bool:
        return self.name.startswith("calculator/")


def runtime_of(path: Path) -> str:
    return "ONNX Runtime" if path.suffix == ".onnx" else "LiteRT"


def recommended_artifacts(
    runs: Path | None = None, calculator: Path | None = None, exports: dict | None = None
) -> list[Artifact]:
    """The calculator, then each recommended export's float32 LiteRT and ONNX files (skipped, with
    the reason, where absent) and the quantised LiteRT files its export kept (marked ``use``); those
    of :data:`NOT_RECOMMENDED_FORMATS` carry the reason they are not recommended for the Jetson."""
    from predcalc.deploy.export import (  # lazy: this module also runs inside the arm64 root, stdlib only
        LITERT_FORMATS,
        ONNX_FILE,
        artifact_path,
    )
    from predcalc.deploy.predictor import CALCULATOR_MODEL
    from predcalc.paths import RUNS, relative
    from predcalc.recommended import exports as recommended_exports

    runs = RUNS if runs is None else Path(runs)
    calculator = CALCULATOR_MODEL if calculator is None else Path(calculator)
    exports = recommended_exports() if exports is None else exports

    def one(name, path, note, hint, fmt=None):
        absent = None if path.is_file() else f"no file {relative(path)} ({hint})"
        return Artifact(name, path, runtime_of(path), note, absent, NOT_RECOMMENDED_FORMATS.get(fmt))

    found = [
        one(f"calculator/{calculator.name}", calculator, "the learned calculator", "the calculator notebook exports it")
    ]
    for folder, note in exports.items():
        directory = runs / folder
        model = directory.name
        hint = f"`predcalc export {relative(directory / 'model.keras')}` writes it"
        found.append(one(f"{model}/model_float32.tflite", artifact_path(directory, "float32"), note, hint))
        found += [
            one(f"{model}/{artifact_path(directory, fmt).name}", artifact_path(directory, fmt), note, hint, fmt)
            for fmt in LITERT_FORMATS[1:]
            if artifact_path(directory, fmt).is_file()
        ]
        found.append(one(f"{model}/{ONNX_FILE}", directory / ONNX_FILE, note, hint))
    return found


def input_lines(data_seed: int = 0) -> dict[str, list[str]]:
    """The fixed inputs: the first expressions of the reference protocol's test sets (every artifact),
    and those plus :data:`CALCULATOR_EXPRESSIONS` (the calculator). Expressions only: the exact
    answers are computed by ``predcalc evaluate``."""
    from predcalc.data import reference_protocol  # lazy: this module also runs inside the arm64 root, stdlib only

    protocol = reference_protocol(data_seed)
    seed = [e for split, count in REFERENCE_TEST_SETS.items() for e in getattr(protocol, split).expressions[:count]]
    return {"seed": seed, "calculator": seed + list(CALCULATOR_EXPRESSIONS)}


def file_digest(path: Path) -> str | None:
    """The SHA-256 of a file, so a record says which bytes were checked (the artifacts are re-exported);
    None where there is no file."""
    path = Path(path)
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
