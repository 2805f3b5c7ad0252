"""Export formats, one module each; importing this package registers every one.

A format (:class:`ExportFormat`) says in one place what the rest of the pipeline needs:

- ``name``: its key in ``export.json`` and in ``predcalc export --formats``;
- ``filename``: where its artifact lies in an export directory;
- ``write(job, path)``: write the artifact (``job``: the :class:`ExportJob` of one trained model);
- ``open(path, num_threads)``: a runner, ``runner(encoded inputs) -> raw outputs``;
- ``parity``: :data:`EXACT` (must match Keras) or :data:`QUANTISED` (may lose up to
  :data:`QUANTISED_LOSS_LIMIT` of exact accuracy); ``None``: written, not checked;
- ``runtime``: its row name in ``predcalc bench`` (``None``: not timed);
- ``default``: whether :func:`predcalc.deploy.export.export_trained` writes it unless told.

``export_trained`` loops over the registry, ``predictor.Predictor`` opens a file through
:func:`for_path` and ``bench`` times each format's artifacts: a new format is one new module
here that calls :func:`register`. Modules import only NumPy at import time; each runtime is
imported inside ``open`` so the runtime-only install (NumPy + one runtime) can read artifacts.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from predcalc.errors import one_line
from predcalc.paths import ROOT
from predcalc.quiet import quiet_tensorflow
from predcalc.registry import Registry
from predcalc.training.metrics import exact_accuracy

EXACT = "exact"
QUANTISED = "quantised"
# A quantised artifact that loses more than this much exact accuracy on any test set is unsuitable
# (removed from disk, its numbers kept in export.json); an EXACT one must stay within PARITY.
QUANTISED_LOSS_LIMIT = 0.02
PARITY_ACCURACY = 0.005
PARITY_RELATIVE_DIFF = 1e-3  # of the largest |value| Keras predicts on the test sets (at least 1)
SIDECAR = "predcalc.json"
UNCONVERTIBLE = "could not be converted or run"


class ExportFormat:
    """One artifact kind: how it is written, run, checked and found. Subclass and :func:`register`."""

    name: str
    filename: str
    parity: str | None = EXACT
    runtime: str | None = None
    default: bool = True

    def path(self, directory) -> Path:
        """Where this format's artifact lies in an export directory."""
        return Path(directory) / self.filename

    def matches(self, path) -> bool:
        """Whether ``path`` is an artifact this format opens (the predictor asks)."""
        return Path(path).suffix == Path(self.filename).suffix and Path(path).is_file()

    def write(self, job: ExportJob, path: Path) -> dict:
        """Write the artifact at ``path``; the record's fields (at least ``bytes``). Raise on failure."""
        raise NotImplementedError(f"the {self.name} format has no writer")

    def open(self, path, num_threads: int = 1):
        """A runner: ``runner(encoded inputs) -> raw model outputs``, one row per input."""
        raise NotImplementedError(f"the {self.name} format has no runner")

    def artifacts(self, directory) -> list[tuple[str, Path]]:
        """``(runtime, path)`` of this format's artifacts in an export directory (``predcalc bench``)."""
        path = self.path(directory)
        return [(self.runtime, path)] if self.runtime and path.exists() else []

    def longer_inputs(self, path, info: dict) -> list[tuple[int, Path]]:
        """``(length, path)`` of sibling artifacts that take longer inputs (``predcalc.json``'s ``info``)."""
        return []

    def export(self, job: ExportJob) -> dict[str, dict]:
        """Write, check against Keras and judge the artifact: ``{name: record}``."""
        path = self.path(job.directory)
        path.unlink(missing_ok=True)
        try:
            record = {**self.write(job, path), **job.check(self.open(path)), "limits": job.limits}
        except Exception as error:  # noqa: BLE001  a converter or runtime fails its own way; the batch goes on
            return {self.name: job.failure(error, path)}
        return {self.name: self.decide(job, record, path)}

    def decide(self, job: ExportJob, record: dict, path: Path) -> dict:
        """The checked record with its verdict (:func:`verdict` under ``parity``)."""
        return job.judge(self.parity, record, path)


