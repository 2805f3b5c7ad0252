"""The digit models' exported files: ONNX written from Keras, run by ONNX Runtime with the
decoding loop of :mod:`predcalc.data.digits` (NumPy), so a Jetson needs NumPy and ONNX Runtime.

A model's folder holds ``model.onnx`` and ``digits.json`` (its registered name, how it reads an
expression, its kind and training box, and the parity measured against Keras at export)::

    python -m predcalc.deploy.digit_files SEED_FOLDER   # checkpoint.keras -> model.onnx, digits.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from predcalc.data import digits

SIDECAR = "digits.json"
ONNX_FILE = "model.onnx"


def is_digit_model(path) -> bool:
    """Whether ``path`` is a digit model's folder or its ``model.onnx`` (a ``digits.json`` beside it)."""
    path = Path(path)
    return (path / SIDECAR).is_file() if path.is_dir() else (path.parent / SIDECAR).is_file()


def _format_of(info: dict) -> digits.Format | None:
    return digits.Format(**info["format"]) if info.get("format") else None


class DigitFile:
    """A digit model's ONNX file and its sidecar: :meth:`answers` of expressions (None where the
    model cannot answer: an invalid written token, or more terms than its columns hold)."""

    def __init__(self, folder, threads: int | None = None):
        import onnxruntime  # the runtime, imported here so that the data helpers stay NumPy-only

        folder = Path(folder)
        path = folder / ONNX_FILE if folder.is_dir() else folder
        sidecar = path.parent / SIDECAR
        if not path.is_file() or not sidecar.is_file():
            raise FileNotFoundError(f"{path.parent} holds no {ONNX_FILE} with its {SIDECAR}")
        self.path, self.info = path, json.loads(sidecar.read_text())
        self.format = _format_of(self.info)
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.output_names = [o.name for o in self.session.get_outputs()]

    @property
    def name(self) -> str:
        return f"{self.info['model']} seed {self.info['seed']} ({ONNX_FILE})"

    def refusal(self, expression: digits.Expression) -> str | None:
        """Why this file cannot answer ``expression`` (None: it can)."""
        if self.format is None and len(expression.terms) > digits.COLUMN_SLOTS:
            return f"{len(expression.terms)} terms; {self.info['model']} reads {digits.COLUMN_SLOTS} term slots"
        if self.format is not None and self.info.get("tables"):
            encoded = digits.encode(expression, self.format)
            id_table, level_table = self.info["tables"]
            if int(encoded.ids.max()) - digits.ID_FLOOR >= id_table or int(encoded.levels.max()) >= level_table:
                return (
                    f"{expression.width} digits and {len(expression.terms)} terms need ids or levels past "
                    f"{self.info['model']}'s learned tables ({id_table} ids, {level_table} levels)"
                )
        return None

    def logits(self, tokens, ids, levels) -> np.ndarray:
        feed = dict(zip(self.input_names, (a.astype(np.int32) for a in (tokens, ids, levels)), strict=True))
        return self.session.run(None, feed)[0]

    def columns(self, columns) -> dict:
        outputs = self.session.run(None, {self.input_names[0]: columns.astype(np.float32)})
        named = dict(zip(self.output_names, outputs, strict=True))
        digit_key = next(k for k in named if named[k].ndim == 3)
        sign_key = next(k for k in named if named[k].ndim == 2)
        return {"digits": named[digit_key], "sign": named[sign_key]}

    def answers(self, expressions, batch_size: int = 128) -> list:
        """Each expression's answer; None where :meth:`refusal` gives a reason or the written tokens
        do not read as a number."""
        if self.format is not None:
            readable = [i for i, e in enumerate(expressions) if self.refusal(e) is None]
            out: list = [None] * len(expressions)
            found = digits.greedy(
                [expressions[i] for i in readable],
                self.format,
                lambda t, i, lv, p: self.logits(t, i, lv)[:, p - 1, :],
                batch_size,
            )
            for index, answer in zip(readable, found, strict=True):
                out[index] = answer
            return out
        from predcalc.training.digits import column_answers  # NumPy-only helper beside the training code

        return column_answers(self.columns, expressions, batch_size)


