"""Export a trained model for an edge device, and check every artifact against Keras.

Formats: a TensorFlow SavedModel and TFLite/LiteRT in float32, float16, dynamic-range int8
and full-integer int8 (calibrated on training expressions; float input and output). Every
``.tflite`` file is run with the LiteRT interpreter on the test sets and compared with the
Keras model: max abs difference, accuracy change and file size go into the metrics.

The artifacts are exported with a fixed batch of 1 (one expression at a time, as the
calculator uses them): recurrent layers with a flexible batch otherwise need Flex ops.
Each export directory holds ``predcalc.json``, which names the tokeniser, so
``predcalc predict`` can read any artifact.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from predcalc.metrics import exact_accuracy

LITERT_FORMATS = ("float32", "float16", "int8_dynamic", "int8")
SIDECAR = "predcalc.json"


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


def _input_spec(model, tf):
    shape = (1, *model.inputs[0].shape[1:])
    return [tf.TensorSpec(shape, dtype=model.inputs[0].dtype, name="tokens")]


def converter_options(fmt: str, representative: np.ndarray | None, tf) -> dict:
    """The TFLiteConverter settings of one format."""
    if fmt == "float32":
        return {}
    if fmt == "float16":
        return {"optimizations": [tf.lite.Optimize.DEFAULT], "target_spec": {"supported_types": [tf.float16]}}
    if fmt == "int8_dynamic":
        return {"optimizations": [tf.lite.Optimize.DEFAULT]}
    if fmt == "int8":
        if representative is None or len(representative) == 0:
            raise ValueError("full-integer int8 needs representative inputs")

        def dataset():
            for row in representative:
                yield [row[None, ...]]

        return {"optimizations": [tf.lite.Optimize.DEFAULT], "representative_dataset": dataset}
    raise ValueError(f"unknown format {fmt!r}; choose one of {LITERT_FORMATS}")


def export_litert(model, path, fmt: str = "float32", representative=None) -> dict:
    """Write one ``.tflite`` file; builtin ops first, TF Select only if those are not enough.

    Returns:
        ``{"path", "bytes", "tf_select"}``; ``tf_select`` is True when builtin ops did not suffice.
    """
    tf = _tf()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    options = converter_options(fmt, representative, tf)
    spec = options.pop("target_spec", {})
    try:
        model.export(str(path), format="litert", input_signature=_input_spec(model, tf), verbose=False,
                     target_spec={**spec, "supported_ops": [tf.lite.OpsSet.TFLITE_BUILTINS]}, **options)
        tf_select = False
    except Exception:  # the converter says which op lacks a builtin kernel; retry with TF Select
        options = converter_options(fmt, representative, tf)
        options.pop("target_spec", None)
        model.export(str(path), format="litert", input_signature=_input_spec(model, tf), verbose=False,
                     target_spec={**spec, "supported_ops": [tf.lite.OpsSet.TFLITE_BUILTINS,
                                                            tf.lite.OpsSet.SELECT_TF_OPS]}, **options)
        tf_select = True
    return {"path": str(path), "bytes": path.stat().st_size, "tf_select": tf_select}


class LiteRTModel:
    """A ``.tflite`` file run by the LiteRT interpreter, one expression at a time."""

    def __init__(self, path, num_threads: int = 1):
        from ai_edge_litert.interpreter import Interpreter

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


def write_sidecar(directory, spec, tokenizer, extra: dict | None = None) -> Path:
    path = Path(directory) / SIDECAR
    path.write_text(json.dumps({"model": spec.name, "label": spec.label, "tokenizer": spec.tokenizer,
                                "tokenizer_config": tokenizer.get_config(), **(extra or {})}, indent=2))
    return path


def export_trained(trained, directory, test_sets: dict, representative_expressions,
                   formats=LITERT_FORMATS, saved_model: bool = True, progress=None) -> dict:
    """Export one trained model in every format and check each artifact on the test sets.

    Args:
        trained: a :class:`predcalc.training.TrainedModel`.
        directory: where the artifacts go (replaced if it exists).
        test_sets: ``{name: Split}`` to compare the artifacts with the Keras model on.
        representative_expressions: calibration inputs for full-integer int8.

    Returns:
        ``{format: {"bytes", "tf_select", "max_abs_diff", "accuracy_change": {set: delta}}}``,
        or ``{format: {"error": reason}}`` for a format that could not be converted.
    """
    directory = Path(directory)
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    write_sidecar(directory, trained.spec, trained.tokenizer)
    report = {}
    if saved_model:
        trained.model.export(str(directory / "saved_model"), format="tf_saved_model", verbose=False)
        report["saved_model"] = {"bytes": sum(f.stat().st_size for f in (directory / "saved_model").rglob("*") if f.is_file())}
    encoded = {name: trained.tokenizer.encode_batch(split.expressions) for name, split in test_sets.items()}
    keras_out = {name: trained.spec.predict_values(trained.model, x) for name, x in encoded.items()}
    representative = trained.tokenizer.encode_batch(list(representative_expressions))
    for fmt in formats:
        path = directory / f"model_{fmt}.tflite"
        try:
            info = export_litert(trained.model, path, fmt, representative)
        except Exception as error:  # report the converter's reason; the batch goes on
            report[fmt] = {"error": f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300]}"}
            continue
        runner = LiteRTModel(path)
        diffs, change = [], {}
        for name, split in test_sets.items():
            values = runner(encoded[name]).astype(np.float64).reshape(len(split), -1)[:, 0]
            diffs.append(float(np.max(np.abs(values - keras_out[name]))))
            change[name] = exact_accuracy(split.values, values) - exact_accuracy(split.values, keras_out[name])
        report[fmt] = {"bytes": info["bytes"], "tf_select": info["tf_select"], "max_abs_diff": max(diffs),
                       "accuracy_change": change}
        if progress is not None:
            progress(fmt)
    return report
