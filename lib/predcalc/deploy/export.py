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

Every artifact gets a verdict in ``export.json``: ``use``, or ``unsuitable`` with the reason (it
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
import logging
import shutil
import types
import warnings
from pathlib import Path

import numpy as np

from predcalc.paths import ROOT, relative, write_if_changed

LITERT_FORMATS = ("float32", "float16", "int8_dynamic", "int8")
FORMATS = (*LITERT_FORMATS, "onnx")
# Tried when full-integer int8 loses too much: int16 activations with int8 weights (per-channel).
INT8_VARIANTS = ("int8_16x8",)
# A quantised artifact that loses more than this much exact accuracy on any test set is unsuitable
# (removed from disk, its numbers kept in export.json); float32 and ONNX must stay within PARITY.
QUANTISED_LOSS_LIMIT = 0.02
PARITY_ACCURACY = 0.005
PARITY_RELATIVE_DIFF = 1e-3  # of the largest |value| Keras predicts on the test sets (at least 1)
# Recurrent and scan models: extra LiteRT float32 files at longer input lengths (multiples of the
# trained length), so a longer expression is not refused. Each is checked: padded to the longer
# length, the test sets must give the trained length's answers.
LENGTH_FACTORS = (2, 4)
VARIABLE_LENGTH_FAMILIES = ("RNN", "LSTM", "GRU", "gated linear recurrence", "efficient RNN")
SIDECAR = "predcalc.json"
EXPORT_RECORD = "export.json"
ONNX_FILE = "model.onnx"


def _tf():
    import keras

    if keras.backend.backend() != "tensorflow":
        raise RuntimeError(
            f"LiteRT export needs the TensorFlow backend (KERAS_BACKEND=tensorflow); "
            f"this process runs {keras.backend.backend()!r}"
        )
    import absl.logging
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")  # "Assets written to ..." on every export
    absl.logging.set_verbosity(absl.logging.ERROR)
    return tf


def _input_spec(model, tf, batch: int | None = 1):
    shape = (batch, *model.inputs[0].shape[1:])
    return [tf.TensorSpec(shape, dtype=model.inputs[0].dtype, name="tokens")]


def converter_options(fmt: str, representative: np.ndarray | None, tf) -> dict:
    """The TFLiteConverter settings of one format."""
    if fmt == "float32":
        return {}
    if fmt == "float16":
        return {"optimizations": [tf.lite.Optimize.DEFAULT], "target_spec": {"supported_types": [tf.float16]}}
    if fmt == "int8_dynamic":
        return {"optimizations": [tf.lite.Optimize.DEFAULT]}
    if fmt == "int8_16x8":
        options = converter_options("int8", representative, tf)
        options["target_spec"] = {"supported_ops": [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8,
            tf.lite.OpsSet.TFLITE_BUILTINS]}  # float kernels where an op has no 16x8 one
        return options
    if fmt == "int8":
        if representative is None or len(representative) == 0:
            raise ValueError("full-integer int8 needs representative inputs")

        def dataset():
            for row in representative:
                yield [row[None, ...]]

        return {"optimizations": [tf.lite.Optimize.DEFAULT], "representative_dataset": dataset}
    raise ValueError(f"unknown format {fmt!r}; choose one of {LITERT_FORMATS}")


def artifact_path(directory, fmt: str) -> Path:
    """Where ``export_trained`` writes a format in an export directory."""
    return Path(directory) / (ONNX_FILE if fmt == "onnx" else f"model_{fmt}.tflite")


# Formats whose converter can crash the process (full-integer calibration segfaulted on a
# non-unrolled LSTM at batch 1, FACTS.md): they convert in a child process, so a crash becomes
# an error in the export report instead of a dead notebook kernel.
ISOLATED_FORMATS = ("int8", "int8_16x8")


def export_litert(model, path, fmt: str = "float32", representative=None, isolate: bool | None = None) -> dict:
    """Write one ``.tflite`` file; builtin ops first, TF Select only if those are not enough.

    Args:
        isolate: convert in a child process (default: for the formats in ``ISOLATED_FORMATS``).

    Returns:
        ``{"path", "bytes", "tf_select"}``; ``tf_select`` is True when builtin ops did not suffice.
    """
    if isolate is None:
        isolate = fmt in ISOLATED_FORMATS
    if isolate:
        return _export_litert_in_child(model, path, fmt, representative)
    tf = _tf()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    options = converter_options(fmt, representative, tf)
    spec = options.pop("target_spec", {})
    builtin_ops = spec.pop("supported_ops", [tf.lite.OpsSet.TFLITE_BUILTINS])
    try:
        model.export(str(path), format="litert", input_signature=_input_spec(model, tf), verbose=False,
                     target_spec={**spec, "supported_ops": builtin_ops}, **options)
        tf_select = False
    except Exception:  # the converter says which op lacks a builtin kernel; retry with TF Select
        options = converter_options(fmt, representative, tf)
        options.pop("target_spec", None)
        model.export(str(path), format="litert", input_signature=_input_spec(model, tf), verbose=False,
                     target_spec={**spec, "supported_ops": [*builtin_ops, tf.lite.OpsSet.SELECT_TF_OPS]}, **options)
        tf_select = True
    return {"path": str(path), "bytes": path.stat().st_size, "tf_select": tf_select}


def _export_litert_in_child(model, path, fmt, representative) -> dict:
    import signal
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        model_file, data_file = Path(scratch) / "model.keras", Path(scratch) / "representative.npy"
        model.save(model_file)
        np.save(data_file, np.zeros((0,)) if representative is None else np.asarray(representative))
        result = subprocess.run([sys.executable, "-m", "predcalc.deploy.export", str(model_file), str(path), fmt,
                                 str(data_file)], capture_output=True, text=True, timeout=CHILD_TIMEOUT)
    if result.returncode != 0:
        if result.returncode < 0:
            reason = f"the converter crashed ({signal.Signals(-result.returncode).name})"
        else:
            lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
            reason = lines[-1] if lines else f"exit code {result.returncode}"
        raise RuntimeError(f"{fmt} conversion or first run failed in a child process: {reason}")
    return json.loads(result.stdout.strip().splitlines()[-1])


CHILD_TIMEOUT = 1800  # seconds a child conversion may take


def export_onnx_torch(model, path) -> dict:
    """``model.onnx`` from the PyTorch backend (torch.export + onnxscript), in a child process.

    The route that converts what tf2onnx cannot (``Log1p`` of the log-space scans, the TensorArray
    and ``If`` nodes of sLSTM and Mamba): the model is reloaded with ``KERAS_BACKEND=torch`` and
    exported with a fixed input signature of batch 1 (a flexible one silently falls back to an
    exporter that gives wrong numbers, FACTS.md). The caller checks the file against Keras.
    """
    import os
    import subprocess
    import sys
    import tempfile

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        model_file = Path(scratch) / "model.keras"
        model.save(model_file)
        env = {**os.environ, "KERAS_BACKEND": "torch"}
        result = subprocess.run([sys.executable, "-m", "predcalc.deploy.export", "--onnx-torch", str(model_file),
                                 str(path)], capture_output=True, text=True, env=env, timeout=CHILD_TIMEOUT)
    if result.returncode != 0 or not path.is_file():
        lines = [line for line in result.stderr.strip().splitlines() if line.strip() and "Warning" not in line]
        raise RuntimeError(f"PyTorch-backend ONNX export failed: {lines[-1] if lines else result.returncode}")
    return {"path": str(path), "bytes": path.stat().st_size, "batch": 1, "converter": "torch"}


def _onnx_torch_child(model_file, out) -> int:
    import warnings

    import keras

    import predcalc.layers  # noqa: F401  (registers the custom layers)

    warnings.simplefilter("ignore")
    model = keras.saving.load_model(model_file)
    spec = [keras.InputSpec(shape=(1, *model.inputs[0].shape[1:]), dtype=model.inputs[0].dtype)]
    model.export(out, format="onnx", input_signature=spec, verbose=False)
    drop_stack_traces(out)
    return 0


def drop_stack_traces(path) -> None:
    """Remove the per-node Python stack traces the PyTorch exporter writes into an ONNX file's metadata:
    they name the paths of the machine that exported it, and no runtime reads them."""
    import onnx

    model = onnx.load(str(path))

    def clean(nodes):
        for node in nodes:
            kept = [prop for prop in node.metadata_props if "stack_trace" not in prop.key]
            del node.metadata_props[:]
            node.metadata_props.extend(kept)
            for attribute in node.attribute:
                if attribute.HasField("g"):
                    clean(attribute.g.node)
                for graph in attribute.graphs:
                    clean(graph.node)

    clean(model.graph.node)
    for function in model.functions:
        clean(function.node)
    onnx.save(model, str(path))


def _child_main(argv) -> int:
    """``python -m predcalc.deploy.export MODEL.keras OUT.tflite FORMAT REPRESENTATIVE.npy``
    (or ``--onnx-torch MODEL.keras OUT.onnx`` under ``KERAS_BACKEND=torch``)."""
    if argv[0] == "--onnx-torch":
        return _onnx_torch_child(*argv[1:])
    import keras

    import predcalc.layers  # noqa: F401  (registers the custom layers)

    model_file, out, fmt, data_file = argv
    representative = np.load(data_file)
    info = export_litert(keras.saving.load_model(model_file), out, fmt,
                         representative if representative.size else None, isolate=False)
    runner = LiteRTModel(out)  # an interpreter that aborts on this file does so here, in the child
    if representative.size:
        runner(representative[:1])
    print(json.dumps(info))
    return 0


class LiteRTModel:
    """A ``.tflite`` file run by the LiteRT interpreter, one expression at a time.

    The interpreter of ``ai-edge-litert``, else that of ``tflite-runtime`` (its predecessor, which
    has wheels for older Python versions, e.g. JetPack 5's Python 3.8).
    """

    def __init__(self, path, num_threads: int = 1):
        try:
            from ai_edge_litert.interpreter import Interpreter
        except ImportError as error:
            try:
                from tflite_runtime.interpreter import Interpreter
            except ImportError:
                raise ImportError("no LiteRT interpreter: pip install ai-edge-litert (or tflite-runtime)") from error

        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"no such model file: {self.path}")
        self.interpreter = Interpreter(model_path=str(self.path), num_threads=num_threads)
        self.interpreter.allocate_tensors()
        self.input = self.interpreter.get_input_details()[0]
        self.output = self.interpreter.get_output_details()[0]

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        """Outputs for a batch of encoded inputs, shape (n, ...)."""
        rows = []
        for row in np.asarray(inputs):
            self.interpreter.set_tensor(self.input["index"], row[None, ...].astype(self.input["dtype"]))
            self.interpreter.invoke()
            rows.append(self.interpreter.get_tensor(self.output["index"])[0].copy())
        return np.stack(rows)


