"""ONNX (``model.onnx``), run by ONNX Runtime.

Written by Keras' ONNX export (tf2onnx on the TensorFlow backend) with a flexible batch where the
converter allows it; if that fails or does not match Keras, by the PyTorch backend (torch.export
and onnxscript, batch 1) in a child process (:data:`CONVERTERS`).
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

import numpy as np

from predcalc.deploy.formats import EXACT, ExportFormat, input_signature, register, run_child, tensorflow


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


def export_onnx(model, path, opset: int | None = None) -> dict:
    """Write ``model.onnx`` with Keras' ONNX export (tf2onnx on the TensorFlow backend).

    A flexible batch first (ONNX Runtime then takes any batch); if the converter refuses it, a
    fixed batch of 1 as for LiteRT. If both fail, the first (flexible-batch) error is raised.

    Returns:
        ``{"path", "bytes", "batch"}``; ``batch`` is None for a flexible batch, else 1.
    """
    tf = tensorflow("ONNX export")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    first_error = None
    for batch in (None, 1):
        try:
            with _converter_log() as logged, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.export(
                    str(path),
                    format="onnx",
                    input_signature=input_signature(model, tf, batch),
                    opset_version=opset,
                    verbose=False,
                )
            unsupported = [message for message in logged if message.startswith("Unsupported ops")]
            if unsupported:  # tf2onnx logs these and still writes a file that no runtime loads
                path.unlink(missing_ok=True)
                raise UnsupportedOpsError(f"tf2onnx: {unsupported[0]}")
            return {"path": str(path), "bytes": path.stat().st_size, "batch": batch}
        except UnsupportedOpsError:  # a fixed batch does not help
            raise
        except Exception as error:  # noqa: BLE001  the converter's own error; try the fixed batch once
            first_error = first_error or error
            path.unlink(missing_ok=True)
    raise first_error


def export_onnx_torch(model, path) -> dict:
    """``model.onnx`` from the PyTorch backend (torch.export + onnxscript), in a child process.

    The route that converts what tf2onnx cannot (``Log1p`` of the log-space scans, the TensorArray
    and ``If`` nodes of sLSTM and Mamba): the model is reloaded with ``KERAS_BACKEND=torch`` and
    exported with a fixed input signature of batch 1 (a flexible one silently falls back to an
    exporter that gives wrong numbers, measured here). The caller checks the file against Keras.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    result = run_child(model, ["onnx-torch", str(path)], env={**os.environ, "KERAS_BACKEND": "torch"})
    if result.returncode != 0 or not path.is_file():
        lines = [line for line in result.stderr.strip().splitlines() if line.strip() and "Warning" not in line]
        raise RuntimeError(f"PyTorch-backend ONNX export failed: {lines[-1] if lines else result.returncode}")
    return {"path": str(path), "bytes": path.stat().st_size, "batch": 1, "converter": "torch"}


def drop_stack_traces(path) -> None:
    """Remove the per-node Python stack traces the PyTorch exporter writes into an ONNX file's metadata:
    they name the paths of the machine that exported it, and no runtime reads them."""
    import onnx  # the exporting machine only

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


_ONNX_TYPES = {
    "tensor(float)": np.float32,
    "tensor(int32)": np.int32,
    "tensor(int64)": np.int64,
    "tensor(double)": np.float64,
}


def onnx_providers() -> list[str]:
    """ONNX Runtime's CUDA provider where it is installed (onnxruntime-gpu, e.g. on a Jetson), else CPU."""
    import onnxruntime  # the runtime, imported here: a machine with LiteRT only never needs it

    available = onnxruntime.get_available_providers()
    return [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in available] or available


class ONNXModel:
    """A ``.onnx`` file run by ONNX Runtime (CPU unless ``providers`` names others, e.g. CUDA)."""

    def __init__(self, path, num_threads: int = 1, providers=None):
        import onnxruntime  # the runtime, imported here: a machine with LiteRT only never needs it

        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"no such model file: {self.path}")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = num_threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = onnxruntime.InferenceSession(
            str(self.path), options, providers=providers or ["CPUExecutionProvider"]
        )
        self.input = self.session.get_inputs()[0]
        self.dtype = _ONNX_TYPES.get(self.input.type, np.float32)
        # what the file declares it reads and answers in (the predictor's refusals name it)
        output = self.session.get_outputs()[0].type
        self.dtypes = (
            np.dtype(self.dtype).name,
            np.dtype(_ONNX_TYPES[output]).name if output in _ONNX_TYPES else output,
        )
        self.fixed_batch = self.input.shape[0] if isinstance(self.input.shape[0], int) else None

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        """Outputs for a batch of encoded inputs, shape (n, ...)."""
        inputs = np.asarray(inputs).astype(self.dtype)
        if self.fixed_batch is None:
            return self.session.run(None, {self.input.name: inputs})[0]
        return np.concatenate(
            [
                self.session.run(None, {self.input.name: inputs[i : i + self.fixed_batch]})[0]
                for i in range(0, len(inputs), self.fixed_batch)
            ]
        )


# Tried in order until one writes a file that matches Keras: (name, writer(model, path) -> info).
CONVERTERS = (("tf2onnx", export_onnx), ("torch", export_onnx_torch))


class ONNX(ExportFormat):
    name, filename, parity, runtime = "onnx", "model.onnx", EXACT, "onnxruntime"

    def write(self, job, path, converter=export_onnx) -> dict:
        info = converter(job.trained.model, path)
        return {"bytes": info["bytes"], "batch": info["batch"]}

    def open(self, path, num_threads: int = 1, providers=None):
        return ONNXModel(path, num_threads=num_threads, providers=providers or onnx_providers())

    def export(self, job) -> dict[str, dict]:
        """Each of :data:`CONVERTERS` until one matches Keras; the others' records in ``tried``."""
        path, attempts = self.path(job.directory), []
        for name, converter in CONVERTERS:
            path.unlink(missing_ok=True)
            try:
                record = {
                    **self.write(job, path, converter),
                    "converter": name,
                    **job.check(self.open(path, providers=["CPUExecutionProvider"])),
                    "limits": job.limits,
                }
                record = self.decide(job, record, path)
            except Exception as error:  # noqa: BLE001  the converter's or runtime's own error; try the next
                record = job.failure(error, path, converter=name)
            if record["verdict"] == "use":
                return {self.name: {**record, **({"tried": attempts} if attempts else {})}}
            attempts.append(record)
        why = " | ".join(f"{a['converter']}: {a.get('error') or a['reason']}" for a in attempts)
        return {self.name: {**attempts[-1], "error": why, "tried": attempts[:-1]}}


register(ONNX())


def export_onnx_signature(model, path, signature, opset: int | None = None) -> dict:
    """Write ``model.onnx`` with Keras' ONNX export for a model of several inputs, given their
    ``tf.TensorSpec`` signature (batch and length flexible where the specs say None)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _converter_log() as logged, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.export(str(path), format="onnx", input_signature=signature, opset_version=opset, verbose=False)
    unsupported = [message for message in logged if message.startswith("Unsupported ops")]
    if unsupported:
        path.unlink(missing_ok=True)
        raise UnsupportedOpsError(f"tf2onnx: {unsupported[0]}")
    return {"path": str(path), "bytes": path.stat().st_size}
