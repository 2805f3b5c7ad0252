"""The calculator study behind ``notebooks/40_calculator.ipynb``: seeds, control, ablations, speed.

Every function returns plain JSON-able records; :func:`cached` stores each one under the run's
``parts/`` folder so a long study resumes where it stopped.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import re
import time
import types
from pathlib import Path

import numpy as np

from predcalc.calculator import ablations
from predcalc.calculator.bench import bench, speed_record  # noqa: F401  (the notebook calls study.bench)
from predcalc.calculator.engine import Engine, answer_text
from predcalc.calculator.nets import DenseStep, build_step, check_step, numpy_step
from predcalc.calculator.rules import train_control
from predcalc.calculator.steps import STEPS
from predcalc.calculator.train import Recipe, engine_from, rule_training_rows, trace, train_calculator, train_rules
from predcalc.data.calculator_families import FAMILIES, INTEGER_WORLD, TRAINING_WORLD, axes, draw, families
from predcalc.data.exact_answers import score_answers
from predcalc.paths import relative, save_figure

AXIS_FAMILIES = {
    "digits": ("iid", "digits_6_10", "digits_11_20", "digits_21_50"),
    "operators": ("iid", "ops_5_10", "ops_11_20", "ops_21_40"),
    "depth": ("iid", "depth_3_4", "depth_5_6", "depth_7_10"),
}
TRAINING_BOX = {"digits": 5, "operators": 4, "depth": 2}


def cached(folder: Path | None, key: str, compute, parameters: dict | None = None):
    """``compute()``'s record, stored as ``folder/KEY-DIGEST.json`` and read back instead of recomputed
    while every parameter it depends on is the same.

    ``parameters`` (default: what ``compute`` reads: its default arguments, closure cells and the
    global names it uses, modules and functions left out) and :func:`code_fingerprint` (the code that
    trains, exports and runs the calculator) are hashed into ``DIGEST``, so a run with other sizes,
    epochs or seeds, or after a change to that code, computes its own part; an older part of the same
    key is replaced. The file holds ``{"code": fingerprint, "result": record}``. Not covered: this
    module's own functions and the end-to-end baseline's model code (delete the folder after changing
    those).
    """
    if folder is None:
        return compute()
    code = code_fingerprint()
    digest = hashlib.sha256((_canonical(_read_by(compute) if parameters is None else parameters) + code).encode())
    path = Path(folder) / f"{key}-{digest.hexdigest()[:12]}.json"
    if path.is_file():
        return json.loads(path.read_text())["result"]
    record = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps({"code": code, "result": record}, indent=1, sort_keys=True) + "\n")
    temporary.replace(path)
    for stale in Path(folder).glob(f"{key}*.json"):  # the same part computed with other parameters
        if stale != path and re.fullmatch(rf"{re.escape(key)}(-[0-9a-f]{{12}})?", stale.stem):
            stale.unlink()
    return record


#: The modules whose code decides a part's numbers: the calculator's steps, training, export and
#: runtime, and the test families (the study's own tables and sentences are not among them).
FINGERPRINTED = (
    "predcalc.calculator.ablations",
    "predcalc.calculator.bench",
    "predcalc.calculator.engine",
    "predcalc.calculator.export",
    "predcalc.calculator.nets",
    "predcalc.calculator.reference",
    "predcalc.calculator.rules",
    "predcalc.calculator.runtime",
    "predcalc.calculator.steps",
    "predcalc.calculator.tokens",
    "predcalc.calculator.train",
    "predcalc.data.calculator_families",
    "predcalc.data.exact_answers",
    "predcalc.data.expressions",
)


def code_fingerprint(modules=FINGERPRINTED) -> str:
    """12 hex digits of the syntax trees of ``modules`` without their docstrings: a change to what the
    code does changes it; comments, docstrings and formatting do not."""
    digest = hashlib.sha256()
    for name in modules:
        tree = ast.parse(Path(importlib.util.find_spec(name).origin).read_text())
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (
                isinstance(body, list)
                and body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
        digest.update(name.encode() + ast.dump(tree).encode())
    return digest.hexdigest()[:12]


def _read_by(compute) -> dict:
    """The values ``compute`` reads from outside: default arguments, closure cells, global names."""
    code = compute.__code__
    found = {f"default_{i}": value for i, value in enumerate(compute.__defaults__ or ())}
    found.update({name: cell.cell_contents for name, cell in zip(code.co_freevars, compute.__closure__ or ())})
    found.update({name: compute.__globals__[name] for name in code.co_names if name in compute.__globals__})
    return {
        name: value
        for name, value in found.items()
        if not isinstance(value, (types.ModuleType, types.FunctionType, type))
    }


def _canonical(value) -> str:
    """A stable text of parameters (paths relative to the repository, so the digest is the same anywhere)."""

    def plain(item):
        if isinstance(item, Path):
            return relative(item)
        if isinstance(item, dict):
            return {str(k): plain(v) for k, v in sorted(item.items(), key=lambda kv: str(kv[0]))}
        if isinstance(item, (list, tuple)):
            return [plain(v) for v in item]
        return item if isinstance(item, (str, int, float, bool, type(None))) else repr(item)

    return json.dumps(plain(value), sort_keys=True)


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
    """The rule calculator on a second draw that no choice touched: every family drawn afresh with
    ``seed`` (the seed protocol's fixed sets left out: they do not change with the seed) and an
    adversarial draw of the same seed, scored through each seed's exported file with forward passes.

    Returns ``{"family_seed", "n", "expressions", "shared_with_development", "families", "boxes"}``:
    per family the mean and worst seed (:func:`summary`) and its box (:func:`family_boxes`);
    ``shared_with_development`` counts the
    expressions that also occur in ``development`` (the draw the study was checked on)."""
    from predcalc.calculator.runtime import Calculator  # LiteRT only when exported files are scored

    fixed = {"seed_in", "seed_out", "seed_long"}  # the seed protocol's own test sets, alike for every seed
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
    adversarial score (:func:`adversarial_scores`) and the rule rung on the untouched draw
    (:func:`held_out_scores`)."""

    out = {"steps": step_record(rules_records), "ladder": {"rules": summary(rules_records)}}
    if adversarial is not None:
        out["ladder"]["adversarial"] = adversarial
    if held_out is not None:
        out["held_out"] = held_out
    if bench_record is not None:
        out["speed"] = speed_record(bench_record)
    return out


def ladder_facts(record: dict) -> list[str]:
    """Sentences for the notebook's conclusion from a metrics.json's ``steps``, ``ladder`` and
    ``held_out`` (numbers read, not typed; the speed is :func:`speed_summary`'s)."""
    steps, lines = record["steps"], []
    learned = [
        f"`{name}` {v['trained_on']} of {v['reachable']} ({100 * v['trained_on'] / v['reachable']:.0f} %), "
        f"{v['held_out_wrong']} wrong on the rest"
        for name, v in steps.items()
        if not v["memorised"]
    ]
    memorised = [f"`{name}` ({v['reachable']} rows)" for name, v in steps.items() if v["memorised"]]
    seeds = next(iter(steps.values()))["seeds"]
    lines.append(
        f"- Rule steps, trained on a share of their reachable inputs drawn from traces of short expressions "
        f"(worst of {seeds} seed(s)): "
        + "; ".join(learned)
        + ". Memorised tiny tables, trained on every row: "
        + ", ".join(memorised)
        + "."
    )
    rules = record["ladder"]["rules"]
    worst = min(rules, key=lambda name: rules[name]["mean"])
    lines.append(
        "- Through the LiteRT file with forward passes, the rule calculator is "
        + (
            "exact on every answer of every family"
            if min(v["min"] for v in rules.values()) == 1
            else f"exact on {100 * rules[worst]['mean']:.2f} % or more of every family{_worst(rules, worst)}"
        )
        + f", {seeds} seed(s)."
    )
    if "adversarial" in record["ladder"]:
        lines.append(
            "- Adversarial digits: "
            + ", ".join(
                f"{label} {100 * v['exact']:.1f} % of {v['n']}"
                + (f" (mean of {v['seeds']} seeds, worst {100 * v['min']:.1f} %)" if v.get("seeds", 1) > 1 else "")
                for label, v in record["ladder"]["adversarial"].items()
            )
            + "."
        )
    if "held_out" in record:
        lines.append(f"- {held_out_sentence(record['held_out'])}")
    return lines


def _worst(scores: dict, worst: str) -> str:
    """`` (worst: name)`` where the worst family falls short of exact, else nothing (no tie is named)."""
    return f" (worst: {worst})" if scores[worst]["mean"] < 1 else ""


def error_bound(wrong: int, n: int, confidence: float = 0.95) -> float:
    """One-sided exact (Clopper-Pearson) upper bound on the error rate after ``wrong`` of ``n``."""
    from statsmodels.stats.proportion import proportion_confint  # statsmodels only when a bound is computed

    return float(proportion_confint(wrong, n, alpha=2 * (1 - confidence), method="beta")[1])


def held_out_sentence(held_out: dict) -> str:
    """One sentence on the rule calculator's score on the draw no choice touched, with the error rate
    that zero wrong answers still allow (95 % confidence) where every seed is exact."""
    scores = held_out["families"]
    worst = min(scores, key=lambda name: (scores[name]["min"], scores[name]["mean"]))
    seeds = next(iter(scores.values()))["seeds"]
    text = (
        f"On a draw no choice touched (family seed {held_out['family_seed']}: {len(scores)} families with "
        f"the adversarial one, {held_out['expressions']:,} expressions, {held_out['shared_with_development']} of "
        f"them also in the development draw), through each seed's exported file ({seeds} seeds) with forward "
        f"passes: "
    )
    if scores[worst]["min"] == 1:
        family = min(v["n"] for v in scores.values())
        return text + (
            f"every answer exact on every seed. Zero wrong bounds the error rate below "
            f"{100 * error_bound(0, held_out['expressions']):.3f} % per seed over all families and below "
            f"{100 * error_bound(0, family):.2f} % per family and seed (95 % confidence, exact binomial)."
        )
    return text + (
        f"exact on {100 * min(v['mean'] for v in scores.values()):.2f} % or more of every family (mean of seeds); "
        f"worst seed on any family {100 * scores[worst]['min']:.2f} % ({worst})."
    )


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


def plot_axes(results: dict, boxes: dict, path=None, labels: dict | None = None):
    """Exact accuracy against digits, operators and depth (one panel each), the training box shaded.

    ``results`` maps a model to its per-family summary (mean and worst seed). Each line has its own
    marker and a sideways offset, so lines at the same height (many sit at 100 % or at 0 %) stay
    visible side by side; a bar below each point reaches the worst seed. ``labels`` name the lines
    (default :data:`ABLATION_LABELS`)."""
    import matplotlib  # plotting only when a figure is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after the backend is chosen

    labels = {**ABLATION_LABELS, **(labels or {})}
    figure, panels = plt.subplots(1, 3, figsize=(10.5, 4.2), sharey=True)
    middle = (len(results) - 1) / 2
    for panel, (axis, names) in zip(panels, AXIS_FAMILIES.items()):
        found = [boxes[n][axis][1] for n in names]
        span = max(found) - min(found)
        for index, (label, summary_of) in enumerate(results.items()):
            ys = np.array([100 * summary_of[n]["mean"] for n in names])
            worst = np.array([100 * summary_of[n]["min"] for n in names])
            if axis == "digits":
                xs = [x * (1 + 0.045 * (index - middle)) for x in found]
            else:
                xs = [x + 0.018 * span * (index - middle) for x in found]
            main = index == 0
            panel.errorbar(
                xs,
                ys,
                yerr=[ys - worst, np.zeros_like(ys)],
                marker="osD^vP*Xh"[index % 9],
                color=f"C{index}",
                label=labels.get(label, label),
                linewidth=2.5 if main else 1.2,
                markersize=6 if main else 5,
                elinewidth=1,
                capsize=2,
                zorder=3 if main else 2,
                linestyle="-" if main else "--",
            )
        panel.axvspan(0, TRAINING_BOX[axis] + 0.5, color="grey", alpha=0.15, lw=0)
        if axis == "digits":
            panel.set_xscale("log")
            panel.set_xticks(found, [str(x) for x in found])
            panel.minorticks_off()
        panel.set_xlabel(f"largest {axis} in the family" + (" (log scale)" if axis == "digits" else ""))
        panel.grid(alpha=0.3)
    panels[0].set_ylabel("exact answers (%): mean of seeds,\nbar down to the worst seed")
    panels[0].set_ylim(-4, 104)
    handles, names = panels[0].get_legend_handles_labels()
    figure.legend(handles, names, loc="lower center", ncol=2, fontsize=7.5, frameon=False)
    figure.suptitle(
        "Exact accuracy beyond the training box (shaded); markers side by side at one height are separate lines",
        fontsize=9.5,
    )
    figure.tight_layout(rect=(0, 0.22, 1, 1))
    if path is not None:
        save_figure(figure, path)
    return figure


def family_frame(summary_of: dict):
    """Mean and worst-seed exact accuracy (%) per family, and the share in lowest terms."""
    import pandas as pd  # tables only when the notebook shows them

    return pd.DataFrame(
        {
            name: {
                "exact %": 100 * v["mean"],
                "worst seed %": 100 * v["min"],
                "lowest terms %": 100 * v["lowest_terms"],
                "n": v["n"],
                "seeds": v["seeds"],
            }
            for name, v in summary_of.items()
        }
    ).T.round(2)


def check_frame(records: list[dict]):
    """Per step: reachable inputs, wrong decisions (worst seed), inputs missing from training, parameters."""
    import pandas as pd  # tables only when the notebook shows them

    rows = {}
    for name in records[0]["checks"]:
        rows[name] = {
            "inputs": records[0]["checks"][name]["inputs"],
            "wrong (worst seed)": max(r["checks"][name]["wrong"] for r in records),
            "missing in training (most)": max(r["coverage"][name]["missing"] for r in records),
            "parameters": records[0]["parameters"][name],
            "epochs (most)": max(r["steps"][name]["epochs"] for r in records),
            "LiteRT disagreements": max(r["litert_parity"][name] for r in records),
        }
    return pd.DataFrame(rows).T


def comparison_frame(comparison: dict):
    """Mean exact accuracy (%) of the calculator, each ablation and the control, family by family."""
    import pandas as pd  # tables only when the notebook shows them

    return pd.DataFrame(
        {label: {name: 100 * v["mean"] for name, v in summary_of.items()} for label, summary_of in comparison.items()}
    ).round(1)


ABLATION_LABELS = {
    "calculator": "rung 1, memorised steps (readiness control, discrete states, coverage-checked steps)",
    "pick": "control trained on the reference's single pick",
    "continuous_state": "adder with a continuous GRU state (digit and carry targets)",
    "answers_only": "adder GRU trained on result digits only (no carry targets)",
    "uniform": "steps trained on uniform digits, no coverage check",
    "end_to_end": "one end-to-end character LSTM (char_lstm_tokens)",
    "untrained": "control: the same networks, untrained",
}


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


def code_versions(folder: Path) -> list[str]:
    """The code fingerprints (:func:`code_fingerprint`) of the parts stored in ``folder``, each once:
    one entry when every part there was computed by the same code."""
    return sorted({json.loads(path.read_text())["code"] for path in Path(folder).glob("*.json")})


def per_seed(records: list[dict], boxes: dict) -> list[dict]:
    """Per seed: mean exact accuracy over the families inside the training world and beyond it."""
    inside = inside_world(boxes)
    out = []
    for record in records:
        scores = record["families"]
        out.append(
            {
                "seed": record.get("seed"),
                "inside": float(np.mean([v["exact"] for name, v in scores.items() if name in inside])),
                "beyond": float(np.mean([v["exact"] for name, v in scores.items() if name not in inside])),
            }
        )
    return out


# Each ablation swaps one design choice; the model it is compared with has that choice and keeps the
# rest. The supervision ablation swaps the targets of the continuous-state adder (a discrete state
# fed back has no gradient, so it cannot be trained from final answers alone).
CHOICES = {
    "continuous_state": "calculator",
    "pick": "calculator",
    "uniform": "calculator",
    "answers_only": "continuous_state",
}


def order(kind: str) -> int:
    """Where a model of the study stands in tables: the calculator, the ablations, the baseline, the control."""
    order = ["calculator", *CHOICES, "end_to_end", "untrained"]
    return order.index(kind) if kind in order else len(order)


def inside_world(boxes: dict, box: dict = TRAINING_BOX) -> set[str]:
    """The families whose every expression lies inside the training world's box."""
    return {name for name, found in boxes.items() if all(found[axis][1] <= box[axis] for axis in box)}


def ablation_rows(record: dict) -> list[dict]:
    """Per model of the study (the calculator, each ablation, the baseline, the control): seeds, mean
    exact accuracy over the families inside and beyond the training world, the worst family, and the
    points lost beyond it against the calculator (the ablations score smaller draws of the families)."""
    study = record["calculator"]
    inside = inside_world(study["boxes"], study.get("training_box", TRAINING_BOX))
    rows = []
    for kind, summary_of in study["summary"].items():
        within = [v["mean"] for name, v in summary_of.items() if name in inside]
        beyond = [v["mean"] for name, v in summary_of.items() if name not in inside]
        worst = min(summary_of, key=lambda name: summary_of[name]["mean"])
        rows.append(
            {
                "kind": kind,
                "label": study["labels"].get(kind, kind),
                "seeds": next(iter(summary_of.values()))["seeds"],
                "n": next(iter(summary_of.values()))["n"],
                "inside": float(np.mean(within)),
                "beyond": float(np.mean(beyond)),
                "worst_family": worst,
                "worst_family_mean": summary_of[worst]["mean"],
                "worst_seed": float(min(v["min"] for v in summary_of.values())),
            }
        )
    rows.sort(key=lambda row: order(row["kind"]))
    calculator = next(row for row in rows if row["kind"] == "calculator")
    for row in rows:
        row["lost_beyond"] = calculator["beyond"] - row["beyond"]
    return rows


#: A swap that loses at least this much inside the training world fails to learn its step there,
#: so its loss beyond the world says nothing specific about extrapolation.
LOST_INSIDE = 0.05


def carriers(record: dict) -> str:
    """What each swapped choice costs inside the training world and beyond it, against the model that
    keeps the choice. A gap beyond is called resolved only where the two models' per-seed means over
    the families beyond do not overlap (min-max); the calculator and the swaps score different draws."""
    rows = {row["kind"]: row for row in ablation_rows(record)}
    study = record["calculator"]
    seeds = study.get("per_seed", {})
    swapped = sorted(
        (kind for kind in CHOICES if kind in rows and CHOICES[kind] in rows),
        key=lambda kind: rows[kind]["beyond"] - rows[CHOICES[kind]]["beyond"],
    )
    if not swapped:
        return ""
    parts, unresolved, inside = [], [], []
    for kind in swapped:
        row, reference = rows[kind], rows[CHOICES[kind]]
        against = "" if CHOICES[kind] == "calculator" else f" against the {reference['label']}"
        parts.append(
            f"{row['label']}: {100 * (reference['beyond'] - row['beyond']):.1f} points lost beyond it and "
            f"{100 * (reference['inside'] - row['inside']):.1f} inside{against}"
        )
        if kind in seeds and CHOICES[kind] in seeds and not _separated(seeds[kind], seeds[CHOICES[kind]]):
            unresolved.append(row["label"])
        if reference["inside"] - row["inside"] >= LOST_INSIDE:
            inside.append(row["label"])
    text = (
        f"Beyond the training world the calculator is exact on {100 * rows['calculator']['beyond']:.1f} % "
        f"(mean over families and seeds, {rows['calculator']['n']} expressions a family; the swaps score "
        f"draws of {rows[swapped[0]]['n']}). One choice swapped at a time: " + "; ".join(parts) + "."
    )
    if inside:
        one = len(inside) == 1
        text += (
            f" Losing {100 * LOST_INSIDE:.0f} points or more inside the training world as well, "
            + " and ".join(inside)
            + (" fails" if one else " fail")
            + " to learn the step itself: "
            + ("its" if one else "their")
            + " loss beyond it is not specific to extrapolation."
        )
    if unresolved:
        text += " Not resolved by the seeds' min-max ranges: " + "; ".join(unresolved) + "."
    if "end_to_end" in rows:
        row = rows["end_to_end"]
        text += (
            f" One end-to-end model on the same world reaches {100 * row['inside']:.1f} % inside and "
            f"{100 * row['beyond']:.1f} % beyond"
            + (
                ": it is not trained to competence on its own world, so it says nothing about extrapolation."
                if row["inside"] < 0.5
                else "."
            )
        )
    return text


def _separated(a: list[dict], b: list[dict]) -> bool:
    """Whether two models' per-seed means beyond the training world have disjoint min-max ranges."""
    first, second = [r["beyond"] for r in a], [r["beyond"] for r in b]
    return max(first) < min(second) or max(second) < min(first)


def conclusion(record: dict) -> str:
    """A few sentences of what the study measured, from its numbers: the memorised rung and the
    ablations, then the rule rung (:func:`ladder_facts`) where the record has it."""
    full, record = record, record["calculator"]
    main = record["summary"]["calculator"]
    worst = min(main, key=lambda name: main[name]["mean"])
    seeds = record["seeds"]
    lines = [
        f"- Rung 1, every step memorised ({seeds[0]['parameters']['total']:,} parameters, at most "
        f"{max(r['train_seconds'] for r in seeds):.0f} s of training per seed, {len(seeds)} seed(s)) is "
        + (
            "exact on every answer of every family."
            if min(v["min"] for v in main.values()) == 1
            else f"exact on {100 * min(v['mean'] for v in main.values()):.2f} % or more of every family"
            f"{_worst(main, worst)}; mean over families {100 * np.mean([v['mean'] for v in main.values()]):.2f} %."
        ),
        f"- Every learned step was checked on every input that can occur: "
        f"{sum(max(r['checks'][s]['wrong'] for r in seeds) for s in seeds[0]['checks'])} wrong decisions in the "
        f"worst seed.",
    ]
    for kind, summary_of in record["summary"].items():
        if kind == "calculator":
            continue
        mean = np.mean([v["mean"] for v in summary_of.values()])
        lines.append(
            f"- {ABLATION_LABELS.get(kind, kind)}: mean {100 * mean:.1f} % over families "
            f"(iid {100 * summary_of['iid']['mean']:.1f} %, digits 21-50 "
            f"{100 * summary_of['digits_21_50']['mean']:.1f} %, depth 7-10 "
            f"{100 * summary_of['depth_7_10']['mean']:.1f} %)."
        )
    carried = carriers({"calculator": record})
    if carried:
        lines.append(f"- {carried}")
    lines.append(f"- {speed_summary(record['speed'])}")
    if "steps" in full:
        lines += ladder_facts(full)
    return "\n".join(lines)


#: The speed goal of the calculator: forward passes within this many times Python's time.
SPEED_GOAL = 10.0


def speed_verdicts(bench_record: dict, goal: float = SPEED_GOAL) -> dict:
    """Per path and set: ``"met"`` where every round's ratio is at most ``goal``, ``"not met"`` where
    every one is above it, else ``"not resolved"`` (the rounds straddle the goal)."""
    out: dict = {}
    for path in ("forward", "cache"):
        for label in ("integers", "with_division"):
            entry = bench_record[label][path]
            ratios = entry.get("ratios") or [entry["ratio"]]
            out.setdefault(path, {})[label] = (
                "met" if max(ratios) <= goal else "not met" if min(ratios) > goal else "not resolved"
            )
    return out


def speed_summary(speed: dict, goal: float = SPEED_GOAL) -> str:
    """The bench's time ratios to Python (median and range of the rounds) for both paths, the latency of
    one expression, and whether forward passes meet the goal of ``goal`` x Python's time."""

    def ratio(label: str, path: str) -> str:
        entry = speed[label][path]
        ratios = entry.get("ratios") or [entry["ratio"]]
        spread = f" (rounds {min(ratios):.1f}-{max(ratios):.1f})" if len(ratios) > 1 else ""
        return f"{entry['ratio']:.1f}x{spread}"

    verdicts = speed_verdicts(speed, goal)
    latency = speed["latency_ms"]
    python = f" (Python {latency['python']:.3f} ms)" if "python" in latency else ""
    return (
        f"Speed ({speed['n']:,} expressions of {speed['operators']} operators, the calculator answering them as "
        f"one batch, Python one by one; median of {speed.get('repeats', 1)} round(s) on this 2-core CPU): forward "
        f"passes take {ratio('integers', 'forward')} Python's time on integers and {ratio('with_division', 'forward')} "
        f"with division (fractions reduced by Euclid's algorithm on the learned steps); the look-up cache "
        f"{ratio('integers', 'cache')} and {ratio('with_division', 'cache')}. One expression takes "
        f"{latency['forward']:.1f} ms with forward passes{python}. The goal, forward passes within {goal:.0f}x "
        f"Python's time, is {verdicts['forward']['integers']} on integers and "
        f"{verdicts['forward']['with_division']} with division (met or not only where every round agrees)."
    )


__all__ = [
    "FAMILIES",
    "families",
    "train_seed",
    "untrained_control",
    "ablation",
    "end_to_end",
    "summary",
    "family_boxes",
    "plot_axes",
    "bench",
    "cached",
    "ablation_rows",
    "carriers",
    "speed_summary",
]