def export(seed_folder) -> dict:
    """Write ``model.onnx`` and ``digits.json`` beside a seed's ``checkpoint.keras`` (TensorFlow
    backend: Keras' ONNX export through tf2onnx) and check the file against Keras on a fixed batch."""
    import keras  # the exporting machine only (TensorFlow backend)
    import tensorflow as tf  # for the input signature

    from predcalc.deploy.formats.onnx import export_onnx_signature
    from predcalc.models.digits import DIGIT_MODELS  # registers the layers before loading

    folder = Path(seed_folder)
    state = json.loads((folder / "state.json").read_text())
    spec = DIGIT_MODELS.named(state["model"])
    model = keras.saving.load_model(folder / "checkpoint.keras", compile=False)
    gelu_through_erf(model)
    if spec.is_decoder:
        signature = [[tf.TensorSpec((None, None), tf.int32, name=n) for n in ("tokens", "ids", "levels")]]
    else:
        signature = [tf.TensorSpec((None, None, digits.COLUMN_FEATURES), tf.float32, name="columns")]
    export_onnx_signature(model, folder / ONNX_FILE, signature)
    info = {
        "model": spec.name,
        "label": spec.label,
        "family": spec.family,
        "kind": spec.kind,
        "input": spec.input,
        "format": None if spec.format is None else vars(spec.format),
        "tables": None if spec.tables is None else list(spec.tables),
        "box": {"digits": [1, 10], "terms": [2, 3]},
        "seed": state["seed"],
        "steps": state["steps"],
    }
    (folder / SIDECAR).write_text(json.dumps(info, indent=1) + "\n")
    original = keras.saving.load_model(folder / "checkpoint.keras", compile=False)
    info["parity_max_logit_difference"] = parity(original, spec, folder)
    (folder / SIDECAR).write_text(json.dumps(info, indent=1) + "\n")
    return info


def gelu_through_erf(model) -> None:
    """Every exact-GELU activation of ``model`` computed as ``x (1 + erf(x / sqrt 2)) / 2``: the same
    function, written with the ``Erf`` that tf2onnx converts (TensorFlow's form uses ``Erfc``,
    which it does not). The parity check measures the file against the unchanged Keras model."""
    import keras  # the exporting machine only

    def gelu(x):
        return 0.5 * x * (1.0 + keras.ops.erf(x / np.sqrt(2.0).astype("float32")))

    for layer in model._flatten_layers(include_self=False, recursive=True):
        if getattr(layer, "activation", None) is keras.activations.gelu:
            layer.activation = gelu


def parity(model, spec, folder) -> float:
    """The largest difference between Keras' and the file's outputs on a batch of 3-term, 12-digit
    expressions (with their rows written, for a decoder)."""
    file = DigitFile(folder)
    expressions = digits.draw(np.random.default_rng(7), 16, terms=(3, 3), digits=(12, 12))
    if spec.is_decoder:
        encoded = [digits.encode(e, spec.format) for e in expressions]
        arrays = [np.stack([getattr(x, n) for x in encoded]) for n in ("tokens", "ids", "levels")]
        keras_out, file_out = np.asarray(model.predict_on_batch(arrays)), file.logits(*arrays)
        return float(np.max(np.abs(keras_out - file_out)))
    columns = digits.columns(expressions)
    keras_out, file_out = model.predict_on_batch(columns), file.columns(columns)
    return float(max(np.max(np.abs(np.asarray(keras_out[k]) - file_out[k])) for k in ("digits", "sign")))


if __name__ == "__main__":
    for argument in sys.argv[1:]:
        result = export(argument)
        print(f"{argument}: {ONNX_FILE}, parity {result['parity_max_logit_difference']:.2e}")
