"""TFLite / LiteRT: float32, float16, dynamic-range int8 and full-integer int8 files.

Exported with a fixed batch of 1 (one expression at a time, as the calculator uses them):
recurrent layers with a flexible batch otherwise need Flex ops. Builtin ops first, TF Select
only where those are not enough. Full-integer int8 is calibrated on training expressions (float
input and output); if it loses too much it climbs :data:`INT8_LADDER`. Variable-length models
(``spec.variable_length``) also get float32 files at longer input lengths, kept where padding is
harmless, listed as ``litert_lengths`` in ``predcalc.json``.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import numpy as np

from predcalc.deploy.formats import (
    EXACT,
    QUANTISED,
    ExportFormat,
    input_limits,
    input_signature,
    register,
    run_child,
    tensorflow,
)

# Converter settings that can crash the process (full-integer calibration segfaulted on a
# non-unrolled LSTM at batch 1, measured here): they convert in a child process, so a crash becomes
# an error in the export report instead of a dead notebook kernel.
ISOLATED_FORMATS = ("int8", "int8_16x8")
# Recurrent and scan models: extra LiteRT float32 files at longer input lengths (multiples of the
# trained length), so a longer expression is not refused. Each is checked: padded to the longer
# length, the test sets must give the trained length's answers.
LENGTH_FACTORS = (2, 4)
# Full-integer int8 that loses too much is retried down this table, the first that passes kept
# (else the best): (converter setting, calibration inputs, unrolled RNN layers, the variant's name).
# "wide": the training and every test set's inputs; "unrolled": Keras RNN layers with unroll=True
# (what kept an LSTM's int8, measured here), tried only for models that have them.
INT8_LADDER = (
    ("int8", "training", False, "int8, calibration: training inputs"),
    ("int8_16x8", "training", False, "16x8, calibration: training inputs"),
    ("int8", "wide", False, "int8, calibration: training and test inputs"),
    ("int8_16x8", "wide", False, "16x8, calibration: training and test inputs"),
    ("int8", "training", True, "int8 unrolled, calibration: training inputs"),
    ("int8_16x8", "wide", True, "16x8 unrolled, calibration: training and test inputs"),
)
WIDE_CALIBRATION_ROWS = 2000


def converter_options(fmt: str, representative: np.ndarray | None, tf) -> dict:
    """The TFLiteConverter settings of one format (``int8_16x8``: int16 activations, int8 weights)."""
    if fmt == "float32":
        return {}
    if fmt == "float16":
        return {"optimizations": [tf.lite.Optimize.DEFAULT], "target_spec": {"supported_types": [tf.float16]}}
    if fmt == "int8_dynamic":
        return {"optimizations": [tf.lite.Optimize.DEFAULT]}
    if fmt == "int8_16x8":
        options = converter_options("int8", representative, tf)
        options["target_spec"] = {
            "supported_ops": [
                tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8,
                tf.lite.OpsSet.TFLITE_BUILTINS,
            ]
        }  # float kernels where an op has no 16x8 one
        return options
    if fmt == "int8":
        if representative is None or len(representative) == 0:
            raise ValueError("full-integer int8 needs representative inputs")

        def dataset():
            for row in representative:
                yield [row[None, ...]]

        return {"optimizations": [tf.lite.Optimize.DEFAULT], "representative_dataset": dataset}
    raise ValueError(f"unknown format {fmt!r}; choose one of {LITERT_FORMATS}")


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
        return _export_in_child(model, path, fmt, representative)
    tf = tensorflow()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    options = converter_options(fmt, representative, tf)
    spec = options.pop("target_spec", {})
    builtin_ops = spec.pop("supported_ops", [tf.lite.OpsSet.TFLITE_BUILTINS])
    try:
        model.export(
            str(path),
            format="litert",
            input_signature=input_signature(model, tf),
            verbose=False,
            target_spec={**spec, "supported_ops": builtin_ops},
            **options,
        )
        tf_select = False
    except Exception:  # noqa: BLE001  the converter's own error names the op without a builtin kernel
        options = converter_options(fmt, representative, tf)
        options.pop("target_spec", None)
        model.export(
            str(path),
            format="litert",
            input_signature=input_signature(model, tf),
            verbose=False,
            target_spec={**spec, "supported_ops": [*builtin_ops, tf.lite.OpsSet.SELECT_TF_OPS]},
            **options,
        )
        tf_select = True
    return {"path": str(path), "bytes": path.stat().st_size, "tf_select": tf_select}


def _export_in_child(model, path, fmt, representative) -> dict:
    data = np.zeros((0,)) if representative is None else np.asarray(representative)
    result = run_child(model, ["litert", str(path), fmt], data=data)
    if result.returncode != 0:
        if result.returncode < 0:
            reason = f"the converter crashed ({signal.Signals(-result.returncode).name})"
        else:
            lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
            reason = lines[-1] if lines else f"exit code {result.returncode}"
        raise RuntimeError(f"{fmt} conversion or first run failed in a child process: {reason}")
    return json.loads(result.stdout.strip().splitlines()[-1])


class LiteRTModel:
    """A ``.tflite`` file run by the LiteRT interpreter, one expression at a time.

    The interpreter of ``ai-edge-litert``, else that of ``tflite-runtime`` (its predecessor, which
    has wheels for older Python versions, e.g. JetPack 5's Python 3.8).
    """

    def __init__(self, path, num_threads: int = 1, default_delegates: bool = True):
        """``default_delegates=False``: LiteRT's builtin kernels only, without the XNNPACK delegate it
        applies by default (``make jetson-check`` compares the two on quantised files)."""
        try:  # the runtime, imported here: a machine with ONNX Runtime only never needs it
            from ai_edge_litert.interpreter import Interpreter, OpResolverType
        except ImportError as error:
            try:
                from tflite_runtime.interpreter import Interpreter, OpResolverType
            except ImportError:
                raise ImportError("no LiteRT interpreter: pip install ai-edge-litert (or tflite-runtime)") from error

        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"no such model file: {self.path}")
        resolver = (
            {}
            if default_delegates
            else {"experimental_op_resolver_type": OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES}
        )
        self.interpreter = Interpreter(model_path=str(self.path), num_threads=num_threads, **resolver)
        self.interpreter.allocate_tensors()
        self.input = self.interpreter.get_input_details()[0]
        self.output = self.interpreter.get_output_details()[0]

    @property
    def dtypes(self) -> tuple[str, str]:
        """The dtypes the file declares it reads and answers in (the predictor's refusals name them)."""
        return np.dtype(self.input["dtype"]).name, np.dtype(self.output["dtype"]).name

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        """Outputs for a batch of encoded inputs, shape (n, ...)."""
        rows = []
        for row in np.asarray(inputs):
            if tuple(self.input["shape"][1:]) != row.shape:  # a dynamic axis (any length): resize to this row
                self.interpreter.resize_tensor_input(self.input["index"], (1, *row.shape))
                self.interpreter.allocate_tensors()
                self.input = self.interpreter.get_input_details()[0]
                self.output = self.interpreter.get_output_details()[0]
            self.interpreter.set_tensor(self.input["index"], row[None, ...].astype(self.input["dtype"]))
            self.interpreter.invoke()
            rows.append(self.interpreter.get_tensor(self.output["index"])[0].copy())
        return np.stack(rows)


def length_variant_path(directory, length: int) -> Path:
    return Path(directory) / f"model_float32_len{length}.tflite"


class LiteRT(ExportFormat):
    """One LiteRT converter setting, checked against Keras."""

    def __init__(self, name: str, parity: str):
        self.name, self.filename, self.parity, self.runtime = name, f"model_{name}.tflite", parity, f"litert_{name}"

    def write(self, job, path, setting: str | None = None, calibration=None, model=None) -> dict:
        from predcalc.models.rebuild import with_float32  # predcalc.models imports Keras

        calibration = job.representative if calibration is None else calibration
        model = model or job.trained.model
        cast = with_float32(model)  # LiteRT has no float64 kernels: a float64 model is written in float32
        info = export_litert(cast, path, setting or self.name, calibration)
        extra = {"cast": "float64 weights and arithmetic written as float32"} if cast is not model else {}
        return {"bytes": info["bytes"], "tf_select": info["tf_select"], **extra}

    def open(self, path, num_threads: int = 1):
        return LiteRTModel(path, num_threads=num_threads)


class Float32(LiteRT):
    """float32, and for a variable-length model the same at :data:`LENGTH_FACTORS` times its length."""

    def longer_inputs(self, path, info: dict) -> list[tuple[int, Path]]:
        if Path(path).name != self.filename:  # only the trained-length float32 file has longer siblings
            return []
        found = [
            (length, length_variant_path(Path(path).parent, length))
            for length in sorted(info.get("litert_lengths", []))
        ]
        return [(length, longer) for length, longer in found if longer.is_file()]

    def export(self, job) -> dict[str, dict]:
        records = super().export(job)
        if not job.trained.spec.variable_length or job.trained.model.inputs[0].shape[1] is None:  # fixed or any length
            return records
        lengths = []
        for factor in LENGTH_FACTORS:
            length = factor * job.trained.tokenizer.length
            name, path = f"float32_len{length}", length_variant_path(job.directory, length)
            try:
                records[name] = self._at_length(job, length, path)
            except Exception as error:  # noqa: BLE001  rebuilding, converting or running may each fail
                records[name] = job.failure(error, path, "could not be rebuilt at this length, converted or run")
                continue
            if records[name]["verdict"] == "use":
                lengths.append(length)
        if lengths:
            job.write_sidecar(litert_lengths=lengths)
        return records

    def _at_length(self, job, length: int, path: Path) -> dict:
        from predcalc.models.rebuild import with_input_length  # predcalc.models imports Keras

        trained = job.trained
        resized = with_input_length(trained.model, length)
        tokenizer = type(trained.tokenizer)(**{**trained.tokenizer.get_config(), "length": length})
        padded = {n: tokenizer.encode_batch(split.expressions) for n, split in job.test_sets.items()}
        record = {
            **self.write(job, path, model=resized),
            **job.check(self.open(path), padded),
            "limits": input_limits(trained.spec, tokenizer),
        }
        return job.judge(EXACT, record, path)


class DynamicInt8(LiteRT):
    """Dynamic-range int8: unsuitable when nothing was quantised (as large as float32)."""

    def decide(self, job, record: dict, path: Path) -> dict:
        float32 = job.report.get("float32", {})
        if "bytes" in float32 and record["bytes"] >= 0.9 * float32["bytes"]:
            path.unlink(missing_ok=True)
            record.update(
                verdict="unsuitable",
                reason="nothing was quantised: the file is float32 under another name (use model_float32.tflite)",
            )
            return record
        return super().decide(job, record, path)


class FullInt8(LiteRT):
    """Full-integer int8 down :data:`INT8_LADDER`: the first rung that passes, else the best tried."""

    def export(self, job) -> dict[str, dict]:
        path = self.path(job.directory)
        inputs = {"training": job.representative}
        models = {False: job.trained.model}
        tried = []
        for setting, calibration, unroll, variant in INT8_LADDER:
            if unroll and unroll not in models:
                from predcalc.models.rebuild import unrolled  # predcalc.models imports Keras

                models[unroll] = unrolled(job.trained.model)
            if models[unroll] is None:  # no Keras RNN layer to unroll
                continue
            if calibration not in inputs:
                inputs[calibration] = self._wide(job)
            path.unlink(missing_ok=True)
            limits = {"limits": job.limits} if not tried else {}
            try:
                record = {
                    **self.write(job, path, setting, inputs[calibration], models[unroll]),
                    **job.check(self.open(path)),
                    "limits": job.limits,
                    "variant": variant,
                }
            except Exception as error:  # noqa: BLE001  a crash or conversion error; the next rung may pass
                tried.append({**job.failure(error, path, **limits), "variant": variant})
                continue
            record = job.judge(self.parity, record, path)
            if record["verdict"] == "use":
                return {self.name: {**record, **({"tried": tried} if tried else {})}}
            tried.append(record)
        path.unlink(missing_ok=True)
        best = max(
            (t for t in tried if "accuracy_change" in t),
            key=lambda t: min(t["accuracy_change"].values(), default=0.0),
            default=tried[0],
        )
        return {self.name: {**best, "tried": [t for t in tried if t is not best]}}

    @staticmethod
    def _wide(job) -> np.ndarray:
        expressions = job.wide_calibration_expressions
        if expressions is None:
            expressions = [e for split in job.test_sets.values() for e in split.expressions]
        wide = np.concatenate([job.representative, job.trained.tokenizer.encode_batch(list(expressions))])
        return wide[np.random.default_rng(0).permutation(len(wide))[:WIDE_CALIBRATION_ROWS]]


LITERT_FORMATS = ("float32", "float16", "int8_dynamic", "int8")
register(Float32("float32", EXACT))
register(LiteRT("float16", QUANTISED))
register(DynamicInt8("int8_dynamic", QUANTISED))
register(FullInt8("int8", QUANTISED))