def export_onnx(model, path, opset: int | None = None) -> dict:
    """Write ``model.onnx`` with Keras' ONNX export (tf2onnx on the TensorFlow backend).

    A flexible batch first (ONNX Runtime then takes any batch); if the converter refuses it, a
    fixed batch of 1 as for LiteRT. If both fail, the first (flexible-batch) error is raised.

    Returns:
        ``{"path", "bytes", "batch"}``; ``batch`` is None for a flexible batch, else 1.
    """
    tf = _tf()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    first_error = None
    for batch in (None, 1):
        try:
            with _converter_log() as logged, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.export(str(path), format="onnx", input_signature=_input_spec(model, tf, batch),
                             opset_version=opset, verbose=False)
            unsupported = [message for message in logged if message.startswith("Unsupported ops")]
            if unsupported:  # tf2onnx logs these and still writes a file that no runtime loads
                path.unlink(missing_ok=True)
                raise UnsupportedOpsError(f"tf2onnx: {unsupported[0]}")
            return {"path": str(path), "bytes": path.stat().st_size, "batch": batch}
        except UnsupportedOpsError:  # a fixed batch does not help
            raise
        except Exception as error:  # the converter's reason; try the fixed batch once
            first_error = first_error or error
            path.unlink(missing_ok=True)
    raise first_error


