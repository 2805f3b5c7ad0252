"""Export the calculator's step networks as one float32 LiteRT file with a signature per step.

Each signature takes ``inputs`` (int32 ``[n, k]``) and returns ``classes`` (int32 ``[n, m]``):
the network's decision for each output. ``predcalc.json`` beside the file names the steps, their
input ranges and the training record, so :mod:`predcalc.calculator.runtime` can run it with
NumPy and ``ai-edge-litert`` alone.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from predcalc.calculator.rules import control_tables, rule_signature
from predcalc.calculator.steps import STEPS

SIDECAR = "predcalc.json"


def export_litert(networks: dict, path, info: dict | None = None) -> Path:
    """Write ``networks`` (step name -> trained Keras model) to ``path`` (a .tflite) and its sidecar."""
    import tensorflow as tf  # TensorFlow only to write the file (the runtime install has none)

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    module = tf.Module()
    signatures = {}
    for name, model in networks.items():
        weights = [np.asarray(w) for w in model.get_weights()]
        if model.name == "control_rule":  # pair scores over relations, exported as their tables
            function = _signature(tf, name, control_tables(weights))
        elif model.name.endswith("_rule"):
            function = rule_signature(tf, name, weights)
        else:
            function = _signature(tf, name, weights)
        setattr(module, name, function)
        signatures[name] = function.get_concrete_function()
    with tempfile.TemporaryDirectory() as folder:
        tf.saved_model.save(module, folder, signatures=signatures)
        converter = tf.lite.TFLiteConverter.from_saved_model(folder, signature_keys=list(signatures))
        flatbuffer = converter.convert()
    temporary = path.with_suffix(".tmp")
    temporary.write_bytes(flatbuffer)
    temporary.replace(path)
    sidecar = {
        "kind": "calculator",
        "model": "calculator",
        "steps": {
            name: {"inputs": list(STEPS[name].inputs), "outputs": list(STEPS[name].outputs)} for name in networks
        },
        **(info or {}),
    }
    (path.parent / SIDECAR).write_text(json.dumps(sidecar, indent=1, sort_keys=True) + "\n")
    return path


def _signature(tf, name: str, weights: list):
    """The step network's forward pass with its trained weights as constants (the same computation
    as :class:`predcalc.calculator.nets.DenseStep`), ending in the decision of each output."""
    step = STEPS[name]

    @tf.function(input_signature=[tf.TensorSpec([None, len(step.inputs)], tf.int32, name="inputs")])
    def run(inputs):
        if name == "control":
            pairs, bias = (tf.constant(w) for w in weights)
            radius = len(step.inputs) // 2
            centre = inputs[:, radius]
            score = tf.gather(bias, centre)
            for slot, k in enumerate([k for k in range(len(step.inputs)) if k != radius]):
                score += tf.gather(pairs[slot], centre * step.inputs[0] + inputs[:, k])
            return {"classes": tf.cast(score > 0, tf.int32)}
        x = tf.concat([tf.one_hot(inputs[:, i], radix) for i, radix in enumerate(step.inputs)], axis=-1)
        w1, b1, w2, b2, *heads = (tf.constant(w) for w in weights)
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
        h = tf.nn.relu(tf.matmul(h, w2) + b2)
        classes = [
            tf.argmax(tf.matmul(h, heads[2 * j]) + heads[2 * j + 1], axis=-1, output_type=tf.int32)
            for j in range(len(step.outputs))
        ]
        return {"classes": tf.stack(classes, axis=-1)}

    return run


def parity(networks: dict, path) -> dict:
    """How many inputs of each step's whole domain the LiteRT signature decides differently from the
    network's NumPy forward pass (itself checked against Keras by the tests)."""
    from predcalc.calculator.nets import numpy_step  # Keras and LiteRT only when parity is checked
    from predcalc.calculator.runtime import LiteRTSteps

    runners = LiteRTSteps(path)
    out = {}
    for name, model in networks.items():
        domain = STEPS[name].domain()
        out[name] = int(np.sum(np.any(runners[name](domain) != numpy_step(model)(domain), axis=1)))
    return out
