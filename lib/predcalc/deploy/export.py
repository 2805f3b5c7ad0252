"""Export a trained model for an edge device, and check every artifact against Keras.

Formats: a TensorFlow SavedModel and TFLite/LiteRT in float32, float16, dynamic-range int8
and full-integer int8 (calibrated on training expressions; float input and output). Every
``.tflite`` file is run with the LiteRT interpreter on the test sets and compared with the
Keras model: max abs difference, accuracy change and file size go into the metrics.

The artifacts are exported with a fixed batch of 1 (one expression at a time, as the
calculator uses them): recurrent layers with a flexible batch otherwise need Flex ops.
Each export directory holds ``predcalc.json``, which names the tokeniser, so
``predcalc predict`` can read any artifact.

ONNX (``model.onnx``) is written by Keras' ONNX export (tf2onnx on the TensorFlow backend) with
a flexible batch where the converter allows it, else by the PyTorch backend (torch.export and
onnxscript, batch 1) in a child process, and checked with ONNX Runtime the same way. A format
whose conversion fails is recorded with the converter's reason; the others go on.

Each format is one module of :mod:`predcalc.deploy.formats` (its writer, runner and parity
policy); :func:`export_trained` loops over them. Every artifact gets a verdict in ``export.json``: ``use``, or ``unsuitable`` with the reason (it
does not match Keras, a quantised file loses more than 2 points of exact accuracy on a test set,
or nothing was quantised); an unsuitable file is removed, its numbers kept. Full-integer int8 is
retried (16x8, wider calibration, unrolled RNN layers) before it is given up. Recurrent and scan
models also get float32 LiteRT files at longer input lengths, kept where padding is harmless.
``export_directory`` re-exports a stored ``model.keras`` (``predcalc export``) and writes
``export.json`` beside the artifacts. TF-TRT engines are built from the SavedModel by
:mod:`predcalc.deploy.tensorrt` (where TensorFlow has TensorRT, e.g. on a Jetson).
"""

from __future__ import annotations

import datetime
import json
import shutil
import types
from pathlib import Path

import numpy as np

from predcalc.data import get_tokenizer, reference_protocol
from predcalc.data.extended import ALL_OPERATORS, extended_suite, suite_protocol
from predcalc.deploy.formats import (  # noqa: F401  (the public names callers import from here)
    PARITY_ACCURACY,
    PARITY_RELATIVE_DIFF,
    QUANTISED_LOSS_LIMIT,
    SIDECAR,
    ExportJob,
    artifact_values,
    default_formats,
    get_format,
    input_limits,
)
from predcalc.deploy.formats.litert import (  # noqa: F401
    LENGTH_FACTORS,
    LITERT_FORMATS,
    LiteRTModel,
    converter_options,
    export_litert,
    length_variant_path,
)
from predcalc.deploy.formats.onnx import ONNXModel, drop_stack_traces, export_onnx, export_onnx_torch  # noqa: F401
from predcalc.deploy.formats.saved_model import SavedModelRunner  # noqa: F401
from predcalc.paths import relative, save_keras_if_changed, write_if_changed

FORMATS = default_formats()  # every registered format export_trained writes unless told
EXPORT_RECORD = "export.json"
ONNX_FILE = get_format("onnx").filename


def with_input_length(model, length: int):
    """The model rebuilt for inputs of ``length`` tokens, with the same weights (or an error);
    :func:`predcalc.models.rebuild.with_input_length`."""
    from predcalc.models.rebuild import with_input_length as rebuild  # predcalc.models imports Keras

    return rebuild(model, length)


def artifact_path(directory, fmt: str) -> Path:
    """Where ``export_trained`` writes a format in an export directory."""
    return get_format(fmt).path(directory)


def write_sidecar(directory, spec, tokenizer, extra: dict | None = None) -> Path:
    """``predcalc.json``: the model, its tokeniser and, for token-output models, the answer format."""
    path = Path(directory) / SIDECAR
    fields = {
        "model": spec.name,
        "label": spec.label,
        "tokenizer": spec.tokenizer,
        "tokenizer_config": tokenizer.get_config(),
    }
    if spec.answer_format is not None:
        fields["answer_format"] = spec.answer_format.get_config()
    if spec.float32_exact_below is not None:  # its files refuse past the bound (Predictor.check_magnitude)
        fields["float32_exact_below"] = int(spec.float32_exact_below)
    write_if_changed(path, json.dumps({**fields, **(extra or {})}, indent=2))
    return path


