"""The ``predcalc`` command line.

    predcalc run [--profile quick|full] [--only NAME ...] [--workers N]
    predcalc report
    predcalc predict "3 - -2 + 4" [--model PATH] [--cache]
    predcalc evaluate --model PATH --file FILE [--json] [--cache]
    predcalc export RUN_DIR|MODEL [--formats ...] [--data-seed N]
    predcalc bench [--model PATH ...] [--runs N] [--output FILE]
    predcalc sweep CONFIG [--workers N] [--engine process|dask] [--scheduler ADDRESS]
    predcalc tune CONFIG [--workers N] [--output DIR] [--search-only | --final-only | --probe]

User errors (bad expressions, missing files, unknown names) print one line and exit 2; anything
else (a bug, a missing optional package) prints one line and exits 1 (``PREDCALC_DEBUG=1`` shows
the traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from predcalc.calculator import bench as calculator_bench
from predcalc.calculator.runtime import Calculator, is_calculator
from predcalc.data import canonical, evaluate
from predcalc.data.exact_answers import score_answers, value_answer
from predcalc.data.files import load_exact_pairs
from predcalc.deploy.bench import bench, bench_table
from predcalc.deploy.export import FORMATS, export_directory, find_keras_models
from predcalc.deploy.predictor import CALCULATOR_MODEL, DEFAULT_MODEL, Predictor
from predcalc.paths import BENCH_FILE, ROOT, relative, reports_for, runs_for
from predcalc.studies.gemma_adapter import GemmaAdapter, is_gemma_adapter

EXIT_FAILURE = 1  # a bug, or something this machine lacks
EXIT_USAGE = 2  # bad input only
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C


def _run(args) -> int:
    from predcalc.training import runner  # papermill and Keras: not in the runtime-only install

    runs = Path(args.output) if args.output else runs_for(args.profile)
    overrides = {}
    for item in args.set or []:
        key, _, value = item.partition("=")
        try:
            overrides[key] = json.loads(value)
        except ValueError:
            overrides[key] = value
    widths = []

    def status(outcome, done, total):
        width = max(widths or [len(outcome.notebook)])
        state = "ok" if outcome.error is None else f"FAILED: {outcome.error} (outputs in {relative(outcome.output)})"
        print(
            f"[{done:>{len(str(total))}}/{total}] {outcome.notebook:<{width}}  {outcome.seconds:7.1f} s  {state}",
            flush=True,
        )

    notebooks = Path(args.notebooks) if args.notebooks else runner.NOTEBOOKS
    widths.extend(len(nb.stem) for nb in runner.discover(args.only, notebooks))
    start = time.perf_counter()
    try:
        outcomes = runner.run(
            only=args.only,
            profile=args.profile,
            workers=args.workers,
            runs=runs,
            notebooks_dir=notebooks,
            report=status,
            overrides=overrides or None,
        )
    except runner.Interrupted as stop:
        print(
            f"predcalc run: interrupted; kernels stopped; {len(stop.outcomes)} finished notebook"
            f"{'s' * (len(stop.outcomes) != 1)} kept in {relative(runs)}",
            file=sys.stderr,
            flush=True,
        )
        _resume_hint(runs)
        return EXIT_INTERRUPTED
    failed = [o.notebook for o in outcomes if o.error is not None]
    print(
        f"{len(outcomes) - len(failed)} of {len(outcomes)} notebooks ran in {time.perf_counter() - start:.0f} s; "
        f"outputs in {relative(runs)}/, kernel logs in {relative(runner.LOGS)}/"
    )
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        _resume_hint(runs)
        return 1
    return 0


def _resume_hint(runs: Path) -> None:
    """Name the notebooks whose finished (model, seed) runs wait in checkpoints, if any."""
    from predcalc.training import runner  # papermill and Keras: not in the runtime-only install

    folder = runs / runner.CHECKPOINTS
    waiting = sorted(p.name for p in folder.glob("*") if p.is_dir() and any(p.glob("*.json")))
    if waiting:
        print(
            f"predcalc run: the finished seeds of {', '.join(waiting)} are checkpointed in {relative(folder)}/; "
            "the same command resumes after them",
            file=sys.stderr,
            flush=True,
        )


def _report(args) -> int:
    from predcalc.report import findings  # pandas: not in the runtime-only install

    runs = Path(args.runs) if args.runs else runs_for(args.profile)
    if not runs.is_dir():
        raise FileNotFoundError(
            f"no run folder {relative(runs)}/ (run `predcalc run"
            f"{' --profile full' if args.profile == 'full' else ''}` first)"
        )
    if not any(runs.glob("*/metrics.json")):
        print(f"no metrics.json in {relative(runs)}/: the notebooks run there tabulate nothing; no page written")
        return 0
    full = args.profile == "full" and not args.runs
    written = findings.build(
        runs=runs, reports=reports_for("full" if full else "quick"), readme=ROOT / "README.md" if full else None
    )
    print(
        f"wrote {relative(written['findings'])} and {relative(written['html'])} ({written['models']} table rows)"
        + ("; README table updated" if written["readme"] else "" if not full else "; README has no findings markers")
    )
    return 0


CACHE_HELP = (
    "the learned calculator: look its networks' decisions up in tables filled once at load "
    "(default: a LiteRT forward pass for every step call)"
)


def _check_model_argument(model) -> None:
    if model is not None and not model.strip():
        raise ValueError("--model is empty: name a model file or directory")


def _default_model():
    """The model the findings recommend: the learned calculator where it is exported, else FNN2."""

    return CALCULATOR_MODEL if CALCULATOR_MODEL.is_file() else DEFAULT_MODEL


def _model(args):
    """A calculator (exact answers as text) or a Predictor (values), for ``args.model``."""

    _check_model_argument(args.model)
    path = args.model if args.model is not None else _default_model()
    if is_gemma_adapter(path):  # the fine-tuned Gemma 3 270M: base weights + LoRA adapter
        return GemmaAdapter(path)
    return Calculator(path, cache=args.cache) if is_calculator(path) else Predictor(path)


def _predict(args) -> int:
    model = _model(args)
    if isinstance(model, Calculator):
        (result,) = model.evaluate([args.expression])
        if isinstance(result, ValueError):
            raise result
        print(f"{args.expression.strip()} = {result.text()}  (calculated by {model.name})")
        return 0
    expression = canonical(args.expression)
    exact = evaluate(expression)
    model.check_answer(exact)  # a token-output model refuses an answer longer than its digits
    value = float(model.predict([expression])[0])
    exact_text = str(exact) if exact.denominator == 1 else f"{exact} = {float(exact):.6g}"
    if value != value:  # NaN: a token-output model wrote no parseable answer
        print(f"{expression} = (no parseable answer from {model.name}; exact {exact_text})")
        return 0
    print(f"{expression} = {value:.4f}  (predicted by {model.name}; rounded {round(value)}; exact {exact_text})")
    return 0


def _evaluate(args) -> int:
    model = _model(args)
    pairs = load_exact_pairs(args.file)
    expressions = [e for e, _ in pairs]
    truths = [str(v) for _, v in pairs]
    result = {"model": str(args.model), "file": str(args.file)}
    if isinstance(model, Calculator):
        answers = model.answers(expressions)
        result["path"] = "cache" if model.cache else "forward"
    else:
        predictions = np.asarray(model.predict(expressions), dtype=np.float64)
        answers = [value_answer(p) or "" for p in predictions]
        errors = np.abs(predictions - np.array([float(v) for _, v in pairs]))
        result["mae"] = float(np.mean(errors))
    scored = score_answers(truths, answers)
    result.update(n=scored["n"], exact=scored["exact"], lowest_terms=scored["lowest_terms"])
    if args.output:
        lines = ["expression\tanswer\ttruth\tright"]
        lines += [f"{e}\t{a}\t{t}\t{int(r)}" for e, a, t, r in zip(expressions, answers, truths, scored["right"])]
        Path(args.output).write_text("\n".join(lines) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        mae = f", MAE {result['mae']:.4g}" if "mae" in result else ""
        print(
            f"{model.name} on {args.file}: n {result['n']}, exact {100 * result['exact']:.2f} % "
            f"(lowest terms {100 * result['lowest_terms']:.2f} %){mae}"
        )
    return 0


def _one_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:300] if lines else ''}"


def _export(args) -> int:
    from tqdm.auto import tqdm  # tqdm, Keras and pandas: not in the runtime-only install

    from predcalc.report.findings import export_table, markdown_table

    models = [path for target in args.target for path in find_keras_models(target)]
    formats = tuple(args.formats or FORMATS)
    records, failed = [], []
    with tqdm(total=len(models) * len(formats), desc="export") as bar:
        for index, path in enumerate(models):
            name = path.parent.name
            bar.set_postfix_str(f"{name} saved_model")
            try:
                result = export_directory(
                    path,
                    formats=formats,
                    data_seed=args.data_seed,
                    progress=lambda fmt, name=name: (bar.update(), bar.set_postfix_str(f"{name} {fmt}")),
                )
                records.append({"models": {name: {"label": result["label"], "export": result["formats"]}}})
            except Exception as error:  # noqa: BLE001  Keras' loader and the converters raise their own classes; the batch goes on
                failed.append(f"{path}: {_one_line(error)}")
            bar.update((index + 1) * len(formats) - bar.n)
    if records:
        print(markdown_table(export_table(records)))
        print(f"wrote the artifacts and export.json beside {len(records)} model{'s' * (len(records) != 1)}")
    for line in failed:
        print(f"FAILED: {line}", file=sys.stderr)
    return 1 if failed else 0


def _bench(args) -> int:
    if args.calculator is not None:
        return _bench_calculator(args)

    record = bench(
        args.model, runs=args.runs, expression=args.expression, batch_size=args.batch, output=args.output or BENCH_FILE
    )
    print(bench_table(record))
    print(f"wrote {args.output or BENCH_FILE}")
    # a runtime that fails is a row of the table; a model that cannot load or run Keras fails the command
    return 1 if any("error" in m or "keras_predict" in m["errors"] for m in record["models"]) else 0


def _bench_calculator(args) -> int:
    path = Path(args.calculator) if args.calculator else CALCULATOR_MODEL
    record = calculator_bench.bench(path, n=args.expressions)
    for label in ("integers", "with_division"):
        row = record[label]
        paths = ", ".join(
            f"{name} {row[name]['seconds']:.2f} s = {row[name]['ratio']:.1f}x (exact {100 * row[name]['exact']:.2f} %)"
            for name in ("forward", "cache")
        )
        print(f"{label:>13}: Python (fractions) {row['python_seconds']:.3f} s; calculator {paths}")
    print(
        f"{record['n']:,} expressions of {record['operators']} operators; one expression: "
        f"{record['latency_ms']['forward']:.1f} ms with forward passes, "
        f"{record['latency_ms']['cache']:.1f} ms with the cache (median)"
    )
    if args.output:
        Path(args.output).write_text(json.dumps(record, indent=1) + "\n")
    return 0


def _sweep(args) -> int:
    from predcalc.training import sweep  # papermill: not in the runtime-only install
    from predcalc.training.runner import Interrupted

    config = sweep.load_config(args.config)
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be at least 1. Received: {args.workers}")
    try:
        outcomes = sweep.run(
            config,
            workers=args.workers,
            engine=args.engine,
            scheduler=args.scheduler,
            root=Path(args.output).resolve() if args.output else sweep.SWEEPS,
        )
    except Interrupted as stop:
        print(
            f"predcalc sweep: interrupted; workers stopped; {len(stop.outcomes)} finished run"
            f"{'s' * (len(stop.outcomes) != 1)} kept (run it again to resume)",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_INTERRUPTED
    for outcome in outcomes:
        status = (
            "skipped (finished)" if outcome.skipped else "ok" if outcome.error is None else f"FAILED: {outcome.error}"
        )
        print(f"{outcome.name}  {outcome.seconds:7.1f} s  {status}")
    failed = [o for o in outcomes if o.error is not None]
    root = Path(args.output) if args.output else sweep.SWEEPS
    print(f"{len(outcomes) - len(failed)} of {len(outcomes)} runs finished; outputs in {root / config['name']}")
    return 1 if failed else 0


def _tune(args) -> int:
    from predcalc.paths import relative
    from predcalc.training import tune  # keras-tuner and Keras: not in the runtime-only install

    summary = tune.run(
        args.config,
        root=Path(args.output) if args.output else tune.TUNE_BUILD,
        workers=args.workers,
        search_only=args.search_only,
        probe=args.probe,
        final_only=args.final_only,
    )
    if summary is None:
        print("predcalc tune: this worker's trials are done (the chief keeps the results)")
        return 0
    folder = (Path(args.output) if args.output else tune.TUNE_BUILD) / summary["name"]
    best = summary["best"]
    objective = summary["config"]["objective"]
    print(
        f"{summary['trials_finished']} trials finished ({summary['trials_failed']} failed); best: trial "
        f"{best['trial']}, {objective} {best[objective]:.4g}, {json.dumps(best['hyperparameters'])}"
        if best
        else f"{summary['trials_finished']} trials finished; none succeeded"
    )
    print(
        f"outputs in {relative(folder)}/"
        + (f" (scored on the test sets: {summary['metrics']})" if "metrics" in summary else "")
    )
    return 0 if best else 1


class UsageError(Exception):
    """A command line argparse rejects (printed as one line, exit 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse with its errors as one line (``predcalc predict: error: ...``), not usage + message."""

    def error(self, message):
        raise UsageError(f"{self.prog}: error: {message} (see {self.prog} --help)")


def _expression_arguments(argv: list[str]) -> list[str]:
    """Let ``predcalc predict -3+4`` read ``-3+4`` as the expression, not as an option: a word after
    ``predict`` that starts with '-' and is no option gets a leading space (the parser ignores spaces)."""
    if not argv or argv[0] != "predict":
        return argv
    out, takes_value = [argv[0]], False
    for word in argv[1:]:
        if takes_value:
            out.append(word)
            takes_value = False
        elif word == "--":
            out.append(word)
            takes_value = True  # the next word is positional anyway
        elif (
            word.startswith("-")
            and len(word) > 1
            and (word[1].isdigit() or word[1] in " (+-*/")
            and not word.startswith("--")
        ):
            out.append(" " + word)
        else:
            out.append(word)
            takes_value = word == "--model"
    return out


def parser() -> argparse.ArgumentParser:
    main_parser = _Parser(
        prog="predcalc",
        description="A predictive calculator: "
        "neural networks that read an arithmetic expression and predict its value.",
    )
    commands = main_parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser(
        "run", help="execute the notebooks with papermill (quick: into build/runs/; full: into reports/runs/)"
    )
    run.add_argument(
        "--profile",
        choices=["quick", "full"],
        default="quick",
        help="quick: the notebooks' cheap defaults, into the git-ignored build/runs/; full: the "
        "seed's settings (200 epochs, 5 seeds), into the committed reports/runs/",
    )
    run.add_argument("--output", metavar="DIR", help="write the run folders here instead")
    run.add_argument("--notebooks", metavar="DIR", help="run the notebooks of this folder (default notebooks/)")
    run.add_argument("--only", nargs="+", metavar="NAME", help="notebooks whose name starts with NAME (e.g. 01_fnn)")
    run.add_argument("--workers", type=int, default=1, help="notebooks executed in parallel (default 1)")
    run.add_argument(
        "--set",
        nargs="+",
        metavar="KEY=JSON",
        help="override notebook parameters on top of the profile, e.g. epochs=30 'seeds=[0,1]'",
    )
    run.set_defaults(handler=_run)

    report = commands.add_parser(
        "report",
        help="rebuild the findings page from stored metrics (full: "
        "reports/findings.md and the README table; quick: build/findings.md)",
    )
    report.add_argument(
        "--profile",
        choices=["quick", "full"],
        default="full",
        help="full (default): reports/runs/ -> reports/ and README.md; quick: build/runs/ -> build/",
    )
    report.add_argument("--runs", metavar="DIR", help="read the run folders here (the page goes to build/)")
    report.set_defaults(handler=_report)

    predict = commands.add_parser("predict", help="predict the value of an expression with an exported model")
    predict.add_argument("expression", help='an expression such as "3 - -2 + 4"')
    predict.add_argument(
        "--model",
        help="a .tflite, .onnx or .keras file or a SavedModel directory, with "
        "predcalc.json beside it "
        "(default: the learned calculator, reports/calculator/model.tflite, else the FNN2 of 01_fnn)",
    )
    predict.add_argument("--cache", action="store_true", help=CACHE_HELP)
    predict.set_defaults(handler=_predict)

    evaluate = commands.add_parser("evaluate", help="metrics of a model on a file of expression<TAB>answer lines")
    evaluate.add_argument(
        "--model",
        required=True,
        help="a .tflite, .onnx or .keras file or a SavedModel directory, with predcalc.json beside it",
    )
    evaluate.add_argument("--file", required=True, help="one expression per line, optionally <TAB> answer")
    evaluate.add_argument("--json", action="store_true", help="print the metrics as JSON")
    evaluate.add_argument(
        "--output",
        metavar="FILE",
        help="write expression, answer, truth and right (1/0), one tab-separated line per expression",
    )
    evaluate.add_argument("--cache", action="store_true", help=CACHE_HELP)
    evaluate.set_defaults(handler=_evaluate)

    export = commands.add_parser(
        "export", help="(re)write every artifact of stored models and check each against Keras"
    )
    export.add_argument(
        "target",
        nargs="+",
        metavar="RUN_DIR|MODEL",
        help="a run directory (reports/runs/NAME, with export/<model>/model.keras) or a model.keras "
        "file with predcalc.json beside it",
    )
    export.add_argument(
        "--formats",
        nargs="+",
        metavar="FORMAT",
        choices=FORMATS,
        help=f"of {' '.join(FORMATS)} (default: all; the SavedModel is always written)",
    )
    export.add_argument("--data-seed", type=int, help="protocol seed of the test sets (default: the run's, else 0)")
    export.set_defaults(handler=_export)

    bench = commands.add_parser(
        "bench", help="latency and throughput of every runtime vs Keras predict (writes reports/bench.json)"
    )
    bench.add_argument(
        "--model",
        nargs="+",
        metavar="PATH",
        help="model.keras files, export or run directories (default: every reports/runs/*/export/*)",
    )
    bench.add_argument("--runs", type=int, default=500, help="single-expression calls timed per runtime (default 500)")
    bench.add_argument("--expression", default="3 - -2 + 4", help="the expression timed (default %(default)r)")
    bench.add_argument(
        "--batch", type=int, help="throughput batch: the first N in-range test expressions (default all)"
    )
    bench.add_argument("--output", help="where the JSON goes (default reports/bench.json)")
    bench.add_argument(
        "--calculator",
        nargs="?",
        const="",
        metavar="PATH",
        help="time the learned calculator (default reports/calculator/model.tflite) against Python's "
        "exact evaluator on --expressions expressions of 10 operators",
    )
    bench.add_argument(
        "--expressions",
        type=int,
        default=10_000,
        help="with --calculator: how many expressions are timed (default 10,000)",
    )
    bench.set_defaults(handler=_bench)

    sweep = commands.add_parser(
        "sweep",
        help="run notebooks x parameter grid x seeds in parallel into "
        "reports/sweeps/<name>/ (finished runs are skipped)",
    )
    sweep.add_argument("config", help="a YAML or JSON file: name, notebooks, grid, seeds, workers")
    sweep.add_argument("--workers", type=int, help="runs at a time (default: the config's workers, else 1)")
    sweep.add_argument(
        "--engine",
        choices=["process", "dask"],
        default="process",
        help="local worker processes, or a dask.distributed cluster (optional packages)",
    )
    sweep.add_argument("--output", metavar="DIR", help="the sweeps folder (default reports/sweeps/)")
    sweep.add_argument("--scheduler", help="with --engine dask: a scheduler address (default: a local cluster)")
    sweep.set_defaults(handler=_sweep)

    tune = commands.add_parser(
        "tune",
        help="hyperparameter search (keras-tuner) over a registered model into "
        "build/tune/<name>/ (a stopped search resumes)",
    )
    tune.add_argument("config", help="a YAML or JSON file: model, space, objective, trials, epochs, seeds")
    tune.add_argument(
        "--workers",
        type=int,
        default=1,
        help="trials at a time: a keras-tuner chief and N worker processes on 127.0.0.1 (default 1: "
        "one process, no server)",
    )
    tune.add_argument(
        "--output", metavar="DIR", help="the tune folder (default build/tune/; committed results: reports/tune/)"
    )
    stage = tune.add_mutually_exclusive_group()
    stage.add_argument(
        "--search-only",
        action="store_true",
        help="search and summarise; do not train the best trial on the final seeds",
    )
    stage.add_argument(
        "--final-only",
        action="store_true",
        help="run no trial: train the best trial so far on the final seeds (a search cut short "
        "by time; the record counts the trials that ran)",
    )
    stage.add_argument(
        "--probe",
        action="store_true",
        help="run no trial: train the best trial so far as the trials did (first seed, trial epochs) "
        "and score it on the test sets into probe_metrics.json",
    )
    tune.set_defaults(handler=_tune)
    return main_parser


@contextlib.contextmanager
def _silenced_stderr_fd():
    """File descriptor 2 to /dev/null for the block: the C++ lines of TensorFlow and LiteRT (absl's
    "All log messages before absl::InitializeLog()", the CUDA stub's "Could not find cuda drivers",
    "Created TensorFlow Lite XNNPACK delegate") ignore TF_CPP_MIN_LOG_LEVEL and would otherwise be
    most of what a command prints. Python's own ``sys.stderr`` is flushed first and restored after."""
    if os.environ.get("PREDCALC_DEBUG"):
        yield
        return
    try:
        sys.stderr.flush()
        saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError):  # no real descriptor (an embedding, a test capture): leave it
        yield
        return
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _quiet_runtime() -> None:
    """Load TensorFlow with its start-up lines silenced (see :func:`_silenced_stderr_fd`)."""
    with _silenced_stderr_fd():
        try:
            import tensorflow as tf  # loaded here, its start-up lines silenced; absent on a deploy machine

            tf.config.list_physical_devices()
        except ImportError:  # no TensorFlow (a deploy machine): the command loads what it needs
            pass


