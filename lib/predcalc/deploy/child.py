"""Conversions that run in a child process, so a converter that crashes cannot take the caller with it.

``python -m predcalc.deploy.child litert MODEL.keras OUT.tflite SETTING REPRESENTATIVE.npy`` (a
full-integer calibration segfaulted on a non-unrolled LSTM at batch 1, measured on this project's machine) and
``python -m predcalc.deploy.child onnx-torch MODEL.keras OUT.onnx`` under ``KERAS_BACKEND=torch``
(the PyTorch backend's ONNX exporter). The caller reads the last line of stdout (JSON) or stderr.
"""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np

from predcalc.deploy.formats.litert import LiteRTModel, export_litert
from predcalc.deploy.formats.onnx import drop_stack_traces


def _litert(model_file, out, setting, data_file) -> int:
    import keras  # the child converts: it needs Keras and TensorFlow

    import predcalc.layers  # noqa: F401  (registers the custom layers)

    representative = np.load(data_file)
    info = export_litert(
        keras.saving.load_model(model_file),
        out,
        setting,
        representative if representative.size else None,
        isolate=False,
    )
    runner = LiteRTModel(out)  # an interpreter that aborts on this file does so here, in the child
    if representative.size:
        runner(representative[:1])
    print(json.dumps(info))
    return 0


def _onnx_torch(model_file, out) -> int:
    import keras  # the child converts on the PyTorch backend

    import predcalc.layers  # noqa: F401  (registers the custom layers)

    warnings.simplefilter("ignore")
    model = keras.saving.load_model(model_file)
    spec = [keras.InputSpec(shape=(1, *model.inputs[0].shape[1:]), dtype=model.inputs[0].dtype)]
    model.export(out, format="onnx", input_signature=spec, verbose=False)
    drop_stack_traces(out)
    return 0


CHILDREN = {"litert": _litert, "onnx-torch": _onnx_torch}

if __name__ == "__main__":
    sys.exit(CHILDREN[sys.argv[1]](*sys.argv[2:]))