def export_trained(
    trained,
    directory,
    test_sets: dict,
    representative_expressions,
    formats=None,
    saved_model: bool = True,
    progress=None,
    replace: bool = True,
    wide_calibration_expressions=None,
) -> dict:
    """Export one trained model in every format and check each artifact on the test sets.

    Args:
        trained: a :class:`predcalc.training.fit.TrainedModel` (or anything with ``spec``, ``model``
            and ``tokenizer``).
        directory: where the artifacts go (replaced if it exists, unless ``replace`` is False:
            then only the artifacts written here are replaced, and ``model.keras`` stays).
        test_sets: ``{name: Split}`` to compare the artifacts with the Keras model on.
        representative_expressions: calibration inputs for full-integer int8.
        formats: names in :mod:`predcalc.deploy.formats` (default: every registered format that is
            ``default``, :data:`FORMATS` at import: LiteRT and ONNX).
        saved_model: also write the SavedModel (first, unchecked).
        progress: called with each format's name when it is done.
        wide_calibration_expressions: a second calibration set over the whole input range, tried
            when full-integer int8 loses more than :data:`QUANTISED_LOSS_LIMIT` (default: the
            training expressions and every test set's inputs).

    Every artifact is checked against Keras and given a ``verdict``: ``"use"``, or
    ``"unsuitable"`` with a ``reason``; an unsuitable file is removed from disk (its numbers stay
    in the report). Each format's module says how it retries (ONNX: tf2onnx, else the PyTorch
    backend; full-integer int8: its ladder) and what else it writes (float32 LiteRT files at
    longer input lengths for variable-length models, ``float32_len<N>``).

    Returns:
        ``{format: {"bytes", "max_abs_diff", "accuracy_change": {set: delta}, "verdict", "limits",
        ...}}`` (LiteRT formats add ``tf_select``, ONNX ``batch`` and ``converter``), or
        ``{format: {"error": reason, "verdict": "unsuitable"}}`` for a format that could not be
        converted or run.
    """
    directory = Path(directory)
    if replace and directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
    sidecar = directory / SIDECAR
    extra = json.loads(sidecar.read_text()) if not replace and sidecar.is_file() else {}
    extra.pop("litert_lengths", None)
    for old in directory.glob("model_float32_len*.tflite"):
        old.unlink()
    if trained.model.inputs[0].shape[1] is None:  # a dynamic time axis: its files read any length
        extra["any_length"] = True
    write_sidecar(directory, trained.spec, trained.tokenizer, extra)
    job = ExportJob(
        trained,
        directory,
        test_sets,
        trained.tokenizer.encode_batch(list(representative_expressions)),
        wide_calibration_expressions,
        write_sidecar=lambda **fields: write_sidecar(directory, trained.spec, trained.tokenizer, {**extra, **fields}),
    )
    for name in (["saved_model"] if saved_model else []) + list(default_formats() if formats is None else formats):
        job.report.update(get_format(name).export(job))
        if progress is not None and name != "saved_model":
            progress(name)
    return job.report


def export_results(
    results,
    directory,
    models=None,
    progress: bool = True,
    data_label: dict | None = None,
    formats=None,
    check: int = 0,
) -> dict:
    """Export the first seed of each of ``models`` (default: every model) of a
    :class:`predcalc.training.experiment.Results` into ``directory/NAME/`` (``model.keras``, the
    SavedModel and ``formats``, default :data:`FORMATS`), check them on the first ``check``
    expressions of each test set (0: every expression; nbval's smoke profile checks 10), and write
    each folder's ``export.json``, which names the data they were checked on with ``data_label``
    (default: the reference protocol's seed; an extended-suite study passes its ``suite_seed``). The
    records also go into ``results.exports``; returns them."""
    from tqdm.auto import tqdm  # not in the runtime-only install

    names = list(results.models) if models is None else [n for n in models if n in results.models]
    test_sets = results.protocol.test_sets()
    if check:
        test_sets = {name: split.subset(np.arange(len(split)) < check, split.name) for name, split in test_sets.items()}
    exports = {}
    for name in tqdm(names, desc="export", disable=not progress):
        result, target = results.models[name], Path(directory) / name
        exports[name] = export_trained(
            result.first, target, test_sets, results.protocol.train.expressions, formats=formats
        )
        save_keras_if_changed(result.first.model, target / "model.keras")
        write_export_record(target, result.spec, exports[name], data_label or {"data_seed": results.protocol.seed})
    results.exports.update(exports)
    return exports