FORMATS = Registry("export format")


def register(fmt: ExportFormat) -> ExportFormat:
    """Add a format to the registry (its name must be new); returns it."""
    return FORMATS.add(fmt.name, fmt)


def get_format(name: str) -> ExportFormat:
    return FORMATS.named(name)


def default_formats() -> tuple[str, ...]:
    """The formats ``export_trained`` writes unless told (registration order)."""
    return tuple(name for name, fmt in FORMATS.items() if fmt.default)


def for_path(path) -> ExportFormat:
    """The registered format that opens ``path``."""
    for fmt in FORMATS.values():
        if fmt.matches(path):
            return fmt
    suffixes = sorted({Path(f.filename).suffix or f"{f.filename}/" for f in FORMATS.values()})
    raise ValueError(f"unsupported model file {Path(path).name!r}: expected one of {', '.join(suffixes)}")


def verdict(record: dict, parity: str, token_output: bool, scale: float = 1.0) -> tuple[str, str]:
    """("use" | "unsuitable", why) of one checked artifact under its format's ``parity`` policy;
    ``scale``: the largest |value| Keras predicts (a token model's answers: accuracy decides)."""
    worst = min(record["accuracy_change"].values(), default=0.0)
    if parity == EXACT:
        if worst < -PARITY_ACCURACY:
            return "unsuitable", f"loses {-100 * worst:.1f} points of exact accuracy against Keras"
        limit = PARITY_RELATIVE_DIFF * max(1.0, scale)
        if not token_output and record["max_abs_diff"] > limit:
            return "unsuitable", f"differs from Keras by {record['max_abs_diff']:.2g} (> {limit:.2g})"
        return "use", "matches Keras"
    if worst < -QUANTISED_LOSS_LIMIT:
        return "unsuitable", (
            f"loses {-100 * worst:.1f} points of exact accuracy (limit {100 * QUANTISED_LOSS_LIMIT:.0f})"
        )
    return "use", f"within {100 * QUANTISED_LOSS_LIMIT:.0f} points of Keras"


def tensorflow(purpose: str = "LiteRT export"):
    """TensorFlow, quietened, after checking this process runs Keras on it (the converters need it)."""
    import keras  # the writers only: reading an artifact needs neither Keras nor TensorFlow

    if keras.backend.backend() != "tensorflow":
        raise RuntimeError(
            f"{purpose} needs the TensorFlow backend (KERAS_BACKEND=tensorflow); "
            f"this process runs {keras.backend.backend()!r}"
        )
    import tensorflow as tf  # the TensorFlow backend's converters only; reading an artifact needs neither

    quiet_tensorflow()  # "Assets written to ..." on every export
    return tf


def input_signature(model, tf, batch: int | None = 1):
    """The model's input as one ``tf.TensorSpec`` named ``tokens``, with a fixed batch (None: any)."""
    shape = (batch, *model.inputs[0].shape[1:])
    return [tf.TensorSpec(shape, dtype=model.inputs[0].dtype, name="tokens")]


CHILD_TIMEOUT = 1800  # seconds a child conversion may take


def run_child(model, arguments: list[str], data: np.ndarray | None = None, env=None):
    """Save ``model``, run this module on it with ``arguments`` (MODEL.keras is prepended, DATA.npy
    appended when ``data`` is given) and return the finished process."""
    with tempfile.TemporaryDirectory() as scratch:
        model_file = Path(scratch) / "model.keras"
        model.save(model_file)
        extra = []
        if data is not None:
            extra = [str(Path(scratch) / "data.npy")]
            np.save(extra[0], data)
        return subprocess.run(
            [sys.executable, "-m", "predcalc.deploy.child", arguments[0], str(model_file), *arguments[1:], *extra],
            capture_output=True,
            text=True,
            env=env,
            timeout=CHILD_TIMEOUT,
        )


