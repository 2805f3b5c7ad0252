"""TF-TRT: compile an exported SavedModel into TensorRT engines (FP32, FP16, INT8 with calibration).

TF-TRT needs a TensorFlow built with TensorRT. TensorFlow from PyPI is not (its converter says
"Tensorflow has not been built with TensorRT support"); NVIDIA's TensorFlow for JetPack is, so
this step runs on the Jetson itself, on the SavedModel that ``predcalc export`` writes::

    python -m predcalc.deploy.tensorrt reports/runs/01_fnn/export/fnn2 --precision FP16
    predcalc predict "3 - -2 + 4" --model reports/runs/01_fnn/export/fnn2/saved_model_trt_fp16

Engines are built with dynamic shapes (``use_dynamic_shape=True``, an optimisation profile over
the batch sizes in :data:`BATCH_SIZES`): TensorRT 10 removed implicit batch, and an engine built
at one batch size does not serve another (TF-TRT then falls back to TensorFlow without a word).
:func:`convert_export` builds the profile from those batch sizes and checks the converted model at
exactly those sizes, and counts the ``TRTEngineOp`` nodes, so a conversion that left everything to
TensorFlow shows as 0 engines.

Where TensorRT is missing, :func:`convert` raises :class:`TensorRTUnavailableError` naming
the reason and the way to run it on a Jetson. The module needs only NumPy and TensorFlow (no
Keras): the SavedModel carries the model's forward pass.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from predcalc.data import get_tokenizer, reference_protocol
from predcalc.deploy.formats import SIDECAR
from predcalc.deploy.formats.saved_model import SavedModelRunner
from predcalc.errors import one_line
from predcalc.paths import write_if_changed

PRECISIONS = ("FP32", "FP16", "INT8")
# The batch sizes the engines' optimisation profile covers and the check runs at: one expression
# (the calculator) and a batch (``predcalc evaluate``, throughput).
BATCH_SIZES = (1, 64)
JETSON_HINT = (
    "TF-TRT runs only where TensorFlow is built with TensorRT: on a Jetson, install NVIDIA's TensorFlow "
    "for JetPack (NVIDIA's guide 'Installing TensorFlow for Jetson Platform'), copy the export directory "
    "there and run `python -m predcalc.deploy.tensorrt EXPORT_DIR --precision FP16`; elsewhere use the ONNX or "
    "LiteRT artifacts (README.md, 'Deploy on a Jetson')"
)


class TensorRTUnavailableError(RuntimeError):
    """TensorFlow here cannot build TensorRT engines (not built with TensorRT, or no libnvinfer)."""


def tensorrt_status() -> tuple[bool, str]:
    """Whether TF-TRT can run in this process, and why (not)."""
    try:  # TensorFlow (with TensorRT on a Jetson) is this module's one heavy dependency; asked for, not assumed
        import tensorflow as tf
    except ImportError as error:
        return False, f"TensorFlow is not installed ({error})"
    try:
        from tensorflow.compiler.tf2tensorrt import _pywrap_py_utils as trt_utils
    except ImportError as error:
        return False, f"TensorFlow {tf.__version__} has no TF-TRT module ({error})"
    if not trt_utils.is_tensorrt_enabled():
        return False, (
            f"TensorFlow {tf.__version__} was built without TensorRT support (as every TensorFlow wheel on PyPI is)"
        )
    linked = ".".join(map(str, trt_utils.get_linked_tensorrt_version()))
    loaded = trt_utils.get_loaded_tensorrt_version()
    if not any(loaded):
        return False, f"TensorFlow {tf.__version__} is built with TensorRT {linked} but cannot load libnvinfer"
    return True, f"TensorRT {'.'.join(map(str, loaded))} (TensorFlow {tf.__version__}, built with {linked})"


def require_tensorrt() -> str:
    """Raise :class:`TensorRTUnavailableError` unless TF-TRT can run here; else describe it."""
    available, reason = tensorrt_status()
    if not available:
        raise TensorRTUnavailableError(f"TensorRT is not available: {reason}. {JETSON_HINT}")
    return reason


def _signature_input(saved_model_dir: Path, signature_key: str):
    import tensorflow as tf  # only once tensorrt_status() said TF-TRT runs here

    loaded = tf.saved_model.load(str(saved_model_dir))
    _, specs = loaded.signatures[signature_key].structured_input_signature
    if len(specs) != 1:
        raise ValueError(f"expected one input in the {signature_key!r} signature, found {sorted(specs)}")
    ((name, spec),) = specs.items()
    return name, spec


def batch_of(inputs, size: int) -> np.ndarray:
    """The first ``size`` rows of ``inputs``, repeated if there are fewer."""
    inputs = np.asarray(inputs)
    return np.resize(inputs, (size, *inputs.shape[1:])) if len(inputs) < size else inputs[:size]


def engine_count(saved_model_dir) -> int:
    """How many ``TRTEngineOp`` nodes a converted SavedModel holds (0: TensorFlow runs it all)."""
    return (Path(saved_model_dir) / "saved_model.pb").read_bytes().count(b"TRTEngineOp")


def convert(
    saved_model_dir,
    output_dir=None,
    precision: str = "FP16",
    calibration_inputs=None,
    build_inputs=None,
    max_workspace_bytes: int = 1 << 28,
    minimum_segment_size: int = 3,
    signature_key: str = "serving_default",
    batch_sizes=BATCH_SIZES,
) -> dict:
    """Convert a SavedModel with ``TrtGraphConverterV2`` and save the result.

    Args:
        saved_model_dir: the SavedModel ``predcalc export`` wrote (``EXPORT_DIR/saved_model``).
        output_dir: where the converted SavedModel goes (default ``saved_model_trt_<precision>``
            beside the input).
        precision: ``"FP32"``, ``"FP16"`` or ``"INT8"``.
        calibration_inputs: encoded inputs, shape (n, ...), run through the graph to calibrate
            INT8 ranges (required for INT8, ignored otherwise).
        build_inputs: encoded inputs to build the engines with ahead of time, at each of
            ``batch_sizes`` (otherwise they are built on the first call on the device).
        batch_sizes: the batch sizes of the dynamic-shape optimisation profile ("Range": the
            engines serve every batch from the smallest to the largest).

    Returns:
        ``{"path", "precision", "bytes", "tensorrt", "engines_built", "batch_sizes", "trt_engines"}``.

    Raises:
        ValueError: an unknown precision, or INT8 without calibration inputs.
        FileNotFoundError: no SavedModel at ``saved_model_dir``.
        TensorRTUnavailableError: this TensorFlow cannot run TF-TRT (with how to run it on a Jetson).
    """
    precision = str(precision).upper()
    if precision not in PRECISIONS:
        raise ValueError(f"unknown TensorRT precision {precision!r}; choose one of {PRECISIONS}")
    saved_model_dir = Path(saved_model_dir)
    if not (saved_model_dir / "saved_model.pb").is_file():
        raise FileNotFoundError(f"no SavedModel (saved_model.pb) in {saved_model_dir}")
    if precision == "INT8" and (calibration_inputs is None or len(calibration_inputs) == 0):
        raise ValueError("INT8 needs calibration_inputs: encoded expressions to calibrate the ranges on")
    runtime = require_tensorrt()

    import tensorflow as tf  # only once require_tensorrt() said TF-TRT runs here
    from tensorflow.python.compiler.tensorrt import trt_convert as trt

    output_dir = Path(output_dir) if output_dir else saved_model_dir.parent / f"saved_model_trt_{precision.lower()}"
    name, spec = _signature_input(saved_model_dir, signature_key)

    def batches(inputs):
        def generate():
            for row in np.asarray(inputs):
                yield (tf.constant(row[None, ...], dtype=spec.dtype),)

        return generate

    params = trt.TrtConversionParams(
        precision_mode=precision,
        max_workspace_size_bytes=max_workspace_bytes,
        minimum_segment_size=minimum_segment_size,
        use_calibration=precision == "INT8",
    )
    # TensorRT 10 has no implicit batch: dynamic shapes, one profile over the batch sizes
    converter = trt.TrtGraphConverterV2(
        input_saved_model_dir=str(saved_model_dir),
        input_saved_model_signature_key=signature_key,
        conversion_params=params,
        use_dynamic_shape=True,
        dynamic_shape_profile_strategy="Range",
    )
    if precision == "INT8":
        converter.convert(calibration_input_fn=batches(calibration_inputs))
    else:
        converter.convert()
    sizes = sorted({int(b) for b in batch_sizes})
    if build_inputs is not None and len(build_inputs):

        def build_batches():
            for size in sizes:
                yield (tf.constant(batch_of(build_inputs, size), dtype=spec.dtype),)

        converter.build(input_fn=build_batches)
    converter.save(str(output_dir))
    size = sum(f.stat().st_size for f in output_dir.rglob("*") if f.is_file())
    return {
        "path": str(output_dir),
        "precision": precision,
        "bytes": size,
        "tensorrt": runtime,
        "engines_built": build_inputs is not None and len(build_inputs) > 0,
        "batch_sizes": sizes,
        "trt_engines": engine_count(output_dir),
    }


def convert_export(export_dir, precisions=("FP16",), calibration_expressions=None, check_expressions=None) -> dict:
    """Convert an export directory's SavedModel at each precision and check it against the SavedModel.

    Calibration and check expressions default to the reference protocol's training and in-range test
    expressions (data seed 0), encoded by the tokeniser named in ``predcalc.json``.

    The engines are built and checked at the same batch sizes (:data:`BATCH_SIZES`): the check
    expressions run in batches of exactly each size, against the plain SavedModel.

    Returns:
        ``{precision: {"path", "bytes", "max_abs_diff", "max_abs_diff_by_batch", "trt_engines", ...}}``;
        a precision that fails holds
        ``{"error": reason}``. Also written to ``export_dir/tensorrt.json``.
    """

    export_dir = Path(export_dir)
    sidecar = export_dir / SIDECAR
    if not sidecar.is_file():
        raise FileNotFoundError(f"{sidecar} is missing: it names the tokenizer the model reads")
    info = json.loads(sidecar.read_text())
    tokenizer = get_tokenizer(info["tokenizer"], **info.get("tokenizer_config", {}))
    require_tensorrt()  # before the protocol is built: say at once what is missing
    if calibration_expressions is None or check_expressions is None:
        protocol = reference_protocol(0)
        calibration_expressions = calibration_expressions or protocol.train.expressions[:500]
        check_expressions = check_expressions or protocol.test_in.expressions
    calibration = tokenizer.encode_batch(list(calibration_expressions))
    check = tokenizer.encode_batch(list(check_expressions))
    reference = SavedModelRunner(export_dir / "saved_model")(check)
    results = {}
    for precision in precisions:
        try:
            result = convert(
                export_dir / "saved_model",
                precision=precision,
                calibration_inputs=calibration,
                build_inputs=check,
                batch_sizes=BATCH_SIZES,
            )
            runner = SavedModelRunner(result["path"])
            by_batch = {}
            for size in result["batch_sizes"]:  # whole batches of exactly this size
                usable = len(check) // size * size or size
                inputs = batch_of(check, usable)
                outputs = np.concatenate([runner(inputs[i : i + size]) for i in range(0, usable, size)])
                expected = reference[:usable] if len(reference) >= usable else np.resize(reference, outputs.shape)
                by_batch[str(size)] = float(np.max(np.abs(outputs - expected)))
            result["max_abs_diff_by_batch"] = by_batch
            result["max_abs_diff"] = max(by_batch.values())
        except TensorRTUnavailableError:
            raise
        except Exception as error:  # noqa: BLE001  TF-TRT raises TensorFlow's own classes; the other precisions go on
            result = {"error": one_line(error)}
        results[precision] = result
    write_if_changed(export_dir / "tensorrt.json", json.dumps(results, indent=1))
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m predcalc.deploy.tensorrt",
        description="Build TF-TRT engines from an export directory's SavedModel "
        "(needs TensorFlow with TensorRT, e.g. NVIDIA's build on a Jetson).",
    )
    parser.add_argument("export_dir", help="a directory written by `predcalc export` (saved_model/, predcalc.json)")
    parser.add_argument("--precision", nargs="+", default=["FP16"], type=str.upper, choices=PRECISIONS)
    args = parser.parse_args(argv)
    try:
        results = convert_export(args.export_dir, precisions=args.precision)
    except (TensorRTUnavailableError, FileNotFoundError, ValueError) as error:
        print(f"predcalc tensorrt: error: {error}", file=sys.stderr)
        return 2
    for precision, result in results.items():
        status = result.get("error") or (
            f"{result['path']}  {result['bytes'] / 1024:.1f} KB  "
            f"max abs diff vs SavedModel {result['max_abs_diff']:.3g}"
        )
        print(f"{precision}: {status}")
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