class UnsupportedOpsError(ValueError):
    """The converter has no ONNX form for some TensorFlow ops of the model."""


class _converter_log:
    """Collect tf2onnx's error messages instead of printing them."""

    def __enter__(self):
        self.messages, self.logger = [], logging.getLogger("tf2onnx")
        self.handler = logging.Handler(logging.ERROR)
        self.handler.emit = lambda record: self.messages.append(record.getMessage())
        self.saved = self.logger.level, self.logger.propagate
        self.logger.setLevel(logging.ERROR)
        self.logger.propagate = False
        self.logger.addHandler(self.handler)
        return self.messages

    def __exit__(self, *exc):
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self.saved[0])
        self.logger.propagate = self.saved[1]
        return False


_ONNX_TYPES = {"tensor(float)": np.float32, "tensor(int32)": np.int32, "tensor(int64)": np.int64,
               "tensor(double)": np.float64}


class ONNXModel:
    """A ``.onnx`` file run by ONNX Runtime (CPU unless ``providers`` names others, e.g. CUDA)."""

    def __init__(self, path, num_threads: int = 1, providers=None):
        import onnxruntime

        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"no such model file: {self.path}")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = num_threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = onnxruntime.InferenceSession(str(self.path), options,
                                                    providers=providers or ["CPUExecutionProvider"])
        self.input = self.session.get_inputs()[0]
        self.dtype = _ONNX_TYPES.get(self.input.type, np.float32)
        self.fixed_batch = self.input.shape[0] if isinstance(self.input.shape[0], int) else None

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        """Outputs for a batch of encoded inputs, shape (n, ...)."""
        inputs = np.asarray(inputs).astype(self.dtype)
        if self.fixed_batch is None:
            return self.session.run(None, {self.input.name: inputs})[0]
        return np.concatenate([self.session.run(None, {self.input.name: inputs[i:i + self.fixed_batch]})[0]
                               for i in range(0, len(inputs), self.fixed_batch)])


