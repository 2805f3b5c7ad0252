"""Conversions that run in a child process, so a converter that crashes cannot take the caller with it.

``python -m predcalc.deploy.child litert MODEL.keras OUT.tflite SETTING REPRESENTATIVE.npy`` (a
full-integer calibration segfaulted on a non-unrolled LSTM at batch 1, FACTS.md) and
``python -m predcalc.deploy.child onnx-torch MODEL.keras OUT.onnx`` under ``KERAS_BACKEND=torch``
(the PyTorch backend's ONNX exporter). The caller reads the last line of stdout (JSON) or stderr.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

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
        return subprocess.run([sys.executable, "-m", "predcalc.deploy.child", arguments[0], str(model_file),
                               *arguments[1:], *extra], capture_output=True, text=True, env=env,
                              timeout=CHILD_TIMEOUT)


def _litert(model_file, out, setting, data_file) -> int:
    import keras  # the child converts: it needs Keras and TensorFlow

    import predcalc.layers  # noqa: F401  (registers the custom layers)
    from predcalc.deploy.formats.litert import LiteRTModel, export_litert

    representative = np.load(data_file)
    info = export_litert(keras.saving.load_model(model_file), out, setting,
                         representative if representative.size else None, isolate=False)
    runner = LiteRTModel(out)  # an interpreter that aborts on this file does so here, in the child
    if representative.size:
        runner(representative[:1])
    print(json.dumps(info))
    return 0


def _onnx_torch(model_file, out) -> int:
    import keras  # the child converts on the PyTorch backend

    import predcalc.layers  # noqa: F401  (registers the custom layers)
    from predcalc.deploy.formats.onnx import drop_stack_traces

    warnings.simplefilter("ignore")
    model = keras.saving.load_model(model_file)
    spec = [keras.InputSpec(shape=(1, *model.inputs[0].shape[1:]), dtype=model.inputs[0].dtype)]
    model.export(out, format="onnx", input_signature=spec, verbose=False)
    drop_stack_traces(out)
    return 0


CHILDREN = {"litert": _litert, "onnx-torch": _onnx_torch}

if __name__ == "__main__":
    sys.exit(CHILDREN[sys.argv[1]](*sys.argv[2:]))