def _short(message, limit: int = 300) -> str:
    lines = [line for line in str(message).strip().splitlines() if line.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def main(argv=None) -> int:
    """The command line: every error is one line on stderr, never a traceback (``PREDCALC_DEBUG=1``
    shows it): exit 2 for bad input, 1 for anything else, 130 on Ctrl-C."""
    argv = _expression_arguments(list(sys.argv[1:] if argv is None else argv))
    try:
        args = parser().parse_args(argv)
    except UsageError as error:
        print(_short(error), file=sys.stderr)
        return EXIT_USAGE
    for key, value in (("TF_CPP_MIN_LOG_LEVEL", "3"), ("TF_ENABLE_ONEDNN_OPTS", "0")):
        os.environ.setdefault(key, value)  # before TensorFlow is imported: quiet, deterministic kernels
    # predict and evaluate load TensorFlow only for a Keras model, inside their silenced block below
    # (a LiteRT, ONNX or calculator file needs none: 5 s less for each such `predcalc evaluate`)
    if args.command in ("report", "export", "bench", "tune"):
        _quiet_runtime()
    try:
        # predict and evaluate print their result on stdout; their stderr is only runtime noise
        with _silenced_stderr_fd() if args.command in ("predict", "evaluate") else contextlib.nullcontext():
            return args.handler(args)
    except KeyboardInterrupt:
        print(f"predcalc {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (ValueError, OSError) as error:  # bad input: an expression, a file, a name, a path
        # ExpressionError, TokenizerError, ExpressionFileError and SweepConfigError are ValueErrors
        if os.environ.get("PREDCALC_DEBUG"):
            raise
        print(f"predcalc {args.command}: error: {_short(error)}", file=sys.stderr)
        return EXIT_USAGE
    except (RuntimeError, ImportError) as error:  # what this machine lacks (TensorRT, an optional package)
        if os.environ.get("PREDCALC_DEBUG"):
            raise
        print(f"predcalc {args.command}: error: {_short(error)}", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as error:  # noqa: BLE001  a bug: one line (PREDCALC_DEBUG=1 shows the traceback), exit 1
        if os.environ.get("PREDCALC_DEBUG"):
            raise
        print(
            f"predcalc {args.command}: internal error: {type(error).__name__}: {_short(error)} "
            "(PREDCALC_DEBUG=1 shows where)",
            file=sys.stderr,
        )
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