class SavedModelRunner:
    """A TensorFlow SavedModel directory (plain or TF-TRT-converted) run through its serving signature."""

    def __init__(self, path, signature: str = "serving_default"):
        import tensorflow as tf

        self.path = Path(path)
        if not (self.path / "saved_model.pb").is_file():
            raise FileNotFoundError(f"no SavedModel (saved_model.pb) in {self.path}")
        self._tf = tf
        self._loaded = tf.saved_model.load(str(self.path))  # keep the object alive for its variables
        self.function = self._loaded.signatures[signature]
        _, specs = self.function.structured_input_signature
        (self.input_name, self.spec), = specs.items()

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        tensor = self._tf.constant(np.asarray(inputs), dtype=self.spec.dtype)
        outputs = self.function(**{self.input_name: tensor})
        return next(iter(outputs.values())).numpy()


class _ArtifactAsModel:
    """What ``spec.predict_values(model, inputs)`` calls, answered by an artifact's runner."""

    def __init__(self, run):
        self._run = run

    def predict(self, inputs, batch_size=None, verbose=0):
        return self._run(inputs)

    def __call__(self, inputs, training=False):
        return self._run(inputs)


def artifact_values(spec, run, inputs) -> np.ndarray:
    """Predicted values of an artifact, through the model's own ``predict_values``."""
    values = spec.predict_values(_ArtifactAsModel(run), inputs)
    return np.asarray(values, dtype=np.float64).reshape(len(inputs), -1)[:, 0]


def _error_reason(error: Exception) -> str:
    """The error's first line, with paths inside the repository written relative to it."""
    lines = [line for line in str(error).replace(f"{ROOT}/", "").strip().splitlines() if line.strip()]
    return f"{type(error).__name__}: {(lines[0] if lines else '')[:300]}"


def write_sidecar(directory, spec, tokenizer, extra: dict | None = None) -> Path:
    """``predcalc.json``: the model, its tokeniser and, for token-output models, the answer format."""
    path = Path(directory) / SIDECAR
    answer_format = getattr(spec.predict_values, "__self__", None)  # a bound AnswerFormat.predict_values
    fields = {"model": spec.name, "label": spec.label, "tokenizer": spec.tokenizer,
              "tokenizer_config": tokenizer.get_config()}
    if answer_format is not None and hasattr(answer_format, "values_from_logits"):
        fields["answer_format"] = answer_format.get_config()
    write_if_changed(path, json.dumps({**fields, **(extra or {})}, indent=2))
    return path


