"""The calculator study's computations: train, export and score each seed, rung and ablation.

Every function returns plain JSON-able records; :func:`predcalc.calculator.cache.cached` stores each
one under the run's ``parts/`` folder so a long study resumes where it stopped. The study's other jobs
live beside it: the cache (:mod:`~predcalc.calculator.cache`), its tables
(:mod:`~predcalc.calculator.tables`: also the values the notebook glues into its markdown), figure
(:mod:`~predcalc.calculator.plots`) and the given pieces (:mod:`~predcalc.calculator.given_study`);
their names are re-exported here, where the notebook and the report find them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from predcalc.calculator import ablations
from predcalc.calculator.bench import bench, speed_record
from predcalc.calculator.cache import FINGERPRINTED, cached, code_fingerprint, code_versions
from predcalc.calculator.engine import Engine, answer_text
from predcalc.calculator.nets import DenseStep, build_step, check_step, numpy_step
from predcalc.calculator.plots import plot_axes
from predcalc.calculator.rules import train_control
from predcalc.calculator.steps import STEPS
from predcalc.calculator.tables import (
    ABLATION_LABELS,
    AXIS_FAMILIES,
    CHOICES,
    COMPETENT,
    CONFIDENCE,
    LOST_INSIDE,
    SPEED_GOAL,
    TRAINING_BOX,
    ablation_rows,
    carrier_frame,
    carrier_rows,
    carrier_texts,
    check_frame,
    comparison_frame,
    error_bound,
    family_frame,
    family_texts,
    inside_world,
    order,
    speed_frame,
    speed_texts,
    speed_verdicts,
)
from predcalc.calculator.train import Recipe, engine_from, rule_training_rows, trace, train_calculator, train_rules
from predcalc.data.calculator_families import FAMILIES, INTEGER_WORLD, TRAINING_WORLD, axes, draw, families
from predcalc.data.exact_answers import score_answers


def adversarial(n: int = 200, seed: int = 2000, digits: tuple[int, int] = (10, 60)) -> list[tuple[str, str]]:
    """The adversarial-digits family: atypical digit patterns that break learned arithmetic, each fixed
    by ``seed`` (lengths in ``digits``): ``000...002 x 000...002`` (leading zeros written out),
    ``10^n - 1`` chains (``999...9 + 1``, ``10^n - 999...9``, carries and borrows through every digit),
    alternating ``9`` / ``0`` runs, and quotients with many zero digits (``a (10^m + b) / a``)."""
    from fractions import Fraction  # exact values only when the adversarial family is drawn

    from predcalc.data.calculator_families import answer
    from predcalc.data.expressions import evaluate

    rng = np.random.default_rng(seed)
    out = []
    for index in range(n):
        length = int(rng.integers(digits[0], digits[1] + 1))
        kind = index % 4
        if kind == 0:
            small = [int(rng.integers(1, 10)) for _ in range(2)]
            text = f"{'0' * (length - 1)}{small[0]} * {'0' * int(rng.integers(1, length))}{small[1]}"
        elif kind == 1:
            nines = "9" * length
            text = [f"{nines} + 1", f"1{'0' * length} - {nines}", f"{nines} * {nines}", f"-{nines} - 1"][index // 4 % 4]
        elif kind == 2:
            run = int(rng.integers(1, 4))
            pattern = ("9" * run + "0" * run) * (length // (2 * run) + 1)
            other = ("0" * run + "9" * run) * (length // (2 * run) + 1)
            text = f"{pattern[:length]} {'+-*'[index // 4 % 3]} {other[:length]}"
        else:
            a = int(rng.integers(2, 10 ** int(rng.integers(1, 6))))
            text = f"{a * (10**length + int(rng.integers(0, 100)))} / {a}"
        out.append((text, answer(Fraction(evaluate(text)))))
    return out


def score_families(answer, test_families: dict, batch_size: int = 256) -> dict:
    """Exact accuracy (and lowest terms) of ``answer: list[str] -> list[str]`` on each family."""
    out = {}
    for name, pairs in test_families.items():
        expressions = [e for e, _ in pairs]
        answers = []
        for start in range(0, len(expressions), batch_size):
            answers += answer(expressions[start : start + batch_size])
        scored = score_answers([t for _, t in pairs], answers)
        out[name] = {"n": scored["n"], "exact": scored["exact"], "lowest_terms": scored["lowest_terms"]}
    return out


def engine_answer(engine: Engine):
    return lambda expressions: [answer_text(r) for r in engine.evaluate(expressions)]


def parameters(networks: dict) -> dict:
    counts = {name: int(model.count_params()) for name, model in networks.items()}
    return {**counts, "total": sum(counts.values())}


_TRAINED: dict = {}  # (seed, expressions) -> train_calculator's result, reused by the ablations


def trained(seed: int, expressions: int) -> dict:
    """The calculator of one seed (trained once per process)."""
    key = (seed, expressions)
    if key not in _TRAINED:
        _TRAINED[key] = train_calculator(Recipe(expressions=expressions, seed=seed), seed=seed)
    return _TRAINED[key]


def train_seed(seed: int, expressions: int, test_families: dict, export_dir: Path, direct_sample: int = 20) -> dict:
    """Train every step for one seed, export it to LiteRT, score the exported file on every family."""
    from predcalc.calculator.export import export_litert, parity  # TensorFlow and LiteRT only when a seed is exported
    from predcalc.calculator.runtime import Calculator

    result = trained(seed, expressions)
    path = export_litert(
        result["networks"],
        Path(export_dir) / "model.tflite",
        {
            "seed": seed,
            "parameters": parameters(result["networks"]),
            "training_world": "at most 5 digits, 1-4 operators of + - * /, depth at most 2",
        },
    )
    started = time.perf_counter()
    calculator = Calculator(path, cache=True)  # the same decisions as forward passes (tests check it), faster
    scores = score_families(calculator.answers, test_families)
    seconds = time.perf_counter() - started
    sample = [e for pairs in test_families.values() for e, _ in pairs[:direct_sample]]
    direct = Calculator(path).answers(sample)
    return {
        "seed": seed,
        "file": path.name,
        "size_bytes": path.stat().st_size,
        "parameters": parameters(result["networks"]),
        "train_seconds": round(result["seconds"], 1),
        "steps": {
            name: {k: (round(v, 3) if isinstance(v, float) else v) for k, v in info.items()}
            for name, info in result["stats"].items()
        },
        "checks": result["checks"],
        "coverage": result["coverage"],
        "litert_parity": parity(result["networks"], path),
        "direct_agrees": sum(a == b for a, b in zip(direct, calculator.answers(sample))),
        "direct_sample": len(sample),
        "families": scores,
        "evaluate_seconds": round(seconds, 1),
    }


def rule_seed(seed: int, expressions: int, test_families: dict, export_dir: Path) -> dict:
    """Ladder rung 2 for one seed: rule steps on a third of their inputs (:func:`train_rules`),
    exported to LiteRT and scored through the file with forward passes (no cache)."""
    from predcalc.calculator.export import export_litert, parity  # TensorFlow and LiteRT only when a seed is exported
    from predcalc.calculator.runtime import Calculator

    result = train_rules(seed, expressions)
    path = export_litert(
        result["networks"],
        Path(export_dir) / "model.tflite",
        {
            "seed": seed,
            "rung": "rule steps",
            "parameters": parameters(result["networks"]),
            "steps_record": result["steps"],
            "training_world": "at most 5 digits, 1-4 operators of + - * /, depth at most 2",
        },
    )
    started = time.perf_counter()
    scores = score_families(Calculator(path).answers, test_families)
    return {
        "seed": seed,
        "rung": "rules",
        "file": path.name,
        "size_bytes": path.stat().st_size,
        "parameters": parameters(result["networks"]),
        "train_seconds": round(result["seconds"], 1),
        "steps": result["steps"],
        "litert_parity": parity(result["networks"], path),
        "families": scores,
        "evaluate_seconds": round(time.perf_counter() - started, 1),
    }


def step_record(records: list[dict]) -> dict:
    """``{step: {"reachable", "trained_on", "held_out_wrong"}}``, the worst seed's (most trained on,
    most wrong), and whether the step is a memorised tiny table."""
    out = {}
    for name in records[0]["steps"]:
        rows = [r["steps"][name] for r in records]
        out[name] = {
            "reachable": rows[0]["reachable"],
            "trained_on": max(r["trained_on"] for r in rows),
            "held_out_wrong": max(r["held_out_wrong"] for r in rows),
            "wrong": max(r["wrong"] for r in rows),
            "memorised": rows[0]["memorised"],
            "parameters": rows[0]["parameters"],
            "seeds": len(rows),
        }
    return out


def adversarial_scores(paths: dict, n: int = 200) -> dict:
    """Exact accuracy on :func:`adversarial` of each rung's exported calculators (label -> a .tflite, or
    one per seed), forward passes: per label ``n``, ``exact`` and ``lowest_terms`` (means over seeds,
    like every other family), ``min`` (the worst seed), ``seeds`` and ``per_seed``."""
    from predcalc.calculator.runtime import Calculator  # LiteRT only when exported files are scored

    pairs = {"adversarial": adversarial(n)}
    out = {}
    for label, files in paths.items():
        files = [files] if isinstance(files, (str, Path)) else list(files)
        scores = [score_families(Calculator(path).answers, pairs)["adversarial"] for path in files]
        exact = [s["exact"] for s in scores]
        out[label] = {
            "n": scores[0]["n"],
            "exact": float(np.mean(exact)),
            "lowest_terms": float(np.mean([s["lowest_terms"] for s in scores])),
            "min": float(min(exact)),
            "seeds": len(scores),
            "per_seed": exact,
        }
    return out


def control_on_seeds(seeds, expressions: int) -> dict:
    """The rule rung's control trained alone, as :func:`train_rules` trains it (a third of its windows,
    from traces of ``expressions`` short expressions of each seed), and checked on every reachable
    window: meant for seeds its training method was never tuned on. Per seed: trained_on, wrong on
    the held-out windows, and the training margin."""
    step, out = STEPS["control"], {}
    reachable = step.reachable()
    for seed in seeds:
        rows = rule_training_rows(trace(TRAINING_WORLD, expressions, seed), seed)["control"]
        model, info = train_control(rows, seed=seed)
        wrong = ~np.all(np.asarray(numpy_step(model)(reachable)) == step.reference(reachable), axis=1)
        held_out = ~np.isin(step.index(reachable), step.index(rows))
        out[str(seed)] = {
            "reachable": int(len(reachable)),
            "trained_on": int(len(np.unique(rows, axis=0))),
            "held_out_wrong": int((wrong & held_out).sum()),
            "margin": round(float(info["margin"]), 3),
        }
    return out


def held_out_scores(files: list, n: int, seed: int, development: dict | None = None) -> dict:
    """The rule calculator on a second draw: every family drawn afresh with ``seed`` (the reference
    protocol's fixed sets left out: they do not change with the seed) and an adversarial draw of the
    same seed, scored through each seed's exported file with forward passes. Notebook 40's second draw
    (family seed 7777) was scored again later, so the findings' claim uses another
    (:mod:`predcalc.calculator.untouched`).

    Returns ``{"family_seed", "n", "expressions", "shared_with_development", "families", "boxes"}``:
    per family the mean and worst seed (:func:`summary`) and its box (:func:`family_boxes`);
    ``shared_with_development`` counts the
    expressions that also occur in ``development`` (the draw the study was checked on)."""
    from predcalc.calculator.runtime import Calculator  # LiteRT only when exported files are scored

    fixed = {"seed_in", "seed_out", "seed_long"}  # the reference protocol's own test sets, alike for every seed
    drawn = families(n=n, seed=seed, names=[name for name in FAMILIES if name not in fixed])
    drawn["adversarial"] = adversarial(n, seed=seed)
    seen = {e for pairs in (development or {}).values() for e, _ in pairs}
    records = [{"families": score_families(Calculator(path).answers, drawn)} for path in files]
    return {
        "family_seed": seed,
        "n": n,
        "expressions": sum(len(pairs) for pairs in drawn.values()),
        "shared_with_development": sum(e in seen for pairs in drawn.values() for e, _ in pairs),
        "families": summary(records),
        "boxes": family_boxes(drawn),
    }


def ladder_fields(
    rules_records: list[dict], bench_record: dict | None, adversarial: dict | None = None, held_out: dict | None = None
) -> dict:
    """The record's top-level ``"steps"`` (per step: reachable, trained_on, held_out_wrong, worst seed)
    and ``"speed"`` (each path's time over Python's), the rule rung's family summary, each rung's
    adversarial score (:func:`adversarial_scores`) and the rule rung on the second draw
    (:func:`held_out_scores`)."""

    out = {"steps": step_record(rules_records), "ladder": {"rules": summary(rules_records)}}
    if adversarial is not None:
        out["ladder"]["adversarial"] = adversarial
    if held_out is not None:
        out["held_out"] = held_out
    if bench_record is not None:
        out["speed"] = speed_record(bench_record)
    return out


def update_metrics(path: Path, fields: dict) -> dict:
    """Set ``fields`` at the top level of a metrics.json (the rest kept) and write it back."""
    record = json.loads(Path(path).read_text())
    record.update(fields)
    Path(path).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def untrained_control(seed: int, test_families: dict) -> dict:
    """The same networks at their random initialisation, no training: what the structure alone does."""

    networks = {name: build_step(name, seed) for name in STEPS}
    checks = {name: check_step(name, DenseStep.from_model(model)) for name, model in networks.items()}
    return {
        "seed": seed,
        "checks": checks,
        "families": score_families(engine_answer(engine_from(networks)), test_families),
    }


def ablation(kind: str, seed: int, expressions: int, test_families: dict, adder_epochs: int = 60) -> dict:
    """One ablation at one seed (see :mod:`predcalc.calculator.ablations`)."""
    started = time.perf_counter()
    if kind == "uniform":
        total = expressions + trained(seed, expressions)["coverage"]["biased_rounds"] * (expressions // 4)
        started = time.perf_counter()
        result = train_calculator(Recipe(expressions=total, seed=seed, coverage_checked=False), seed=seed)
        engine = engine_from(result["networks"])
        extra = {"expressions": total, "coverage": result["coverage"], "checks": result["checks"]}
    else:
        result = trained(seed, expressions)  # the calculator of this seed; only the swapped part is trained
        steps = engine_from(result["networks"]).steps
        if kind == "pick":
            model = ablations.train_pick(result["data"]["sequences"], seed)
            engine = Engine(steps, pick=ablations.pick_controller(model))
            extra = {"parameters": int(model.count_params())}
        elif kind in ("continuous_state", "answers_only"):
            sequences = ablations.adder_sequences(result["data"])
            model = ablations.train_gru_adder(
                sequences, seed, carry_targets=kind == "continuous_state", epochs=adder_epochs
            )
            engine = Engine({**steps, "addsub_sequence": ablations.gru_addsub(model)})
            extra = {
                "parameters": int(model.count_params()),
                "training_sequences": int(len(sequences)),
                "epochs": adder_epochs,
                "longest": int(sequences.shape[1]),
            }
        else:
            raise ValueError(f"unknown ablation {kind!r}")
    train_seconds = time.perf_counter() - started
    return {
        "kind": kind,
        "seed": seed,
        "train_seconds": round(train_seconds, 1),
        **extra,
        "families": score_families(engine_answer(engine), test_families),
    }


def end_to_end(seed: int, test_families: dict, train_size: int, epochs: int, batch_size: int = 128) -> dict:
    """The baseline: one character-level model (``char_lstm_tokens``, sign and 8 digits) trained on
    expressions of the integer training world whose answers fit its 8 digits."""
    from predcalc.data import make_split  # the training stack only for the end-to-end baseline
    from predcalc.data.exact_answers import value_answer
    from predcalc.data.protocol import Protocol
    from predcalc.training import fit

    pairs = [
        (e, a)
        for e, a in draw(INTEGER_WORLD, int(train_size * 1.4), 50_000 + seed)
        if "/" not in a and len(a.lstrip("-")) <= 8
    ][:train_size]
    cut = int(len(pairs) * 0.9)
    train = make_split("train", [e for e, _ in pairs[:cut]])
    validation = make_split("validation", [e for e, _ in pairs[cut:]])
    protocol = Protocol(
        seed=seed, train=train, validation=validation, test_in=validation, test_out=validation, test_long=validation
    )
    trained = fit.train(
        "char_lstm_tokens",
        protocol,
        seed=seed,
        epochs=epochs,
        batch_size=batch_size,
        patience=epochs,
        learning_rate=3e-3,
    )

    def answer(expressions):
        out = []
        for expression in expressions:
            try:
                out.append(value_answer(trained.predict([expression])[0]) or "")
            except ValueError:  # the tokeniser refuses it (too long for its 64 characters)
                out.append("")
        return out

    return {
        "seed": seed,
        "parameters": trained.params,
        "epochs": trained.epochs,
        "train_seconds": round(trained.seconds, 1),
        "train_expressions": len(train),
        "families": score_families(answer, test_families),
    }


def summary(records: list[dict]) -> dict:
    """Mean and worst exact accuracy per family over seeds."""
    names = list(records[0]["families"])
    out = {}
    for name in names:
        values = [r["families"][name]["exact"] for r in records]
        out[name] = {
            "mean": float(np.mean(values)),
            "min": float(np.min(values)),
            "seeds": len(values),
            "n": records[0]["families"][name]["n"],
            "lowest_terms": float(np.mean([r["families"][name]["lowest_terms"] for r in records])),
        }
    return out


def family_boxes(test_families: dict) -> dict:
    """Per family: the largest digits, operators and depth it holds (its box)."""
    out = {}
    for name, pairs in test_families.items():
        found = [axes(e) for e, _ in pairs]
        out[name] = {key: [min(f[key] for f in found), max(f[key] for f in found)] for key in found[0]}
        out[name]["answer_digits"] = max(len(a.split("/")[0].lstrip("-")) for _, a in pairs)
    return out


def study_record(records, comparison, ablation_records, control, speed, boxes, parameters: dict) -> dict:
    """The metrics.json of the study (read by the report)."""
    return {
        "notebook": "40_calculator",
        "kind": "study",
        "parameters": parameters,
        "models": {},
        "calculator": {
            "parameters": parameters,
            "boxes": boxes,
            "training_box": TRAINING_BOX,
            "labels": ABLATION_LABELS,
            "seeds": records,
            "summary": comparison,
            "control": control,
            "speed": speed,
            "ablations": {
                kind: [{k: v for k, v in r.items() if k != "families"} for r in rs]
                for kind, rs in ablation_records.items()
            },
            "per_seed": {
                kind: per_seed(rs, boxes)
                for kind, rs in {"calculator": records, **ablation_records, "untrained": control}.items()
            },
        },
    }


def per_seed(records: list[dict], boxes: dict) -> list[dict]:
    """Per seed: mean exact accuracy over the families inside the training world and beyond it."""
    inside = inside_world(boxes)
    return [
        {
            "seed": record.get("seed"),
            "inside": float(np.mean([v["exact"] for name, v in record["families"].items() if name in inside])),
            "beyond": float(np.mean([v["exact"] for name, v in record["families"].items() if name not in inside])),
        }
        for record in records
    ]


__all__ = [
    "ABLATION_LABELS",
    "AXIS_FAMILIES",
    "CHOICES",
    "COMPETENT",
    "CONFIDENCE",
    "FAMILIES",
    "FINGERPRINTED",
    "LOST_INSIDE",
    "SPEED_GOAL",
    "TRAINING_BOX",
    "ablation",
    "ablation_rows",
    "bench",
    "cached",
    "carrier_frame",
    "carrier_rows",
    "carrier_texts",
    "check_frame",
    "code_fingerprint",
    "code_versions",
    "comparison_frame",
    "end_to_end",
    "error_bound",
    "families",
    "family_boxes",
    "family_frame",
    "family_texts",
    "inside_world",
    "order",
    "plot_axes",
    "speed_frame",
    "speed_record",
    "speed_texts",
    "speed_verdicts",
    "summary",
    "train_seed",
    "untrained_control",
]
