"""The ``predcalc`` command line.

    predcalc run [--profile quick|full] [--only NAME ...] [--workers N]
    predcalc report
    predcalc predict "3 - -2 + 4" [--model PATH]
    predcalc evaluate --model PATH --file FILE [--json]
    predcalc export RUN_DIR|MODEL [--formats ...] [--data-seed N]
    predcalc bench [--model PATH ...] [--runs N] [--output FILE]
    predcalc sweep CONFIG [--workers N] [--engine process|dask] [--scheduler ADDRESS]

User errors (bad expressions, missing files, unknown names) print one line and exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

EXIT_USAGE = 2


def _run(args) -> int:
    from predcalc.training import runner

    import json as _json

    overrides = {}
    for item in args.set or []:
        key, _, value = item.partition("=")
        try:
            overrides[key] = _json.loads(value)
        except ValueError:
            overrides[key] = value
    outcomes = runner.run(only=args.only, profile=args.profile, workers=args.workers, overrides=overrides or None)
    width = max(len(o.notebook) for o in outcomes)
    for outcome in outcomes:
        status = "ok" if outcome.error is None else f"FAILED: {outcome.error}"
        print(f"{outcome.notebook:<{width}}  {outcome.seconds:7.1f} s  {status}")
    failed = [o.notebook for o in outcomes if o.error is not None]
    print(f"{len(outcomes) - len(failed)} of {len(outcomes)} notebooks ran; outputs in {runner.RUNS}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _report(args) -> int:
    from predcalc.report import findings

    written = findings.build()
    print(f"wrote {written['findings']} and {written['html']} ({written['models']} table rows)"
          + ("; README table updated" if written["readme"] else "; README has no findings markers"))
    return 0


def _predict(args) -> int:
    from predcalc.data import canonical, evaluate
    from predcalc.deploy.predictor import DEFAULT_MODEL, Predictor

    expression = canonical(args.expression)
    exact = evaluate(expression)
    predictor = Predictor(args.model or DEFAULT_MODEL)
    value = float(predictor.predict([expression])[0])
    exact_text = str(exact) if exact.denominator == 1 else f"{exact} = {float(exact):.6g}"
    if value != value:  # NaN: a token-output model wrote no parseable answer
        print(f"{expression} = (no parseable answer from {predictor.name}; exact {exact_text})")
        return 0
    print(f"{expression} = {value:.4f}  (predicted by {predictor.name}; rounded {round(value)}; exact {exact_text})")
    return 0


def _evaluate(args) -> int:
    from predcalc.data import load_expression_file
    from predcalc.training.metrics import regression_metrics
    from predcalc.deploy.predictor import Predictor

    split = load_expression_file(args.file)
    predictor = Predictor(args.model)
    predictions = predictor.predict(split.expressions)
    result = {"model": str(args.model), "file": str(args.file), **regression_metrics(split.values, predictions)}
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"{predictor.name} on {args.file}: n {result['n']}, MAE {result['mae']:.4g}, "
              f"MRE {result['mre']:.4g}, exact accuracy {100 * result['accuracy']:.2f} %")
    return 0


def _one_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:300] if lines else ''}"


def _export(args) -> int:
    from tqdm.auto import tqdm

    from predcalc.deploy.export import FORMATS, export_directory, find_keras_models
    from predcalc.report.findings import export_table, markdown_table

    models = [path for target in args.target for path in find_keras_models(target)]
    formats = tuple(args.formats or FORMATS)
    records, failed = [], []
    with tqdm(total=len(models) * len(formats), desc="export") as bar:
        for index, path in enumerate(models):
            name = path.parent.name
            bar.set_postfix_str(f"{name} saved_model")
            try:
                result = export_directory(path, formats=formats, data_seed=args.data_seed,
                                          progress=lambda fmt: (bar.update(), bar.set_postfix_str(f"{name} {fmt}")))
                records.append({"models": {name: {"label": result["label"], "export": result["formats"]}}})
            except Exception as error:  # this model could not be loaded or exported; the batch goes on
                failed.append(f"{path}: {_one_line(error)}")
            bar.update((index + 1) * len(formats) - bar.n)
    if records:
        print(markdown_table(export_table(records)))
        print(f"wrote the artifacts and export.json beside {len(records)} model{'s' * (len(records) != 1)}")
    for line in failed:
        print(f"FAILED: {line}", file=sys.stderr)
    return 1 if failed else 0


def _bench(args) -> int:
    from predcalc.deploy.bench import BENCH_FILE, bench, bench_table

    record = bench(args.model, runs=args.runs, expression=args.expression, batch_size=args.batch,
                   output=args.output or BENCH_FILE)
    print(bench_table(record))
    print(f"wrote {args.output or BENCH_FILE}")
    # a runtime that fails is a row of the table; a model that cannot load or run Keras fails the command
    return 1 if any("error" in m or "keras_predict" in m["errors"] for m in record["models"]) else 0


def _sweep(args) -> int:
    from predcalc.training import sweep

    config = sweep.load_config(args.config)
    outcomes = sweep.run(config, workers=args.workers, engine=args.engine, scheduler=args.scheduler)
    for outcome in outcomes:
        status = "skipped (finished)" if outcome.skipped else "ok" if outcome.error is None else f"FAILED: {outcome.error}"
        print(f"{outcome.name}  {outcome.seconds:7.1f} s  {status}")
    failed = [o for o in outcomes if o.error is not None]
    print(f"{len(outcomes) - len(failed)} of {len(outcomes)} runs finished; outputs in {sweep.SWEEPS / config['name']}")
    return 1 if failed else 0


def parser() -> argparse.ArgumentParser:
    from predcalc.deploy.export import FORMATS

    main_parser = argparse.ArgumentParser(prog="predcalc", description="A predictive calculator: "
                                          "neural networks that read an arithmetic expression and predict its value.")
    commands = main_parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="execute the notebooks with papermill into reports/runs/")
    run.add_argument("--profile", choices=["quick", "full"], default="quick",
                     help="quick: the notebooks' cheap defaults; full: the seed's settings (200 epochs, 5 seeds)")
    run.add_argument("--only", nargs="+", metavar="NAME", help="notebooks whose name starts with NAME (e.g. 01_fnn)")
    run.add_argument("--workers", type=int, default=1, help="notebooks executed in parallel (default 1)")
    run.add_argument("--set", nargs="+", metavar="KEY=JSON",
                     help="override notebook parameters on top of the profile, e.g. epochs=30 'seeds=[0,1]'")
    run.set_defaults(handler=_run)

    report = commands.add_parser("report", help="rebuild reports/findings.md and the README table from stored metrics")
    report.set_defaults(handler=_report)

    predict = commands.add_parser("predict", help="predict the value of an expression with an exported model")
    predict.add_argument("expression", help='an expression such as "3 - -2 + 4"')
    predict.add_argument("--model", help="a .tflite, .onnx or .keras file or a SavedModel directory, with "
                                         "predcalc.json beside it "
                                         "(default: the FNN2 exported by 01_fnn)")
    predict.set_defaults(handler=_predict)

    evaluate = commands.add_parser("evaluate", help="metrics of a model on a file of expression<TAB>answer lines")
    evaluate.add_argument("--model", required=True, help="a .tflite, .onnx or .keras file or a SavedModel "
                                                         "directory, with predcalc.json beside it")
    evaluate.add_argument("--file", required=True, help="one expression per line, optionally <TAB> answer")
    evaluate.add_argument("--json", action="store_true", help="print the metrics as JSON")
    evaluate.set_defaults(handler=_evaluate)

    export = commands.add_parser("export", help="(re)write every artifact of stored models and check each "
                                                "against Keras")
    export.add_argument("target", nargs="+", metavar="RUN_DIR|MODEL",
                        help="a run directory (reports/runs/NAME, with export/<model>/model.keras) or a model.keras "
                             "file with predcalc.json beside it")
    export.add_argument("--formats", nargs="+", metavar="FORMAT", choices=FORMATS,
                        help=f"of {' '.join(FORMATS)} (default: all; the SavedModel is always written)")
    export.add_argument("--data-seed", type=int, help="protocol seed of the test sets (default: the run's, else 0)")
    export.set_defaults(handler=_export)

    bench = commands.add_parser("bench", help="latency and throughput of every runtime vs Keras predict "
                                              "(writes reports/bench.json)")
    bench.add_argument("--model", nargs="+", metavar="PATH",
                       help="model.keras files, export or run directories (default: every reports/runs/*/export/*)")
    bench.add_argument("--runs", type=int, default=500, help="single-expression calls timed per runtime (default 500)")
    bench.add_argument("--expression", default="3 - -2 + 4", help="the expression timed (default %(default)r)")
    bench.add_argument("--batch", type=int, help="throughput batch: the first N in-range test expressions "
                                                 "(default all)")
    bench.add_argument("--output", help="where the JSON goes (default reports/bench.json)")
    bench.set_defaults(handler=_bench)

    sweep = commands.add_parser("sweep", help="run notebooks x parameter grid x seeds in parallel into "
                                              "reports/sweeps/<name>/ (finished runs are skipped)")
    sweep.add_argument("config", help="a YAML or JSON file: name, notebooks, grid, seeds, workers")
    sweep.add_argument("--workers", type=int, help="runs at a time (default: the config's workers, else 1)")
    sweep.add_argument("--engine", choices=["process", "dask"], default="process",
                       help="local worker processes, or a dask.distributed cluster (optional packages)")
    sweep.add_argument("--scheduler", help="with --engine dask: a scheduler address (default: a local cluster)")
    sweep.set_defaults(handler=_sweep)
    return main_parser


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    for key, value in (("TF_CPP_MIN_LOG_LEVEL", "3"), ("TF_ENABLE_ONEDNN_OPTS", "0")):
        os.environ.setdefault(key, value)  # before TensorFlow is imported: quiet, deterministic kernels
    try:
        return args.handler(args)
    except (ValueError, FileNotFoundError, RuntimeError) as error:
        # ExpressionError, TokenizerError and ExpressionFileError are ValueErrors
        print(f"predcalc {args.command}: error: {error}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
