"""Timing helpers for the speed study (notebook 21): minGRU / minLSTM (scan and step loop) against Keras
GRU / LSTM, interleaved in a rotating order so a slow-down of the shared machine hits all alike.
:func:`peak_memory` gives lower bounds (tracemalloc misses TensorFlow's allocator; RSS is a high-water mark)."""

from __future__ import annotations

import dataclasses
import resource
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Mapping

import keras
import numpy as np
from tqdm.auto import tqdm

from predcalc.layers import MinGRU, MinLSTM
from predcalc.paths import save_figure
from predcalc.training import fit

# min*_parallel: the layer as the model uses it (returning its last state, the parallel path reduces
# to h_T in one logsumexp, no scan); min*_scan: the parallel scan of the whole sequence, its last
# step taken (what a layer under another one computes); min*_step: the step loop.
PATHS = ("parallel", "scan", "step")
KINDS = ("keras_gru", "keras_lstm", *(f"{family}_{path}" for family in ("min_gru", "min_lstm") for path in PATHS))
PHASES = ("train_step", "inference")

# arXiv 2410.01201 (Feng et al. 2024): minGRU / minLSTM training-step speed-up over GRU / LSTM on a T4 GPU
PAPER_SPEEDUP = {"min_gru": {512: 175, 4096: 1324}, "min_lstm": {512: 235, 4096: 1361}}


def interleaved_timings(
    candidates: Mapping[str, Callable[[], object]], repeats: int = 5, warmup: int = 1
) -> dict[str, list[float]]:
    """``{name: [seconds] * repeats}``, interleaved in a rotating order after ``warmup`` calls."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1. Received: repeats={repeats}")
    if warmup < 0:
        raise ValueError(f"warmup must be non-negative. Received: warmup={warmup}")
    if not candidates:
        raise ValueError("candidates must name at least one callable. Received: candidates={}")
    names = list(candidates)
    for name in names:
        for _ in range(warmup):
            candidates[name]()
    times = {name: [] for name in names}
    for r in range(repeats):
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            start = time.perf_counter()
            candidates[name]()
            times[name].append(time.perf_counter() - start)
    return times


def medians(times: Mapping[str, list[float]]) -> dict[str, float]:
    return {name: float(statistics.median(values)) for name, values in times.items()}


def _maxrss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)  # Linux reports KiB


def peak_memory(fn: Callable[[], object]) -> dict[str, int]:
    """Runs ``fn`` once: ``{"tracemalloc_peak", "rss_peak_growth"}`` in bytes (see the module docstring)."""
    rss_before = _maxrss_bytes()
    already = tracemalloc.is_tracing()
    if not already:
        tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not already:
            tracemalloc.stop()
    return {"tracemalloc_peak": int(peak), "rss_peak_growth": max(0, _maxrss_bytes() - rss_before)}


def build_layer(kind: str, units: int):
    if kind == "keras_gru":
        return keras.layers.GRU(units)
    if kind == "keras_lstm":
        return keras.layers.LSTM(units)
    if kind.startswith("min_gru_") or kind.startswith("min_lstm_"):
        cls = MinGRU if kind.startswith("min_gru_") else MinLSTM
        path = kind.rsplit("_", 1)[1]
        if path == "scan":
            return keras.Sequential(
                [cls(units, return_sequences=True), keras.layers.Lambda(lambda h: h[:, -1])], name=f"{kind}_last_step"
            )
        if path in ("parallel", "step"):
            return cls(units, parallel=path == "parallel")
    raise ValueError(f"unknown kind; choose one of {', '.join(KINDS)}. Received: kind={kind!r}")


@dataclasses.dataclass
class Bench:
    kind: str
    length: int
    model: object
    x: np.ndarray
    y: np.ndarray

    def train_step(self):
        return self.model.train_on_batch(self.x, self.y)

    def inference(self):
        return self.model.predict_on_batch(self.x)


def make_bench(kind: str, length: int, batch: int = 8, units: int = 32, features: int = 4, seed: int = 0) -> Bench:
    if length < 1 or batch < 1:
        raise ValueError(f"length and batch must be positive. Received: length={length}, batch={batch}")
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((length, features)), build_layer(kind, units), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse", jit_compile=False)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, length, features)).astype("float32")
    y = rng.normal(size=(batch, 1)).astype("float32")
    return Bench(kind, length, model, x, y)


def profile(
    lengths=(64, 256),
    kinds=KINDS,
    repeats: int = 5,
    warmup: int = 1,
    batch: int = 8,
    units: int = 32,
    features: int = 4,
    memory: bool = True,
    progress: bool = False,
) -> list[dict]:
    """Median train-step and inference seconds of every kind at every length, interleaved per length."""
    records = []
    for length in tqdm(lengths, desc="lengths", disable=not progress):
        benches = {kind: make_bench(kind, length, batch, units, features) for kind in kinds}
        train = interleaved_timings({k: b.train_step for k, b in benches.items()}, repeats, warmup)
        infer = interleaved_timings({k: b.inference for k, b in benches.items()}, repeats, warmup)
        train_median, infer_median = medians(train), medians(infer)
        for kind, bench in benches.items():
            record = {
                "length": int(length),
                "kind": kind,
                "train_step": train_median[kind],
                "inference": infer_median[kind],
                "train_step_times": train[kind],
                "inference_times": infer[kind],
            }
            if memory:
                record["memory"] = peak_memory(bench.train_step)
            records.append(record)
    return records


def speedups(records: list[dict], phase: str = "train_step") -> list[dict]:
    """Per length, each min* path's speed-up over its Keras counterpart (above 1: faster), and parallel over step."""
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}. Received: phase={phase!r}")
    by_key = {(r["length"], r["kind"]): r[phase] for r in records}
    rows = []
    for length in sorted({r["length"] for r in records}):
        for family, reference in (("min_gru", "keras_gru"), ("min_lstm", "keras_lstm")):
            row = {"length": length, "family": family, "phase": phase}
            ref = by_key.get((length, reference))
            for path in PATHS:
                value = by_key.get((length, f"{family}_{path}"))
                row[f"{path}_vs_keras"] = ref / value if ref is not None and value else None
            par, step = by_key.get((length, f"{family}_parallel")), by_key.get((length, f"{family}_step"))
            row["parallel_vs_step"] = step / par if par and step else None
            rows.append(row)
    return rows


