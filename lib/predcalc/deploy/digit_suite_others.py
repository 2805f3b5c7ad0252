"""The project's float-value models and the learned calculator scored on the held-out digit suite
(:mod:`predcalc.data.digit_suite`) through their exported files: one column every row of the
families table shares.

Each file answers through the project's own runners: a value file through
:class:`predcalc.deploy.predictor.Predictor` (its ``check_input`` refuses, in one line, an expression
past the file's exact range or too long for its input; the rest are predicted and right where the
float rounds to the exact Python integer), the calculator through
:class:`predcalc.calculator.runtime.Calculator` (its ``error: ...`` answers are refusals, the others
exact texts compared as fractions). A refused expression is not answered, so it is not exact; it is
not wrong either: ``answered`` and ``exact`` are both counted over every expression of the set.

The files are the ones the findings score on suite 5151: the sign scan's fresh seeds (notebook 33's
``fresh`` record), the rounded-gate transformer's fresh seeds (notebook 35's parameters, its files in
the study's git-ignored work folder under ``build/``; where that folder was rebuilt by retraining,
``provenance`` says, seed by seed, whether the retrained model scores as the stored one did), the
typed scan's recommended export (notebook 30) and the calculator's ``reports/calculator/model.tflite``.
A slow file can be scored on the first expressions of each set (``--model-count NAME=N``; the record
keeps ``first_per_set``)::

    python -m predcalc.deploy.digit_suite_others --out reports/runs/41_digits/others.json \
        --model-count transformer4_local_rounded=20
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from pathlib import Path

import numpy as np

from predcalc.calculator.runtime import Calculator
from predcalc.data import digit_suite
from predcalc.data.exact_answers import parse_answer, value_answer
from predcalc.deploy.predictor import CALCULATOR_MODEL, Predictor
from predcalc.errors import one_line
from predcalc.paths import ROOT, RUNS, SCRATCH, relative, write_if_changed
from predcalc.recommended import recommended

ERROR = "error: "  # how the calculator writes an expression it refuses (calculator.engine.answer_text)
CHUNK = 16  # expressions per call of a value file (the rounded transformer's attention at 599 tokens is large)

# the variable parts of a refusal's line, so that one reason is counted once over its expressions
_VARIABLE = (
    (re.compile(r"'[\d\s+\-*/().]+'"), "'<expression>'"),  # an expression in quotes (not the "numbers' sizes")
    (re.compile(r"sums to [\d,]+"), "sums to <size>"),
    (re.compile(r"\b(position|token) \d+"), r"\1 <n>"),
    (re.compile(r"\bneeds \d+ tokens"), "needs <n> tokens"),
)


def reason_key(reason: str) -> str:
    """A refusal as one line, with its expression and the numbers of that expression taken out."""
    for pattern, replacement in _VARIABLE:
        reason = pattern.sub(replacement, reason)
    return one_line(reason, limit=400)


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def _entry(name: str):
    """``name``'s entry of ``reports/recommended.json`` (its notebook and export folder)."""
    return next(model for model in recommended() if model.name == name)


def scan_exact_files(runs=RUNS) -> list[Path]:
    """The sign scan's fresh seeds' ONNX files: the seeds of its notebook's ``fresh`` record, each
    exported beside the recommended export folder (``scan_exact_fresh_seed_<seed>``)."""
    entry = _entry("scan_exact")
    seeds = _json(Path(runs) / entry.notebook / "metrics.json")["fresh"]["seeds"]
    export = (Path(runs) / entry.export).parent
    return [export / f"scan_exact_fresh_seed_{s}" / "model.onnx" for s in seeds]


ROUNDED_NOTEBOOK = "35_rounded_transformer"  # not in recommended.json; its study's NOTEBOOK (which imports Keras)


def rounded_transformer_files(runs=RUNS, scratch=SCRATCH) -> list[Path]:
    """The rounded-gate transformer's fresh seeds' ONNX files: its notebook's full-profile work folder
    (git-ignored), its fresh seeds and frozen budget as its stored record gives them."""
    folder = Path(runs) / ROUNDED_NOTEBOOK
    parameters = _json(folder / "metrics.json")["parameters"]
    epochs = _json(folder / "choices.json")["frozen_recipe"]["epochs"]
    work = Path(scratch) / ROUNDED_NOTEBOOK / "full" / f"data_{parameters['data_seed']}" / "models" / "fresh"
    return [work / f"epochs_{epochs}" / f"seed_{s}" / "export" / "model.onnx" for s in parameters["fresh_seeds"]]


