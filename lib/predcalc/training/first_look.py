"""How long a newcomer's first look takes, measured: ``make report`` (the quick profile) on a fresh
clone of this repository, with the virtual environment already installed.

``make first-look`` runs it and writes ``reports/first_look.json``; the README's numbers on it are
rows of ``reports/claims.csv``, checked against that record. Measure on an idle
machine: the record keeps the load average at the start, so a reader can tell.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from predcalc.paths import REPORTS, ROOT, relative, write_json_if_changed

FIRST_LOOK_FILE = REPORTS / "first_look.json"
LIMIT_SECONDS = 600  # the goal: a first look within 10 minutes


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def measure(source: Path = ROOT, venv: Path | None = None, log: Path | None = None) -> dict:
    """Clone ``source`` (its committed HEAD) into a temporary folder, give the clone the installed
    virtual environment ``venv`` (default: the one running this), and time ``make report`` there.

    The clone's own ``lib/`` is imported (``PYTHONPATH``), and make is told not to reinstall the
    environment (``-o .venv/.installed``), so only the quick run and its page are timed. The make
    output goes to ``log`` (default: discarded)."""

    venv = Path(venv or sys.prefix)
    with tempfile.TemporaryDirectory(prefix="predcalc-first-look-") as folder:
        clone = Path(folder) / "predcalc"
        subprocess.run(["git", "clone", "--quiet", str(source), str(clone)], check=True)
        (clone / ".venv").symlink_to(venv)
        environment = {**os.environ, "PYTHONPATH": str(clone / "lib")}
        load = os.getloadavg()[0]
        start = time.perf_counter()
        with open(log or os.devnull, "w") as out:
            finished = subprocess.run(
                ["make", "-o", ".venv/.installed", "report"],
                cwd=clone,
                env=environment,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        seconds = time.perf_counter() - start
        runs = clone / "build" / "runs"
        failed = clone / "build" / "failed"
        return {
            "command": "make report",
            "profile": "quick",
            "commit": _git("rev-parse", "HEAD", cwd=clone),
            "cores": os.cpu_count(),
            "load_at_start": round(load, 2),
            "exit_status": finished.returncode,
            "notebooks": len(list(runs.glob("*/run.json"))),
            "failed": sorted(p.name for p in failed.glob("*") if p.is_dir()) if failed.is_dir() else [],
            "page_written": (clone / "build" / "findings.md").is_file(),
            # each notebook's own time: the next quick run starts the longest first (runner.longest_first)
            "notebook_seconds": {
                path.parent.name: json.loads(path.read_text()).get("seconds")
                for path in sorted(runs.glob("*/run.json"))
            },
            "seconds": round(seconds, 1),
            "measured_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }


def notebook_seconds(path: Path = FIRST_LOOK_FILE) -> dict[str, float]:
    """Each notebook's quick-run seconds from the stored first look ({} where none is stored)."""
    path = Path(path)
    if not path.is_file():
        return {}
    stored = json.loads(path.read_text()).get("notebook_seconds") or {}
    return {name: float(value) for name, value in stored.items() if value is not None}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m predcalc.training.first_look",
        description="Time `make report` (quick) on a fresh clone of this repository's HEAD; write reports/first_look.json.",
    )
    parser.add_argument("--log", type=Path, default=None, help="keep make's output in this file")
    args = parser.parse_args(argv)
    if args.log is not None:
        args.log.parent.mkdir(parents=True, exist_ok=True)
    record = measure(log=args.log)
    write_json_if_changed(FIRST_LOOK_FILE, record)
    minutes, seconds = divmod(round(record["seconds"]), 60)
    print(
        f"make report (quick) on a fresh clone: {minutes} min {seconds:02d} s, {record['notebooks']} notebooks, "
        f"exit status {record['exit_status']}; wrote {relative(FIRST_LOOK_FILE)}"
    )
    return 0 if record["exit_status"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