class ArtifactAsModel:
    """What ``spec.predict_values(model, inputs)`` calls, answered by an artifact's runner."""

    def __init__(self, run):
        self._run = run

    def predict(self, inputs, batch_size=None, verbose=0):
        return self._run(inputs)

    def __call__(self, inputs, training=False):
        return self._run(inputs)


def artifact_values(spec, run, inputs) -> np.ndarray:
    """Predicted values of an artifact, through the model's own ``predict_values``."""
    values = spec.predict_values(ArtifactAsModel(run), inputs)
    return np.asarray(values, dtype=np.float64).reshape(len(inputs), -1)[:, 0]


def error_reason(error: BaseException) -> str:
    """The error's first line, with paths inside the repository written relative to it."""
    return f"{type(error).__name__}: {one_line(str(error).replace(f'{ROOT}/', ''))}"


def input_limits(spec, tokenizer, length: int | None = None) -> dict:
    """What an artifact accepts and answers: its token (or character) length and answer digits."""
    digits = spec.answer_format.digits if spec.answer_format is not None else None
    return {
        "tokenizer": tokenizer.name,
        "max_tokens": int(length or tokenizer.length),
        "answer_digits": digits,
    }  # None: a regression output, any magnitude


@dataclasses.dataclass
class ExportJob:
    """One trained model being exported: the Keras answers every artifact is checked against.

    ``trained`` has ``spec``, ``model`` and ``tokenizer``; ``test_sets`` is ``{name: Split}``;
    ``representative`` the encoded calibration inputs; ``report`` the records written so far.
    """

    trained: object
    directory: Path
    test_sets: dict
    representative: np.ndarray
    wide_calibration_expressions: list | None = None
    report: dict = dataclasses.field(default_factory=dict)
    write_sidecar: Callable | None = None  # write_sidecar(**fields): more fields in predcalc.json

    def __post_init__(self):
        spec, tokenizer = self.trained.spec, self.trained.tokenizer
        self.encoded = {name: tokenizer.encode_batch(split.expressions) for name, split in self.test_sets.items()}
        self.keras_out = {name: spec.predict_values(self.trained.model, x) for name, x in self.encoded.items()}
        self.limits = input_limits(spec, tokenizer)
        finite = [np.abs(v[np.isfinite(v)]) for v in self.keras_out.values()]
        self.scale = max([float(f.max()) for f in finite if f.size] + [1.0])

    def check(self, runner, inputs: dict | None = None) -> dict:
        """Max abs difference from Keras and exact-accuracy change per test set of a runner."""
        diffs, change = [], {}
        for name, split in self.test_sets.items():
            values = artifact_values(self.trained.spec, runner, self.encoded[name] if inputs is None else inputs[name])
            # an answer unparseable (NaN) in both agrees; in only one, it differs without bound
            gap = np.where(
                np.isnan(values) & np.isnan(self.keras_out[name]), 0.0, np.abs(values - self.keras_out[name])
            )
            diffs.append(float(np.max(np.nan_to_num(gap, nan=np.inf))) if len(split) else 0.0)
            change[name] = exact_accuracy(split.values, values) - exact_accuracy(split.values, self.keras_out[name])
        return {"max_abs_diff": max(diffs, default=0.0), "accuracy_change": change}

    def judge(self, parity: str, record: dict, path) -> dict:
        """The record with its verdict and reason; an unsuitable artifact is removed from disk."""
        decision, reason = verdict(record, parity, self.trained.spec.answer_format is not None, self.scale)
        record.update(verdict=decision, reason=reason)
        if decision != "use":
            Path(path).unlink(missing_ok=True)
        return record

    def failure(self, error: BaseException, path, reason: str = UNCONVERTIBLE, **fields) -> dict:
        """The record of an artifact that could not be written or run (its file removed)."""
        Path(path).unlink(missing_ok=True)
        return {"error": error_reason(error), "verdict": "unsuitable", **fields, "reason": reason}


for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