def scan_typed_files(runs=RUNS) -> list[Path]:
    """The typed scan's recommended export (its notebook's stored first seed, re-exported at 159
    tokens: the file the edge suites' ``stored_first_seed`` scores)."""
    return [Path(runs) / _entry("scan_typed").export / "model.onnx"]


def rounded_transformer_provenance(files, runs=RUNS) -> dict:
    """Whether each of the rounded transformer's files on this machine is its notebook's stored seed:
    the work folder is git-ignored, so a file here may be a retraining (``train_seed`` and
    ``export_onnx`` of the study); per seed, its Keras scores on the protocol's in, out and long sets
    (``keras_scores_*.json`` beside it) against the stored record's, and the file's size against the
    stored export's."""
    stored = _json(Path(runs) / ROUNDED_NOTEBOOK / "metrics.json")["heldout"]["fresh"]
    out = {}
    for path in files:
        seed = path.parent.parent.name.removeprefix("seed_")
        kept = sorted(path.parent.parent.glob("keras_scores_*.json"))
        here = _json(kept[0]) if kept else None
        want = stored.get(seed, {})
        out[seed] = {
            "protocol": here,
            "stored_protocol": want.get("protocol"),
            "bytes": path.stat().st_size if path.is_file() else None,
            "stored_bytes": (want.get("export") or {}).get("bytes"),
            "same_protocol_scores": here is not None and here == want.get("protocol"),
        }
    return out


def calculator_files() -> list[Path]:
    return [CALCULATOR_MODEL]


# model -> (label, the files it is scored through, kind: "value" (Predictor) or "calculator",
# what is recorded of where its files came from, or None)
MODELS = {
    "scan_exact": ("sign scan, trained exact (fresh seeds, ONNX)", scan_exact_files, "value", None),
    "transformer4_local_rounded": (
        "gated-sum transformer, rounded gates (fresh seeds, ONNX)",
        rounded_transformer_files,
        "value",
        rounded_transformer_provenance,
    ),
    "scan_typed": ("typed scan (notebook 30's export, ONNX)", scan_typed_files, "value", None),
    "calculator": ("learned calculator (LiteRT, forward passes)", calculator_files, "calculator", None),
}


class ValueFile:
    """A value file's answers: ``(answer text or None, refusal or None)`` per expression."""

    def __init__(self, path, chunk: int = CHUNK):
        self.predictor, self.chunk = Predictor(path), chunk

    def refusal(self, text: str, value: int) -> str | None:
        try:
            self.predictor.check_answer(value)
            self.predictor.check_input(text)
        except ValueError as error:  # a TokenizerError is a ValueError
            return str(error)
        return None

    def answers(self, texts, values) -> list[tuple[str | None, str | None]]:
        out = [(None, self.refusal(t, v)) for t, v in zip(texts, values, strict=True)]
        readable = [i for i, (_, reason) in enumerate(out) if reason is None]
        for start in range(0, len(readable), self.chunk):
            rows = readable[start : start + self.chunk]
            predicted = np.asarray(self.predictor.predict([texts[i] for i in rows]), dtype=np.float64)
            for i, p in zip(rows, predicted, strict=True):
                out[i] = (value_answer(p), None)
        return out


class CalculatorFile:
    """The calculator's answers, in the same form: its ``error: ...`` answers are refusals."""

    def __init__(self, path, batch_size: int = 512):
        self.calculator, self.batch_size = Calculator(path), batch_size

    def answers(self, texts, values) -> list[tuple[str | None, str | None]]:
        del values  # the calculator writes any exact answer; it refuses only what it cannot evaluate
        return [
            (None, a.removeprefix(ERROR)) if a.startswith(ERROR) else (a, None)
            for a in self.calculator.answers(list(texts), self.batch_size)
        ]


RUNNERS = {"value": ValueFile, "calculator": CalculatorFile}


def score_file(runner, expressions) -> dict:
    """One file on one set: ``{"answered", "exact", "n", "non_numeric", "refusals": {reason: count}}``
    (an answered line whose output is NaN or infinite is ``non_numeric``: answered, not exact)."""
    texts, values = [e.text() for e in expressions], [e.value for e in expressions]
    answers = runner.answers(texts, values)
    refusals = Counter(reason_key(reason) for _, reason in answers if reason is not None)
    answered = [(a, v) for (a, reason), v in zip(answers, values, strict=True) if reason is None]
    return {
        "answered": len(answered),
        "exact": sum(a is not None and parse_answer(a) == v for a, v in answered),
        "n": len(expressions),
        "non_numeric": sum(a is None for a, _ in answered),
        "refusals": dict(refusals),
    }