def parallel_vs_loop_step(model_name: str, x, y, repeats: int = 15) -> dict[bool, float]:
    """Median seconds of one ``train_on_batch`` of a registered model with the scan and the step loop, interleaved."""
    timed, step_seconds = {}, {}
    for parallel in (True, False):
        _, model, _ = fit.build(model_name, parallel=parallel)
        model.compile(optimizer="adam", loss="mse")
        model.train_on_batch(x, y)  # trace
        timed[parallel] = model
    for _ in range(repeats):
        for parallel, model in timed.items():
            start = time.perf_counter()
            model.train_on_batch(x, y)
            step_seconds.setdefault(parallel, []).append(time.perf_counter() - start)
    return {parallel: float(np.median(s)) for parallel, s in step_seconds.items()}


LABELS = {
    "keras_gru": "Keras GRU",
    "keras_lstm": "Keras LSTM",
    "min_gru_parallel": "minGRU (parallel, last state)",
    "min_gru_scan": "minGRU (scan of the sequence)",
    "min_gru_step": "minGRU (step loop)",
    "min_lstm_parallel": "minLSTM (parallel, last state)",
    "min_lstm_scan": "minLSTM (scan of the sequence)",
    "min_lstm_step": "minLSTM (step loop)",
}
STYLES = {"keras": "o-", "parallel": "s--", "scan": "d-.", "step": "^:"}
FAMILY_COLOURS = {"min_gru": "tab:blue", "min_lstm": "tab:red"}


def plot_speed(records: list[dict], batch: int, units: int, path=None):
    import matplotlib.pyplot as plt  # plotting only when a figure is drawn

    figure = plt.figure(figsize=(15, 6), layout="constrained")
    left, right = figure.subfigures(1, 2, width_ratios=[2, 1])
    log = {"xscale": "log", "yscale": "log", "xlabel": "sequence length"}
    for axis, phase in zip(left.subplots(1, 2), PHASES):
        for kind in KINDS:
            rows = [r for r in records if r["kind"] == kind]
            style = STYLES["keras" if kind.startswith("keras") else kind.rsplit("_", 1)[1]]
            axis.plot([r["length"] for r in rows], [r[phase] for r in rows], style, label=LABELS[kind])
        axis.set(**log, ylabel="median seconds", title=f"{phase.replace('_', ' ')} (batch {batch}, {units} units, CPU)")
        axis.grid(True, which="both", alpha=0.3)
    handles, labels = axis.get_legend_handles_labels()
    left.legend(handles, labels, loc="outside lower center", ncol=4, fontsize=8, frameon=False)

    axis = right.subplots()
    for family, marker in (("min_gru", "o"), ("min_lstm", "s")):
        colour, name = FAMILY_COLOURS[family], LABELS[f"{family}_step"].split()[0]
        rows = [r for r in speedups(records, "train_step") if r["family"] == family]
        lengths = [r["length"] for r in rows]
        for key, line, face, label in (
            ("parallel_vs_keras", "-", None, f"{name}: parallel (last state), this CPU"),
            ("scan_vs_keras", "-.", "none", f"{name}: scan of the sequence, this CPU"),
        ):
            axis.plot(lengths, [r[key] for r in rows], marker + line, mfc=face, color=colour, label=label)
        paper = PAPER_SPEEDUP[family]
        label = f"{name}: paper, T4 GPU ({', '.join(f'{v}x @ {k}' for k, v in paper.items())})"
        axis.plot(list(paper), list(paper.values()), marker, mfc="none", ms=11, mew=1.8, color=colour, label=label)
    axis.axhline(1, color="grey", lw=0.8)
    axis.set(**log, ylabel="training-step speed-up over Keras", title="speed-up: this CPU vs the paper's GPU")
    axis.grid(True, which="both", alpha=0.3)
    right.legend(*axis.get_legend_handles_labels(), loc="outside lower center", ncol=1, fontsize=8, frameon=False)
    if path is not None:
        save_figure(figure, path, dpi=120)
    return figure
