"""``python -m predcalc.jetson``: the check, the ``guide`` rewrite and the ``values`` helper."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from predcalc.jetson.check import check
from predcalc.jetson.compare import summary
from predcalc.jetson.result import result_lines, update_guide
from predcalc.jetson.root import shown
from predcalc.jetson.settings import OUTPUT, CheckError


def _values(file: str, artifacts: list[str], builtin_kernels: bool = False) -> dict:
    """Each value model's raw predictions on the file's expressions (run inside the root and on the
    host); with ``builtin_kernels``, LiteRT files on LiteRT's builtin kernels, without the XNNPACK
    delegate it applies by default (one file at its trained length: a value model's first output)."""
    from predcalc.data.files import load_exact_pairs  # lazy: this module also runs inside the arm64 root, stdlib only
    from predcalc.deploy.formats.litert import LiteRTModel
    from predcalc.deploy.predictor import Predictor

    expressions = [e for e, _ in load_exact_pairs(file)]
    found = {}
    for artifact in artifacts:
        predictor = Predictor(artifact)
        if builtin_kernels:
            outputs = LiteRTModel(artifact, default_delegates=False)(predictor.encode(expressions))
            found[artifact] = [float(v) for v in outputs.reshape(len(expressions), -1)[:, 0]]
        else:
            found[artifact] = [float(v) for v in predictor.predict(expressions)]
    return found


def _rewrite(output: Path) -> int:
    """The ``guide`` command: summary, result lines and the deploy guide from the stored record."""
    from predcalc.paths import write_if_changed  # lazy: this module also runs inside the arm64 root, stdlib only

    record = json.loads(output.read_text())
    record["summary"] = summary(record["artifacts"], record["skipped"])
    record["result"] = result_lines(record)
    write_if_changed(output, json.dumps(record, indent=1) + "\n")
    print("\n".join(record["result"]))
    return 0 if update_guide(record) else 1


def default_root() -> Path:
    return Path(os.environ.get("PREDCALC_ARM64_ROOT") or Path.home() / ".cache" / "predcalc" / "arm64-root")


def main(argv=None) -> int:
    from predcalc.paths import REPORTS  # lazy: this module also runs inside the arm64 root, stdlib only

    parser = argparse.ArgumentParser(prog="python -m predcalc.jetson", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command")
    run = commands.add_parser("check", help="the whole check (the default)")
    run.add_argument(
        "--root",
        type=Path,
        default=None,
        help="the arm64 root (default ~/.cache/predcalc/arm64-root or $PREDCALC_ARM64_ROOT)",
    )
    run.add_argument("--output", type=Path, default=REPORTS / OUTPUT)
    guide = commands.add_parser(
        "guide", help="rewrite the stored record's summary and the deploy guide's lines from its artifacts (no run)"
    )
    guide.add_argument("--output", type=Path, default=REPORTS / OUTPUT)
    values = commands.add_parser("values", help="raw predictions as JSON (what the check runs on each side)")
    values.add_argument("--file", required=True)
    values.add_argument("--builtin-kernels", action="store_true", help="LiteRT without its default XNNPACK delegate")
    values.add_argument("artifacts", nargs="+")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv if argv and argv[0] in commands.choices else ["check", *argv])
    if args.command == "values":
        print(json.dumps(_values(args.file, args.artifacts, args.builtin_kernels)))
        return 0
    if args.command == "guide":
        return _rewrite(args.output)
    import signal  # lazy: this module also runs inside the arm64 root, stdlib only

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unmount the root's mounts on the way out
    try:
        record = check(args.root or default_root(), args.output)
    except CheckError as error:
        print(f"jetson-check: {error}", file=sys.stderr)
        return 1
    print("\n".join(record["result"]))
    readme = " and docs/deploy.md" if update_guide(record) else ""
    print(f"wrote {shown(args.output)}{readme}")
    return 0 if not (record["summary"]["disagree"] or record["summary"]["failed"]) else 1