def score_model(name: str, sets: dict, files=None, progress=None) -> dict:
    """``{"label", "kind", "files", "missing", "sets": {set: {"per_file", "n", ...}}, "refusals",
    "seconds"}`` of one model of :data:`MODELS` (``files``: its files, default its own)."""
    label, default_files, kind, provenance = MODELS[name]
    files = [Path(f) for f in (default_files() if files is None else files)]
    present = [f for f in files if f.is_file()]
    record = {
        "label": label,
        "kind": kind,
        "suite_seed": digit_suite.SUITE_SEED,
        "files": [relative(f) for f in present],
        "missing": [relative(f) for f in files if not f.is_file()],
        "sets": {},
        "refusals": {},
    }
    if provenance is not None:
        record["provenance"] = provenance(files)
    start, total, rows = time.perf_counter(), Counter(), {set_name: [] for set_name in sets}
    for path in present:  # one file open at a time: a session at 599 tokens holds a large arena
        runner = RUNNERS[kind](path)
        for set_name, expressions in sets.items():
            row = score_file(runner, expressions)
            rows[set_name].append({"file": relative(path), **row})
            total.update(row["refusals"])
            if progress is not None:
                progress(f"{name} {set_name} {path.parent.name}: {row['exact']}/{row['n']} exact")
        del runner
    record["sets"] = {set_name: summary(rows[set_name], len(sets[set_name])) for set_name in sets}
    record["refusals"] = dict(total.most_common())
    record["seconds"] = round(time.perf_counter() - start, 1)
    return record


def summary(rows: list[dict], n: int) -> dict:
    """A set over a model's files: each file's row, and the files answering / exact on every expression."""
    per_file = [{k: row[k] for k in ("file", "answered", "exact", "n", "non_numeric")} for row in rows]
    refusals = Counter()
    for row in rows:
        refusals.update(row["refusals"])
    return {
        "per_file": per_file,
        "n": n,
        "files_all_answered": sum(row["answered"] == n for row in rows),
        "files_all_exact": sum(row["exact"] == n for row in rows),
        "exact_mean_share": float(np.mean([row["exact"] / n for row in rows])) if rows and n else None,
        "refusals": dict(refusals.most_common()),
    }


def suite_sets(count: int | None = None, names=None) -> dict:
    """The digit suite's sets (``names``: all where None), each cut to its first ``count``."""
    sets = digit_suite.suite()
    return {k: (v[:count] if count else v) for k, v in sets.items() if names is None or k in names}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m predcalc.deploy.digit_suite_others", description=__doc__)
    parser.add_argument("--out", type=Path, default=RUNS / "41_digits" / "others.json")
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--sets", nargs="*", default=None, help="sets of the suite (default: all)")
    parser.add_argument("--count", type=int, default=None, help="expressions per set (default: all)")
    parser.add_argument(
        "--model-count",
        action="append",
        default=[],
        metavar="MODEL=N",
        help="the first N expressions of each set for MODEL only (a slow file); repeatable",
    )
    args = parser.parse_args(argv)
    counts = {}
    for item in args.model_count:
        model, _, n = item.partition("=")
        if model not in MODELS or not n.isdigit():
            parser.error(f"--model-count takes MODEL=N with MODEL one of {', '.join(MODELS)}; got {item!r}")
        counts[model] = int(n)
    out = args.out if args.out.is_absolute() else ROOT / args.out
    record = _json(out) if out.is_file() else {}  # a model not rescored keeps its stored entry
    for name in args.models:
        count = counts.get(name, args.count)
        record[name] = score_model(name, suite_sets(count, args.sets), progress=print)
        record[name]["first_per_set"] = count  # None: every expression of each set
        print(f"{name}: {record[name]['seconds']} s; missing files: {len(record[name]['missing'])}", flush=True)
        record = {k: record[k] for k in [*MODELS, *record] if k in record}  # in the order of MODELS
        out.parent.mkdir(parents=True, exist_ok=True)
        write_if_changed(out, json.dumps(record, indent=1) + "\n")  # after each model: a stopped run keeps it
    print(f"wrote {relative(out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
