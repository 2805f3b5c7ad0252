"""``predcalc bench``: how fast each runtime answers, against Keras and against exact arithmetic.

For every exported model (a ``model.keras`` with its artifacts beside it) and every runtime:
Keras ``predict``, a direct Keras model call, each LiteRT ``.tflite`` file, ONNX Runtime on
``model.onnx``, and Python's exact evaluator (:func:`predcalc.data.evaluate`) of the same
expressions. Each is timed end to end, from the expression text to the value (the
tokeniser included; its own cost is the ``encode_only`` row), on one thread:

- latency: one expression, ``runs`` times after a warm-up; median and 99th percentile;
- throughput: a batch of test expressions (the in-range test set), expressions per second,
  the median of ``repeats`` passes (LiteRT artifacts run one row at a time, as exported);
  "model-only" throughput is the same on inputs encoded once, the tokeniser left out.

Ratios are to Keras ``predict`` measured in the same run (latency ratio below 1 and
throughput ratio above 1 mean faster). The batch's predictions are also compared with Keras
``predict`` (max abs diff). Results go to ``reports/bench.json``; ``predcalc report`` shows
them in its "Deployment" section (:func:`deployment_markdown`).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from predcalc.data import canonical, evaluate, get_tokenizer, reference_protocol
from predcalc.deploy.export import find_keras_models
from predcalc.deploy.formats import FORMATS, SIDECAR, ArtifactAsModel, artifact_values
from predcalc.errors import one_line
from predcalc.paths import BENCH_FILE, RUNS, relative, write_if_changed

DEFAULT_EXPRESSION = "3 - -2 + 4"
REFERENCE = "keras_predict"


def single_thread_tensorflow() -> str:
    """Ask TensorFlow for one intra-op and one inter-op thread (only possible before it starts)."""
    import keras  # after the caller chose its backend; the runtime-only install never benches

    if keras.backend.backend() != "tensorflow":
        return f"{keras.backend.backend()} default"
    import tensorflow as tf  # the TensorFlow backend only, and before it starts

    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:  # TensorFlow already initialised in this process (e.g. under pytest)
        pass
    intra, inter = (
        tf.config.threading.get_intra_op_parallelism_threads(),
        tf.config.threading.get_inter_op_parallelism_threads(),
    )
    return "1" if (intra, inter) == (1, 1) else f"tensorflow default (intra {intra}, inter {inter})"


def default_models(runs: Path = RUNS) -> list[Path]:
    found = sorted(runs.glob("*/export/*/model.keras"))
    if not found:
        raise FileNotFoundError(
            f"no exported model under {runs}/*/export/*/: run `make report` (or "
            "`predcalc export RUN_DIR`) first, or pass --model"
        )
    return found


def runtimes(model_path) -> tuple[list[tuple], object, object]:
    """The runtimes of a model and its artifacts, the model's spec and its encoder.

    Each is ``(runtime, artifact, values(expressions) -> values, infer(encoded) -> values or None)``:
    ``values`` runs from the text (what a user waits for), ``infer`` from encoded inputs. Keras
    ``predict`` and a direct call come first; then every registered format's artifacts beside the
    model (:mod:`predcalc.deploy.formats`, those with a ``runtime`` name), each on one thread.
    """
    import keras  # the Keras rows are the reference every runtime is compared with

    import predcalc.layers  # noqa: F401  (registers the custom layers)
    from predcalc.models import get_spec

    model_path = Path(model_path)
    directory = model_path.parent
    info = json.loads((directory / SIDECAR).read_text())
    spec = get_spec(info["model"])
    tokenizer = get_tokenizer(info["tokenizer"], **info.get("tokenizer_config", {}))
    model = keras.saving.load_model(model_path)

    def encode(expressions):
        return tokenizer.encode_batch(list(expressions))

    def from_text(infer):
        return lambda expressions: infer(encode(expressions))

    def direct_call(x):
        return keras.ops.convert_to_numpy(model(x, training=False))

    inferences = [
        ("keras_predict", model_path, lambda x: spec.predict_values(model, x)),
        ("keras_call", model_path, lambda x: spec.predict_values(ArtifactAsModel(direct_call), x)),
    ]
    for fmt in FORMATS.values():
        for runtime, path in fmt.artifacts(directory):
            runner = fmt.open(path, num_threads=1)
            inferences.append((runtime, path, lambda x, r=runner: artifact_values(spec, r, x)))
    found = [(name, artifact, from_text(infer), infer) for name, artifact, infer in inferences]
    found.append(("python_exact", None, lambda e: np.array([float(evaluate(t)) for t in e]), None))
    found.append(("encode_only", None, encode, None))
    return found, spec, encode


def latency(fn, expression: str, runs: int, warmup: int | None = None) -> dict:
    """Median and p99 of ``runs`` single-expression calls, in microseconds."""
    if runs < 1:
        raise ValueError(f"runs must be at least 1. Received: runs={runs}")
    for _ in range(warmup if warmup is not None else max(3, runs // 10)):
        fn([expression])
    times = np.empty(runs)
    for i in range(runs):
        start = time.perf_counter_ns()
        fn([expression])
        times[i] = time.perf_counter_ns() - start
    return {"latency_median_us": float(np.median(times)) / 1e3, "latency_p99_us": float(np.percentile(times, 99)) / 1e3}


def throughput(fn, expressions, repeats: int = 3) -> tuple[float, np.ndarray]:
    """Expressions per second over the batch (median of ``repeats`` passes), and the last outputs."""
    seconds = []
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        outputs = fn(expressions)
        seconds.append(time.perf_counter() - start)
    return len(expressions) / float(np.median(seconds)), np.asarray(outputs)


def bench_model(
    model_path, runs: int = 500, expression: str = DEFAULT_EXPRESSION, batch=None, repeats: int = 3, progress=None
) -> dict:
    """Every runtime of one exported model; a runtime that fails is recorded and the others go on."""
    batch = list(batch if batch is not None else reference_protocol(0).test_in.expressions)
    found, spec, encode = runtimes(model_path)
    try:
        encoded = encode(batch)
    except ValueError:  # the tokeniser cannot encode the batch (TokenizerError): each runtime will say so below
        encoded = None
    rows, errors, reference = [], {}, None
    for name, artifact, values, infer in found:
        try:
            row = {
                "runtime": name,
                "artifact": artifact.name if artifact else None,
                "bytes": artifact.stat().st_size if artifact else None,
                **latency(values, expression, runs),
            }
            row["throughput_per_s"], outputs = throughput(values, batch, repeats)
            row["inference_per_s"] = (
                throughput(infer, encoded, repeats)[0] if infer is not None and encoded is not None else None
            )
            if name in ("encode_only", "python_exact"):  # no model output to compare
                row["max_abs_diff"] = None
            else:
                outputs = outputs.astype(np.float64).reshape(len(batch), -1)[:, 0]
                reference = outputs if name == REFERENCE else reference
                row["max_abs_diff"] = float(np.max(np.abs(outputs - reference))) if reference is not None else None
            rows.append(row)
        except Exception as error:  # noqa: BLE001  a runtime's own error classes (ONNX Runtime's are bare); the others go on
            errors[name] = one_line(error)
        if progress is not None:
            progress(name)
    keras_row = next((r for r in rows if r["runtime"] == REFERENCE), None)
    for row in rows:
        row["latency_ratio"] = row["latency_median_us"] / keras_row["latency_median_us"] if keras_row else None
        row["throughput_ratio"] = row["throughput_per_s"] / keras_row["throughput_per_s"] if keras_row else None
        row["inference_ratio"] = (
            row["inference_per_s"] / keras_row["inference_per_s"]
            if keras_row and row["inference_per_s"] and keras_row["inference_per_s"]
            else None
        )
    return {"model": spec.name, "label": spec.label, "path": relative(model_path), "results": rows, "errors": errors}


def bench(
    model_paths=None,
    runs: int = 500,
    expression: str = DEFAULT_EXPRESSION,
    batch_size: int | None = None,
    repeats: int = 3,
    output=BENCH_FILE,
    progress: bool = True,
) -> dict:
    """Benchmark every model and write ``output`` (JSON); returns what was written."""
    import keras  # the record names the Keras backend and version the reference ran on
    from tqdm.auto import tqdm  # not in the runtime-only install

    if runs < 1:
        raise ValueError(f"runs must be at least 1. Received: runs={runs}")
    threads = single_thread_tensorflow()
    expression = canonical(expression)
    paths = [p for path in model_paths for p in find_keras_models(path)] if model_paths else default_models()
    batch = list(reference_protocol(0).test_in.expressions)[:batch_size]
    results = []
    with tqdm(total=len(paths), desc="bench", disable=not progress) as bar:
        for path in paths:
            label = Path(path).parent.name
            bar.set_postfix_str(label)
            try:
                results.append(
                    bench_model(
                        path,
                        runs,
                        expression,
                        batch,
                        repeats,
                        progress=lambda runtime, label=label: bar.set_postfix_str(f"{label} {runtime}"),
                    )
                )
            except Exception as error:  # noqa: BLE001  a model Keras cannot load raises its own classes; the batch goes on
                results.append({"path": relative(path), "error": one_line(error)})
            bar.update()
    record = {
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average": list(os.getloadavg()),
        "threads": threads,
        "runs": runs,
        "expression": expression,
        "batch": len(batch),
        "repeats": repeats,
        "reference": REFERENCE,
        "models": results,
    }
    if output is not None:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        write_if_changed(output, json.dumps(record, indent=1))
    return record


def _number(value, digits: str = ".3g") -> str:
    return "" if value is None else format(value, digits)


def bench_table(record: dict) -> str:
    """The benchmark as a markdown table, one row per model and runtime."""
    header = [
        "model",
        "runtime",
        "KB",
        "max abs diff",
        "median µs",
        "p99 µs",
        "latency ÷ predict",
        "expr/s",
        "throughput ÷ predict",
        "model-only expr/s",
        "model-only ÷ predict",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for model in record["models"]:
        if "error" in model:
            lines.append(f"| {model['path']} | error: {model['error']} |" + " |" * (len(header) - 2))
            continue
        for row in model["results"]:
            lines.append(
                "| "
                + " | ".join(
                    [
                        model["label"],
                        row["runtime"],
                        "" if row["bytes"] is None else f"{row['bytes'] / 1024:.1f}",
                        _number(row["max_abs_diff"], ".2g"),
                        f"{row['latency_median_us']:.1f}",
                        f"{row['latency_p99_us']:.1f}",
                        _number(row["latency_ratio"], ".3g"),
                        f"{row['throughput_per_s']:,.0f}",
                        _number(row["throughput_ratio"], ".3g"),
                        _number(row["inference_per_s"], ",.0f"),
                        _number(row["inference_ratio"], ".3g"),
                    ]
                )
                + " |"
            )
        for runtime, reason in model["errors"].items():
            lines.append(f"| {model['label']} | {runtime} | error: {reason} |" + " |" * (len(header) - 3))
    return "\n".join(lines)


def deployment_markdown(record: dict) -> list[str]:
    """The report's "Deployment" section from ``bench.json``."""
    return [
        "## Deployment (`predcalc bench`)",
        "",
        f"End-to-end time from expression text to value on {record['cpu_count']} CPU cores "
        f"({record['machine']}, Keras backend {record['backend']}, threads: {record['threads']}, load average "
        f"{record['load_average'][0]:.1f} at the start): latency of `{record['expression']}` over "
        f"{record['runs']} runs, throughput on {record['batch']} in-range test expressions (model-only: inputs "
        f"encoded once, the tokeniser left out). Ratios are to Keras `predict` in the same run; max abs diff "
        f"compares each runtime's values with it on the batch. "
        f"Measured {record['created']}; rerun with `predcalc bench`.",
        "",
        bench_table(record),
        "",
    ]
