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
the traceback). ``evaluate`` scores every line it can and lists each line it refuses, with its
number and reason: exit 0 when every line was answered, 1 when some were refused, 2 when none was
(or on a usage error).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from predcalc import cli_commands
from predcalc.cli_commands import CACHE_HELP, EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE
from predcalc.deploy.export import FORMATS
from predcalc.errors import one_line
from predcalc.quiet import quiet_environment, quiet_tensorflow, silenced_stderr


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
        "prior report's settings (200 epochs, 5 seeds), into the committed reports/runs/",
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
    run.set_defaults(handler=cli_commands.run_command)

    report = commands.add_parser(
        "report",
        help="rebuild the findings page from stored metrics (full: reports/findings.md; quick: build/findings.md)",
    )
    report.add_argument(
        "--profile",
        choices=["quick", "full"],
        default="full",
        help="full (default): reports/runs/ -> reports/ and README.md; quick: build/runs/ -> build/",
    )
    report.add_argument("--runs", metavar="DIR", help="read the run folders here (the page goes to build/)")
    report.set_defaults(handler=cli_commands.report_command)

    predict = commands.add_parser("predict", help="predict the value of an expression with an exported model")
    predict.add_argument("expression", help='an expression such as "3 - -2 + 4"')
    predict.add_argument(
        "--model",
        help="a .tflite, .onnx or .keras file or a SavedModel directory, with "
        "predcalc.json beside it "
        "(default: the learned calculator, reports/calculator/model.tflite, else the FNN2 of 01_fnn)",
    )
    predict.add_argument("--cache", action="store_true", help=CACHE_HELP)
    predict.set_defaults(handler=cli_commands.predict_command)

    evaluate = commands.add_parser(
        "evaluate",
        help="metrics of a model on a file of expression<TAB>answer lines",
        description="Score every line the model can answer. A line it cannot answer (malformed, too "
        "long for the model, past the model file's exact range, an answer the model cannot write) is "
        "refused: listed with its line number and reason, and counted as wrong in the accuracy over "
        "all lines. Exit status 0: every line answered; 1: some lines refused, the others scored; 2: "
        "a usage error (a missing or empty file, a missing model) or no line answered.",
    )
    evaluate.add_argument(
        "--model",
        required=True,
        help="a .tflite, .onnx or .keras file or a SavedModel directory, with predcalc.json beside it",
    )
    evaluate.add_argument("--file", required=True, help="one expression per line, optionally <TAB> answer")
    evaluate.add_argument(
        "--json",
        action="store_true",
        help="print the metrics as JSON: lines, n (answered), exact and lowest_terms (of the answered), "
        "mae, exact_of_all, refused_count and refused ([{line, reason}])",
    )
    evaluate.add_argument(
        "--output",
        metavar="FILE",
        help="write expression, answer, truth and right (1/0), one tab-separated line per expression "
        "(a refused line: answer 'refused: REASON', right 0)",
    )
    evaluate.add_argument("--cache", action="store_true", help=CACHE_HELP)
    evaluate.set_defaults(handler=cli_commands.evaluate_command)

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
    export.set_defaults(handler=cli_commands.export_command)

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
    bench.set_defaults(handler=cli_commands.bench_command)

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
    sweep.set_defaults(handler=cli_commands.sweep_command)

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
    tune.set_defaults(handler=cli_commands.tune_command)
    return main_parser


def main(argv=None) -> int:
    """The command line: every error is one line on stderr, never a traceback (``PREDCALC_DEBUG=1``
    shows it): exit 2 for bad input, 1 for anything else, 130 on Ctrl-C."""
    argv = _expression_arguments(list(sys.argv[1:] if argv is None else argv))
    try:
        args = parser().parse_args(argv)
    except UsageError as error:
        print(one_line(str(error)), file=sys.stderr)
        return EXIT_USAGE
    quiet_environment()  # before TensorFlow is imported: quiet, deterministic kernels
    # predict and evaluate load TensorFlow only for a Keras model, inside their silenced block below
    # (a LiteRT, ONNX or calculator file needs none: 5 s less for each such `predcalc evaluate`)
    if args.command in ("report", "export", "bench", "tune"):
        quiet_tensorflow()
    try:
        # predict and evaluate print their result on stdout; their stderr is only runtime noise
        with silenced_stderr() if args.command in ("predict", "evaluate") else contextlib.nullcontext():
            return args.handler(args)
    except KeyboardInterrupt:
        print(f"predcalc {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (ValueError, OSError) as error:  # bad input: an expression, a file, a name, a path
        # ExpressionError, TokenizerError, ExpressionFileError and SweepConfigError are ValueErrors
        if os.environ.get("PREDCALC_DEBUG"):
            raise
        print(f"predcalc {args.command}: error: {one_line(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    except (RuntimeError, ImportError) as error:  # what this machine lacks (TensorRT, an optional package)
        if os.environ.get("PREDCALC_DEBUG"):
            raise
        print(f"predcalc {args.command}: error: {one_line(str(error))}", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as error:  # noqa: BLE001  a bug: one line (PREDCALC_DEBUG=1 shows the traceback), exit 1
        if os.environ.get("PREDCALC_DEBUG"):
            raise
        print(
            f"predcalc {args.command}: internal error: {type(error).__name__}: {one_line(str(error))} "
            "(PREDCALC_DEBUG=1 shows where)",
            file=sys.stderr,
        )
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
