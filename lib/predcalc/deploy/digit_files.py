"""The digit models' exported files: ONNX and LiteRT written from Keras, run by ONNX Runtime or
the LiteRT interpreter with the decoding loop of :mod:`predcalc.data.digits` (NumPy), so a Jetson
needs NumPy and one runtime.

A model's folder holds ``model.onnx``, ``model.tflite`` (LiteRT's builtin kernels only; the column
GRU's file reads one expression at a time, as LiteRT converts a recurrence only at a fixed batch)
and ``digits.json`` (its registered name, how it reads an expression, its kind and training box,
and the parity of each file measured against Keras at export)::

    python -m predcalc.deploy.digit_files SEED_FOLDER   # checkpoint.keras -> the files, digits.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from predcalc.data import digits

SIDECAR = "digits.json"
ONNX_FILE = "model.onnx"
LITERT_FILE = "model.tflite"
RUNTIMES = {"onnx": ONNX_FILE, "litert": LITERT_FILE}


def is_digit_model(path) -> bool:
    """Whether ``path`` is a digit model's folder or its ``model.onnx`` (a ``digits.json`` beside it)."""
    path = Path(path)
    return (path / SIDECAR).is_file() if path.is_dir() else (path.parent / SIDECAR).is_file()


def _format_of(info: dict) -> digits.Format | None:
    return digits.Format(**info["format"]) if info.get("format") else None


class DigitFile:
    """A digit model's exported file (``runtime``: ``onnx`` or ``litert``; a file's own path picks
    by its suffix) and its sidecar: :meth:`answers` of expressions (None where the model cannot
    answer: an invalid written token, or more terms than its columns hold)."""

    def __init__(self, folder, threads: int | None = None, runtime: str = "onnx"):
        folder = Path(folder)
        given_file = folder.suffix in (".onnx", ".tflite")  # else a folder
        if given_file:
            runtime = "litert" if folder.suffix == ".tflite" else "onnx"
        if runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
        path = folder if given_file else folder / RUNTIMES[runtime]
        sidecar = path.parent / SIDECAR
        if not path.is_file() or not sidecar.is_file():
            raise FileNotFoundError(f"{path.parent} holds no {path.name} with its {SIDECAR}")
        self.path, self.runtime, self.info = path, runtime, json.loads(sidecar.read_text())
        self.format = _format_of(self.info)
        if runtime == "onnx":
            import onnxruntime  # the runtime, imported here so that the data helpers stay NumPy-only

            options = onnxruntime.SessionOptions()
            if threads:
                options.intra_op_num_threads = threads
            self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            self.output_names = [o.name for o in self.session.get_outputs()]
        else:
            from ai_edge_litert.interpreter import Interpreter  # the other runtime, only where it is used

            self.session = Interpreter(model_path=str(path), num_threads=threads or 1).get_signature_runner()

    @property
    def name(self) -> str:
        return f"{self.info['model']} seed {self.info['seed']} ({self.path.name})"

    def _run(self, feed: dict) -> dict:
        """The file's outputs by name for inputs by name (both files name their inputs as
        :func:`signature` does)."""
        if self.runtime == "onnx":
            return dict(zip(self.output_names, self.session.run(None, feed), strict=True))
        return self.session(**feed)

    def refusal(self, expression: digits.Expression) -> str | None:
        """Why this file cannot answer ``expression`` (None: it can)."""
        if self.format is None and len(expression.terms) > digits.COLUMN_SLOTS:
            return f"{len(expression.terms)} terms; {self.info['model']} reads {digits.COLUMN_SLOTS} term slots"
        if self.format is not None and self.info.get("tables"):
            encoded = digits.encode(expression, self.format)
            id_table, level_table = self.info["tables"]
            if min(digits.table_room(encoded.ids, encoded.levels, (id_table, level_table))) < 0:
                return (
                    f"{expression.width} digits and {len(expression.terms)} terms need ids or levels past "
                    f"{self.info['model']}'s learned tables ({id_table} ids, {level_table} levels)"
                )
        return None

    def logits(self, tokens, ids, levels) -> np.ndarray:
        feed = {n: a.astype(np.int32) for n, a in zip(("tokens", "ids", "levels"), (tokens, ids, levels), strict=True)}
        return next(iter(self._run(feed).values()))

    def columns(self, columns) -> dict:
        columns = columns.astype(np.float32)
        if self.runtime == "litert":  # the file reads one expression at a time
            rows = [self._columns(columns[i : i + 1]) for i in range(len(columns))]
            return {k: np.concatenate([row[k] for row in rows]) for k in ("digits", "sign")}
        return self._columns(columns)

    def _columns(self, columns) -> dict:
        named = self._run({"columns": columns})
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
    """Write ``model.onnx``, ``model.tflite`` and ``digits.json`` beside a seed's ``checkpoint.keras``
    (TensorFlow backend: Keras' ONNX export through tf2onnx, and LiteRT's converter) and check each
    file against Keras on a fixed batch. An ONNX file newer than its checkpoint is kept, with the
    parity its sidecar records (its scores are cached by its hash)."""
    import keras  # the exporting machine only (TensorFlow backend)

    from predcalc.deploy.formats.onnx import export_onnx_signature
    from predcalc.models.digits import DIGIT_MODELS  # registers the layers before loading

    folder = Path(seed_folder)
    state = json.loads((folder / "state.json").read_text())
    spec = DIGIT_MODELS.named(state["model"])
    checkpoint, onnx, sidecar = folder / "checkpoint.keras", folder / ONNX_FILE, folder / SIDECAR
    model = keras.saving.load_model(checkpoint, compile=False)
    gelu_through_erf(model)
    kept = onnx.is_file() and sidecar.is_file() and onnx.stat().st_mtime >= checkpoint.stat().st_mtime
    if not kept:
        export_onnx_signature(model, onnx, signature(spec))
    litert = export_litert(model, spec, folder / LITERT_FILE)
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
    previous = json.loads(sidecar.read_text()) if kept else {}
    sidecar.write_text(json.dumps(info, indent=1) + "\n")
    original = keras.saving.load_model(checkpoint, compile=False)
    info["parity_max_logit_difference"] = (
        previous["parity_max_logit_difference"] if kept else parity(original, spec, folder)
    )
    if "error" not in litert:
        litert["parity_max_logit_difference"] = parity(original, spec, folder, "litert")
    info["bytes"] = onnx.stat().st_size
    info["litert"] = litert
    sidecar.write_text(json.dumps(info, indent=1) + "\n")
    return info