def find_keras_models(path) -> list[Path]:
    """The ``model.keras`` files of a run directory, an export directory or a single file."""
    path = Path(path)
    if path.is_file():
        if path.suffix != ".keras":
            raise ValueError(f"expected a .keras file or a run directory, got {path}")
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"no such run directory or model file: {path}")
    for pattern in ("model.keras", "export/*/model.keras", "*/model.keras"):
        found = sorted(path.glob(pattern))
        if found:
            return found
    raise FileNotFoundError(f"no model.keras in {path}, {path}/export/*/ or {path}/*/")


def _run_record(model_path: Path) -> tuple[Path | None, dict | None]:
    """The ``metrics.json`` of the run an exported model belongs to (RUN/export/NAME/model.keras)."""
    candidate = model_path.parent.parent.parent / "metrics.json"
    if model_path.parent.parent.name == "export" and candidate.is_file():
        return candidate, json.loads(candidate.read_text())
    return None, None


def write_export_record(directory, spec, report: dict, data_label: dict, source=None) -> dict:
    """Write ``export.json`` beside the artifacts: each artifact's size, parity against Keras,
    exact-accuracy change, input limits and verdict (``report``, from :func:`export_trained`),
    with the model, the data it was checked on and the Keras that checked it. Returns the record."""
    import keras  # the Keras that checked the artifacts; the runtime-only install never writes records

    directory = Path(directory)
    result = {
        "model": spec.name,
        "label": spec.label,
        "source": relative(source or directory / "model.keras"),
        **data_label,
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "formats": report,
    }
    write_if_changed(directory / EXPORT_RECORD, json.dumps(result, indent=1))
    return result


def export_directory(model_path, formats=FORMATS, data_seed: int | None = None, progress=None) -> dict:
    """Re-export a stored ``model.keras`` in every format beside it and check each artifact.

    The tokeniser comes from ``predcalc.json`` beside the file; the test sets and calibration
    expressions from the reference protocol with ``data_seed`` (default: the run's own, from its
    ``metrics.json``, else 0). Writes ``export.json`` beside the artifacts and, when the model
    belongs to a run, its ``export`` entry in the run's ``metrics.json`` (what the report reads).

    Returns:
        ``{"model", "label", "source", "data_seed", ..., "formats": {format: record}}``.
    """
    import keras  # re-exporting needs Keras and the models; reading an artifact does not

    import predcalc.layers  # noqa: F401  (registers the custom layers)
    from predcalc.models import get_spec

    model_path = Path(model_path)
    directory = model_path.parent
    sidecar = directory / SIDECAR
    if not sidecar.is_file():
        raise FileNotFoundError(f"{sidecar} is missing: it names the model and tokenizer")
    info = json.loads(sidecar.read_text())
    spec = get_spec(info["model"])
    tokenizer = get_tokenizer(info["tokenizer"], **info.get("tokenizer_config", {}))
    metrics_path, record = _run_record(model_path)
    protocol, data_label = _check_data(record, data_seed)
    trained = types.SimpleNamespace(spec=spec, tokenizer=tokenizer, model=keras.saving.load_model(model_path))
    report = export_trained(
        trained,
        directory,
        protocol.test_sets(),
        protocol.train.expressions,
        formats=formats,
        progress=progress,
        replace=False,
    )
    result = write_export_record(directory, spec, report, data_label, source=model_path)
    models = (record or {}).get("models", {}) or (record or {}).get("extended", {}).get("models", {})
    if directory.name in models:
        models[directory.name]["export"] = report
        write_if_changed(metrics_path, json.dumps(record, indent=1))
    return result


def _check_data(record: dict | None, data_seed: int | None):
    """The test sets and calibration expressions a stored model is checked and quantised with, and
    the seed that fixes them: its run's own data (the extended suite for a model an extended-suite
    study trained), else the reference protocol with ``data_seed`` (default: the run's, else 0)."""
    data = (record or {}).get("data", {})
    if data_seed is None and "suite_seed" in data:
        parameters, scope = record.get("parameters", {}), record.get("extended", {}).get("scope", {})
        suite = extended_suite(
            seed=int(data["suite_seed"]),
            train_size=int(parameters.get("train_size", 20000)),
            test_size=int(parameters.get("test_size", 200)),
            operators=scope.get("operators", ALL_OPERATORS),
            parentheses=bool(scope.get("parentheses", True)),
        )
        return suite_protocol(suite, seed=int(data["suite_seed"])), {"suite_seed": int(data["suite_seed"])}
    seed = int(data_seed if data_seed is not None else data.get("seed", 0))
    return reference_protocol(seed), {"data_seed": seed}