def input_limits(spec, tokenizer, length: int | None = None) -> dict:
    """What an artifact accepts and answers: its token (or character) length and answer digits."""
    answer_format = getattr(spec.predict_values, "__self__", None)
    digits = getattr(answer_format, "digits", None)
    return {"tokenizer": tokenizer.name, "max_tokens": int(length or tokenizer.length),
            "answer_digits": digits}  # None: a regression output, any magnitude


def _verdict(fmt: str, record: dict, token_output: bool, scale: float = 1.0) -> tuple[str, str]:
    """("use" | "unsuitable", why) of one checked artifact; ``scale``: the largest |value| Keras predicts."""
    worst = min(record["accuracy_change"].values(), default=0.0)
    if fmt in ("float32", "onnx") or fmt.startswith("float32_len"):
        if worst < -PARITY_ACCURACY:
            return "unsuitable", f"loses {-100 * worst:.1f} points of exact accuracy against Keras"
        limit = PARITY_RELATIVE_DIFF * max(1.0, scale)
        if not token_output and record["max_abs_diff"] > limit:
            return "unsuitable", f"differs from Keras by {record['max_abs_diff']:.2g} (> {limit:.2g})"
        return "use", "matches Keras"
    if worst < -QUANTISED_LOSS_LIMIT:
        return "unsuitable", (f"loses {-100 * worst:.1f} points of exact accuracy "
                              f"(limit {100 * QUANTISED_LOSS_LIMIT:.0f})")
    return "use", f"within {100 * QUANTISED_LOSS_LIMIT:.0f} points of Keras"


