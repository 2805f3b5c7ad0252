"""What each ``predcalc`` command does (:mod:`predcalc.cli` parses the command line and calls one of
these with its arguments). Each returns the exit status; bad input raises ``ValueError`` or
``OSError``, which :func:`predcalc.cli.main` prints as one line."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from predcalc.calculator import bench as calculator_bench
from predcalc.calculator.runtime import Calculator, is_calculator
from predcalc.data import canonical, digits, evaluate
from predcalc.data.exact_answers import score_answers, value_answer
from predcalc.data.files import ExpressionFileError, read_expression_lines
from predcalc.deploy.bench import bench, bench_table
from predcalc.deploy.digit_files import DigitFile, is_digit_model
from predcalc.deploy.export import FORMATS, export_directory, find_keras_models
from predcalc.deploy.predictor import CALCULATOR_MODEL, DEFAULT_MODEL, Predictor
from predcalc.errors import one_line
from predcalc.llm.deploy import GemmaAdapter, GGUFGemma, is_gemma_adapter
from predcalc.paths import BENCH_FILE, relative, reports_for, runs_for
from predcalc.readable import percent

EXIT_FAILURE = 1  # a bug, or something this machine lacks
EXIT_REFUSED = 1  # evaluate: some lines refused, the others scored (as export, run and sweep: part failed)
EXIT_USAGE = 2  # bad input only
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C
ERROR = "error: "  # how the calculator's answers write an expression it refuses (calculator.engine.answer_text)


def run_command(args) -> int:
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
        resume_hint(runs)
        return EXIT_INTERRUPTED
    failed = [o.notebook for o in outcomes if o.error is not None]
    print(
        f"{len(outcomes) - len(failed)} of {len(outcomes)} notebooks ran in {time.perf_counter() - start:.0f} s; "
        f"outputs in {relative(runs)}/, kernel logs in {relative(runner.LOGS)}/"
    )
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        resume_hint(runs)
        return 1
    return 0


def resume_hint(runs: Path) -> None:
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


def report_command(args) -> int:
    from predcalc.report import appendix  # pandas: not in the runtime-only install

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
    written = appendix.build(runs=runs, reports=reports_for("full" if full else "quick"), full=full)
    print(f"wrote {relative(written['findings'])} and {relative(written['html'])} ({written['models']} models)")
    return 0


CACHE_HELP = (
    "the learned calculator: look its networks' decisions up in tables filled once at load "
    "(default: a LiteRT forward pass for every step call)"
)


def check_model_argument(model) -> None:
    if model is not None and not model.strip():
        raise ValueError("--model is empty: name a model file or directory")


def default_model():
    """The model the findings recommend: the learned calculator where it is exported, else FNN2."""

    return CALCULATOR_MODEL if CALCULATOR_MODEL.is_file() else DEFAULT_MODEL


def model_for(args):
    """A calculator (exact answers as text) or a Predictor (values), for ``args.model``."""

    check_model_argument(args.model)
    path = args.model if args.model is not None else default_model()
    if is_gemma_adapter(path):  # the fine-tuned Gemma 3 270M: base weights + LoRA adapter
        return GemmaAdapter(path)
    if str(path).endswith(".gguf"):  # the same, merged into one GGUF file, run by llama.cpp
        return GGUFGemma(path)
    if is_digit_model(path):  # a model that reads digits: ONNX file and the decoding loop
        return DigitFile(path)
    return Calculator(path, cache=args.cache) if is_calculator(path) else Predictor(path)


def predict_command(args) -> int:
    model = model_for(args)
    if isinstance(model, DigitFile):
        expression = digits.parse(args.expression)
        if reason := model.refusal(expression):
            raise ValueError(reason)
        (answer,) = model.answers([expression])
        shown = "(no valid answer written)" if answer is None else str(answer)
        print(f"{expression.text()} = {shown}  (predicted by {model.name}; exact {expression.value})")
        return 0
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


def refusal(model, expression: str, truth) -> str | None:
    """Why ``model`` cannot answer a line (one line), or None: an answer it cannot write (a
    token-output model's digits, the fine-tuned Gemma's integers), and for an exported file an
    expression past its exact range or one its tokeniser cannot encode (too long, an operator it lacks)."""
    try:
        model.check_answer(truth)
        if isinstance(model, Predictor):
            model.check_input(expression)
    except ValueError as error:  # TokenizerError and GemmaAdapterError are ValueErrors
        return one_line(str(error))
    return None


def evaluate_command(args) -> int:
    """Score every line the model answers; each line it cannot answer (malformed, past what the model
    reads or writes) is refused, with its number and reason. Exit 0: every line answered;
    :data:`EXIT_REFUSED`: some refused, the others scored; 2: a usage error, or no line answered."""
    model = model_for(args)
    lines = read_expression_lines(args.file)
    reasons = {line.number: line.refused for line in lines if line.refused}
    result = {"model": str(args.model), "file": str(args.file)}
    errors = None  # a value model's |prediction - truth| on the answered lines
    if isinstance(model, DigitFile):
        readable = {}
        for line in lines:
            if line.refused:
                continue
            try:
                expression = digits.parse(line.expression)
            except digits.DigitExpressionError as error:
                reasons[line.number] = str(error)
                continue
            if reason := model.refusal(expression):
                reasons[line.number] = reason
            else:
                readable[line.number] = expression
        predicted = model.answers(list(readable.values()))
        answers = {n: "" if p is None else str(p) for n, p in zip(readable, predicted, strict=True)}
    elif isinstance(model, Calculator):
        readable = [line for line in lines if not line.refused]
        result["path"] = "cache" if model.cache else "forward"
        answers = dict(zip((line.number for line in readable), model.answers([line.expression for line in readable])))
        reasons |= {n: one_line(a.removeprefix(ERROR)) for n, a in answers.items() if a.startswith(ERROR)}
    else:
        reasons |= {
            line.number: reason
            for line in lines
            if not line.refused and (reason := refusal(model, line.expression, line.truth))
        }
        answered = [line for line in lines if line.number not in reasons]
        answers = {}
        if answered:
            predictions = np.asarray(model.predict([line.expression for line in answered]), dtype=np.float64)
            answers = {line.number: value_answer(p) or "" for line, p in zip(answered, predictions)}
            errors = np.abs(predictions - np.array([float(line.truth) for line in answered]))
    answered = [line for line in lines if line.number not in reasons]
    scored = score_answers([str(line.truth) for line in answered], [answers[line.number] for line in answered])
    right = dict(zip((line.number for line in answered), scored["right"]))
    result.update(
        lines=len(lines),
        n=len(answered),  # the answered lines: exact, lowest_terms and mae are of them
        exact=scored["exact"] if answered else None,
        lowest_terms=scored["lowest_terms"] if answered else None,
    )
    if errors is not None:
        result["mae"] = float(np.mean(errors))
    result.update(
        exact_of_all=sum(scored["right"]) / len(lines),
        refused_count=len(reasons),
        refused=[{"line": number, "reason": reason} for number, reason in sorted(reasons.items())],
    )
    if args.output:
        rows = ["expression\tanswer\ttruth\tright"]
        for line in lines:
            truth = "" if line.truth is None else str(line.truth)
            if line.number in reasons:
                rows.append(f"{line.expression}\trefused: {reasons[line.number]}\t{truth}\t0")
            else:
                rows.append(f"{line.expression}\t{answers[line.number]}\t{truth}\t{int(right[line.number])}")
        Path(args.output).write_text("\n".join(rows) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(evaluate_summary(model.name, args.file, result))
    if not answered:
        first = result["refused"][0]
        raise ExpressionFileError(
            f"{args.file}: no line could be answered ({len(lines)} refused; line {first['line']}: {first['reason']})"
        )
    return EXIT_REFUSED if reasons else 0


def evaluate_summary(name: str, file, result: dict) -> str:
    """``predcalc evaluate``'s text: the shares of the answered lines and of all lines, then each
    refused line with its number and reason."""
    lines, n, refused = result["lines"], result["n"], result["refused"]
    head = f"{name} on {file}: answered {n:,} of {lines:,} line{'s' * (lines != 1)}"
    if not n:
        scores = ""
    elif not refused:
        scores = f"; exact {percent(result['exact'], 2)} (lowest terms {percent(result['lowest_terms'], 2)})"
    else:
        scores = (
            f"; exact {percent(result['exact'], 2)} of the answered, {percent(result['exact_of_all'], 2)} of all "
            f"lines (lowest terms {percent(result['lowest_terms'], 2)} of the answered)"
        )
    mae = f", MAE {result['mae']:.4g}{' of the answered' if refused else ''}" if "mae" in result else ""
    out = [head + scores + mae]
    if refused:
        out.append(f"refused {len(refused):,} line{'s' * (len(refused) != 1)}:")
        out += [f"  line {r['line']}: {r['reason']}" for r in refused]
    return "\n".join(out)


def export_command(args) -> int:
    from tqdm.auto import tqdm  # tqdm, Keras and pandas: not in the runtime-only install

    from predcalc.report.findings import export_frame, markdown_table

    models = [path for target in args.target for path in find_keras_models(target)]
    formats = tuple(args.formats or FORMATS)
    exports, failed = [], []
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
                exports.append((name, result["label"], result["formats"]))
            except Exception as error:  # noqa: BLE001  Keras' loader and the converters raise their own classes; the batch goes on
                failed.append(f"{path}: {one_line(error)}")
            bar.update((index + 1) * len(formats) - bar.n)
    if exports:
        print(markdown_table(export_frame(exports)))
        print(f"wrote the artifacts and export.json beside {len(exports)} model{'s' * (len(exports) != 1)}")
    for line in failed:
        print(f"FAILED: {line}", file=sys.stderr)
    return 1 if failed else 0


def bench_command(args) -> int:
    if args.calculator is not None:
        return bench_calculator_command(args)

    record = bench(
        args.model, runs=args.runs, expression=args.expression, batch_size=args.batch, output=args.output or BENCH_FILE
    )
    print(bench_table(record))
    print(f"wrote {args.output or BENCH_FILE}")
    # a runtime that fails is a row of the table; a model that cannot load or run Keras fails the command
    return 1 if any("error" in m or "keras_predict" in m["errors"] for m in record["models"]) else 0


def bench_calculator_command(args) -> int:
    path = Path(args.calculator) if args.calculator else CALCULATOR_MODEL
    record = calculator_bench.bench(path, n=args.expressions)
    for label in ("integers", "with_division"):
        row = record[label]
        paths = ", ".join(
            f"{name} {row[name]['seconds']:.2f} s = {row[name]['ratio']:.1f}x (exact {percent(row[name]['exact'], 2)})"
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


def sweep_command(args) -> int:
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


def tune_command(args) -> int:
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