def signature(spec, batch: int | None = None) -> list:
    """The input signature of a digit model's files, its inputs named ``tokens``, ``ids`` and
    ``levels`` (a decoder) or ``columns`` (the column GRU); any length, and any batch or ``batch``."""
    import tensorflow as tf  # the exporting machine only

    if spec.is_decoder:
        return [[tf.TensorSpec((batch, None), tf.int32, name=n) for n in ("tokens", "ids", "levels")]]
    return [tf.TensorSpec((batch, None, digits.COLUMN_FEATURES), tf.float32, name="columns")]


def export_litert(model, spec, path) -> dict:
    """``model.tflite`` from the (GELU-through-erf) model with LiteRT's builtin kernels only:
    ``{"bytes"}``, or ``{"error"}`` with the converter's first line where it does not convert."""
    import tensorflow as tf  # the exporting machine only

    path = Path(path)
    batch = None if spec.is_decoder else 1  # LiteRT lowers a recurrence's loop only at a fixed batch
    try:
        model.export(
            str(path),
            format="litert",
            input_signature=signature(spec, batch),
            verbose=False,
            target_spec={"supported_ops": [tf.lite.OpsSet.TFLITE_BUILTINS]},
        )
    except Exception as error:  # noqa: BLE001  the converter's message says which op has no builtin kernel
        path.unlink(missing_ok=True)
        return {"error": str(error).strip().splitlines()[0][:300]}
    return {"bytes": path.stat().st_size}


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


def parity(model, spec, folder, runtime: str = "onnx") -> float:
    """The largest difference between Keras' and the file's outputs on a batch of 3-term, 12-digit
    expressions (with their rows written, for a decoder)."""
    file = DigitFile(folder, runtime=runtime)
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
        litert = result["litert"]
        litert_text = litert.get("error") or f"parity {litert['parity_max_logit_difference']:.2e}"
        print(
            f"{argument}: {ONNX_FILE}, parity {result['parity_max_logit_difference']:.2e}; {LITERT_FILE}, {litert_text}"
        )