def with_input_length(model, length: int):
    """The model rebuilt for inputs of ``length`` tokens, with the same weights (or an error)."""
    old = int(model.inputs[0].shape[1])

    def swap(node):
        if isinstance(node, dict):
            return {k: (_swap_shape(v, old, length) if k in ("batch_shape", "batch_input_shape", "target_shape")
                        else swap(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [swap(v) for v in node]
        return node

    resized = model.__class__.from_config(swap(model.get_config()))
    resized.set_weights(model.get_weights())
    if tuple(resized.inputs[0].shape[1:]) != (length, *model.inputs[0].shape[2:]):
        raise ValueError(f"could not resize the input to {length}")
    return resized


def _swap_shape(shape, old, new):
    if isinstance(shape, (list, tuple)):
        shape = list(shape)
        if None in shape[:1] and len(shape) > 1 and shape[1] == old:
            shape[1] = new
        elif shape and shape[0] == old:
            shape[0] = new
    return shape


def _unrolled(model):
    """The model with every Keras recurrent layer unrolled (same weights), or None if it has none."""
    found = []

    def unroll(node):
        if isinstance(node, dict):
            if node.get("unroll") is False:
                found.append(True)
            return {k: (True if k == "unroll" and v is False else unroll(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [unroll(v) for v in node]
        return node

    config = unroll(model.get_config())
    if not found:
        return None
    unrolled = model.__class__.from_config(config)
    unrolled.set_weights(model.get_weights())
    return unrolled


def length_variant_path(directory, length: int) -> Path:
    return Path(directory) / f"model_float32_len{length}.tflite"


def export_trained(trained, directory, test_sets: dict, representative_expressions,
                   formats=FORMATS, saved_model: bool = True, progress=None, replace: bool = True,
                   wide_calibration_expressions=None) -> dict:
    """Export one trained model in every format and check each artifact on the test sets.

    Args:
        trained: a :class:`predcalc.training.fit.TrainedModel` (or anything with ``spec``, ``model``
            and ``tokenizer``).
        directory: where the artifacts go (replaced if it exists, unless ``replace`` is False:
            then only the artifacts written here are replaced, and ``model.keras`` stays).
        test_sets: ``{name: Split}`` to compare the artifacts with the Keras model on.
        representative_expressions: calibration inputs for full-integer int8.
        formats: of :data:`FORMATS` (LiteRT formats and ``"onnx"``).
        progress: called with each format's name when it is done.
        wide_calibration_expressions: a second calibration set over the whole input range, tried
            when full-integer int8 loses more than :data:`QUANTISED_LOSS_LIMIT` (default: the
            training expressions and every test set's inputs).

    Every artifact is checked against Keras and given a ``verdict``: ``"use"``, or
    ``"unsuitable"`` with a ``reason``; an unsuitable file is removed from disk (its numbers stay
    in the report). ONNX goes through tf2onnx, else the PyTorch backend; full-integer int8 that
    loses too much is retried as 16x8 and with wider calibration; a "dynamic-range int8" file
    with nothing quantised (as large as float32) is unsuitable; recurrent and scan models get
    float32 LiteRT files at longer input lengths (``float32_len<N>``).

    Returns:
        ``{format: {"bytes", "max_abs_diff", "accuracy_change": {set: delta}, "verdict", "limits",
        ...}}`` (LiteRT formats add ``tf_select``, ONNX ``batch`` and ``converter``), or
        ``{format: {"error": reason, "verdict": "unsuitable"}}`` for a format that could not be
        converted or run.
    """
    from predcalc.training.metrics import exact_accuracy

    directory = Path(directory)
    if replace and directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
    sidecar = directory / SIDECAR
    extra = json.loads(sidecar.read_text()) if not replace and sidecar.is_file() else {}
    extra.pop("litert_lengths", None)
    for old in directory.glob("model_float32_len*.tflite"):
        old.unlink()
    write_sidecar(directory, trained.spec, trained.tokenizer, extra)
    report = {}
    if saved_model:
        shutil.rmtree(directory / "saved_model", ignore_errors=True)
        trained.model.export(str(directory / "saved_model"), format="tf_saved_model", verbose=False)
        report["saved_model"] = {"bytes": sum(f.stat().st_size for f in (directory / "saved_model").rglob("*")
                                              if f.is_file())}
    token_output = hasattr(getattr(trained.spec.predict_values, "__self__", None), "values_from_logits")
    encoded = {name: trained.tokenizer.encode_batch(split.expressions) for name, split in test_sets.items()}
    keras_out = {name: trained.spec.predict_values(trained.model, x) for name, x in encoded.items()}
    representative = trained.tokenizer.encode_batch(list(representative_expressions))
    limits = input_limits(trained.spec, trained.tokenizer)
    finite = [np.abs(v[np.isfinite(v)]) for v in keras_out.values()]
    scale = max([float(f.max()) for f in finite if f.size] + [1.0])

    def check(runner, inputs=None) -> dict:
        diffs, change = [], {}
        for name, split in test_sets.items():
            values = artifact_values(trained.spec, runner, encoded[name] if inputs is None else inputs[name])
            # an answer unparseable (NaN) in both agrees; in only one, it differs without bound
            gap = np.where(np.isnan(values) & np.isnan(keras_out[name]), 0.0, np.abs(values - keras_out[name]))
            diffs.append(float(np.max(np.nan_to_num(gap, nan=np.inf))) if len(split) else 0.0)
            change[name] = exact_accuracy(split.values, values) - exact_accuracy(split.values, keras_out[name])
        return {"max_abs_diff": max(diffs, default=0.0), "accuracy_change": change}

    def judged(fmt, record, path):
        verdict, reason = _verdict(fmt, record, token_output, scale)
        record.update(verdict=verdict, reason=reason)
        if verdict != "use":
            Path(path).unlink(missing_ok=True)
        return record

    def litert(fmt, path, calibration=representative, model=None) -> dict:
        info = export_litert(model or trained.model, path, fmt, calibration)
        return {"bytes": info["bytes"], "tf_select": info["tf_select"], **check(LiteRTModel(path))}

    for fmt in formats:
        path = artifact_path(directory, fmt)
        path.unlink(missing_ok=True)
        try:
            if fmt == "onnx":
                report[fmt] = _onnx_with_fallback(trained.model, path, check, judged, limits)
            elif fmt == "int8":  # a first conversion that crashes still gets the retries
                try:
                    first = {**litert(fmt, path), "limits": limits}
                except Exception as error:
                    path.unlink(missing_ok=True)
                    first = {"error": _error_reason(error), "verdict": "unsuitable", "limits": limits,
                             "reason": "could not be converted or run"}
                report[fmt] = _int8_with_retries(trained, path, first, litert, judged, representative,
                                                 wide_calibration_expressions, test_sets)
            else:
                record = {**litert(fmt, path), "limits": limits}
                if fmt == "int8_dynamic" and "float32" in report and "bytes" in report["float32"] \
                        and record["bytes"] >= 0.9 * report["float32"]["bytes"]:
                    record.update(verdict="unsuitable", reason="nothing was quantised: the file is float32 "
                                  "under another name (use model_float32.tflite)")
                    path.unlink(missing_ok=True)
                else:
                    record = judged(fmt, record, path)
                report[fmt] = record
        except Exception as error:  # report the converter's (or runtime's) reason; the batch goes on
            path.unlink(missing_ok=True)
            report[fmt] = {"error": _error_reason(error), "verdict": "unsuitable",
                           "reason": "could not be converted or run"}
            continue
        if progress is not None:
            progress(fmt)
    if "float32" in formats and trained.spec.family in VARIABLE_LENGTH_FAMILIES:
        lengths = []
        for factor in LENGTH_FACTORS:
            length = factor * trained.tokenizer.length
            name, path = f"float32_len{length}", length_variant_path(directory, length)
            try:
                resized = with_input_length(trained.model, length)
                tokenizer = type(trained.tokenizer)(**{**trained.tokenizer.get_config(), "length": length})
                padded = {n: tokenizer.encode_batch(split.expressions) for n, split in test_sets.items()}
                info = export_litert(resized, path, "float32")
                record = {"bytes": info["bytes"], "tf_select": info["tf_select"],
                          **check(LiteRTModel(path), padded),
                          "limits": input_limits(trained.spec, tokenizer)}
                record = judged(name, record, path)
                if record["verdict"] == "use":
                    lengths.append(length)
            except Exception as error:
                path.unlink(missing_ok=True)
                record = {"error": _error_reason(error), "verdict": "unsuitable",
                          "reason": "could not be rebuilt at this length, converted or run"}
            report[name] = record
        if lengths:
            write_sidecar(directory, trained.spec, trained.tokenizer, {**extra, "litert_lengths": lengths})
    return report


def _onnx_with_fallback(model, path, check, judged, limits) -> dict:
    """tf2onnx first; if it fails or its file does not match Keras, the PyTorch backend."""
    attempts = []
    for converter in ("tf2onnx", "torch"):
        try:
            info = export_onnx(model, path) if converter == "tf2onnx" else export_onnx_torch(model, path)
            record = {"bytes": info["bytes"], "batch": info["batch"], "converter": converter,
                      **check(ONNXModel(path)), "limits": limits}
            record = judged("onnx", record, path)
        except Exception as error:
            path.unlink(missing_ok=True)
            record = {"error": _error_reason(error), "verdict": "unsuitable", "converter": converter,
                      "reason": "could not be converted or run"}
        if record["verdict"] == "use":
            return {**record, **({"tried": attempts} if attempts else {})}
        attempts.append(record)
    why = " | ".join(f"{a['converter']}: {a.get('error') or a['reason']}" for a in attempts)
    return {**attempts[-1], "error": why, "tried": attempts[:-1]}


def _int8_with_retries(trained, path, record, litert, judged, representative, wide_expressions, test_sets):
    """Full-integer int8; if it loses too much, 16x8 and wider calibration; the best that passes."""
    record = {**record, "variant": "int8, calibration: training inputs"}
    if "error" not in record:
        record = judged("int8", record, path)
    if record["verdict"] == "use":
        return record
    if wide_expressions is None:
        wide_expressions = [e for split in test_sets.values() for e in split.expressions]
    wide = np.concatenate([representative, trained.tokenizer.encode_batch(list(wide_expressions))])
    wide = wide[np.random.default_rng(0).permutation(len(wide))[:2000]]
    tried = [record]
    attempts = [("int8_16x8", representative, "16x8, calibration: training inputs", None),
                ("int8", wide, "int8, calibration: training and test inputs", None),
                ("int8_16x8", wide, "16x8, calibration: training and test inputs", None)]
    unrolled = _unrolled(trained.model)
    if unrolled is not None:  # Keras RNN layers: unroll=True (what kept an LSTM's int8, FACTS.md)
        attempts += [("int8", representative, "int8 unrolled, calibration: training inputs", unrolled),
                     ("int8_16x8", wide, "16x8 unrolled, calibration: training and test inputs", unrolled)]
    for fmt, calibration, name, model in attempts:
        try:
            attempt = judged(fmt, {**litert(fmt, path, calibration, model), "limits": record["limits"],
                                   "variant": name}, path)
        except Exception as error:
            path.unlink(missing_ok=True)
            attempt = {"error": _error_reason(error), "verdict": "unsuitable", "variant": name,
                       "reason": "could not be converted or run"}
        if attempt["verdict"] == "use":
            return {**attempt, "tried": tried}
        tried.append(attempt)
    best = max((t for t in tried if "accuracy_change" in t),
               key=lambda t: min(t["accuracy_change"].values(), default=0.0), default=tried[0])
    return {**best, "tried": [t for t in tried if t is not best]}


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
    import keras

    directory = Path(directory)
    result = {"model": spec.name, "label": spec.label, "source": relative(source or directory / "model.keras"),
              **data_label, "backend": keras.backend.backend(), "keras": keras.__version__,
              "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "formats": report}
    write_if_changed(directory / EXPORT_RECORD, json.dumps(result, indent=1))
    return result


def export_directory(model_path, formats=FORMATS, data_seed: int | None = None, progress=None,
                     update_metrics: bool = True) -> dict:
    """Re-export a stored ``model.keras`` in every format beside it and check each artifact.

    The tokeniser comes from ``predcalc.json`` beside the file; the test sets and calibration
    expressions from the seed protocol with ``data_seed`` (default: the run's own, from its
    ``metrics.json``, else 0). Writes ``export.json`` beside the artifacts and, when the model
    belongs to a run, its ``export`` entry in the run's ``metrics.json`` (what the report reads).

    Returns:
        ``{"model", "label", "source", "data_seed", ..., "formats": {format: record}}``.
    """
    import keras

    import predcalc.layers  # noqa: F401  (registers the custom layers)
    from predcalc.data import get_tokenizer
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
    report = export_trained(trained, directory, protocol.test_sets(), protocol.train.expressions,
                            formats=formats, progress=progress, replace=False)
    result = write_export_record(directory, spec, report, data_label, source=model_path)
    models = (record or {}).get("models", {}) or (record or {}).get("extended", {}).get("models", {})
    if update_metrics and directory.name in models:
        models[directory.name]["export"] = report
        write_if_changed(metrics_path, json.dumps(record, indent=1))
    return result


def _check_data(record: dict | None, data_seed: int | None):
    """The test sets and calibration expressions a stored model is checked and quantised with, and
    the seed that fixes them: its run's own data (the extended suite for a model an extended-suite
    study trained), else the seed protocol with ``data_seed`` (default: the run's, else 0)."""
    from predcalc.data import seed_protocol

    data = (record or {}).get("data", {})
    if data_seed is None and "suite_seed" in data:
        from predcalc.data.extended import ALL_OPERATORS, extended_suite, suite_protocol

        parameters, scope = record.get("parameters", {}), record.get("extended", {}).get("scope", {})
        suite = extended_suite(seed=int(data["suite_seed"]), train_size=int(parameters.get("train_size", 20000)),
                               test_size=int(parameters.get("test_size", 200)),
                               operators=scope.get("operators", ALL_OPERATORS),
                               parentheses=bool(scope.get("parentheses", True)))
        return suite_protocol(suite, seed=int(data["suite_seed"])), {"suite_seed": int(data["suite_seed"])}
    seed = int(data_seed if data_seed is not None else data.get("seed", 0))
    return seed_protocol(seed), {"data_seed": seed}


if __name__ == "__main__":
    import sys

    sys.exit(_child_main(sys.argv[1:]))
