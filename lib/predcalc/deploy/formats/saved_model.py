"""A TensorFlow SavedModel directory (``saved_model/``), run through its serving signature.

The input of TF-TRT (:mod:`predcalc.deploy.tensorrt`); written unchecked (it is the Keras graph).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from predcalc.deploy.formats import ExportFormat, register


class SavedModelRunner:
    """A TensorFlow SavedModel directory (plain or TF-TRT-converted) run through its serving signature."""

    def __init__(self, path, signature: str = "serving_default"):
        import tensorflow as tf  # the runtime, imported here: LiteRT and ONNX machines never need it

        self.path = Path(path)
        if not (self.path / "saved_model.pb").is_file():
            raise FileNotFoundError(f"no SavedModel (saved_model.pb) in {self.path}")
        self._tf = tf
        self._loaded = tf.saved_model.load(str(self.path))  # keep the object alive for its variables
        self.function = self._loaded.signatures[signature]
        _, specs = self.function.structured_input_signature
        ((self.input_name, self.spec),) = specs.items()

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        tensor = self._tf.constant(np.asarray(inputs), dtype=self.spec.dtype)
        outputs = self.function(**{self.input_name: tensor})
        return next(iter(outputs.values())).numpy()


def directory_bytes(path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


class SavedModel(ExportFormat):
    name, filename, parity, runtime, default = "saved_model", "saved_model", None, None, False

    def matches(self, path) -> bool:
        return Path(path).is_dir() and (Path(path) / "saved_model.pb").is_file()

    def write(self, job, path) -> dict:
        shutil.rmtree(path, ignore_errors=True)
        job.trained.model.export(str(path), format="tf_saved_model", verbose=False)
        return {"bytes": directory_bytes(path)}

    def open(self, path, num_threads: int = 1):
        return SavedModelRunner(path)

    def export(self, job) -> dict[str, dict]:
        """Written, not checked: the record holds its size only (a failure propagates)."""
        return {self.name: self.write(job, self.path(job.directory))}


register(SavedModel())
