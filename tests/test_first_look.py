"""The first look's time: measured on a fresh clone and stored (the README's numbers on it are claims)."""

import json
import subprocess
from pathlib import Path

from predcalc.paths import NOTEBOOKS, ROOT
from predcalc.training import first_look as measuring
from predcalc.training.runner import discover


def test_the_stored_first_look_ran_every_notebook_within_ten_minutes_on_an_idle_machine():
    record = json.loads(measuring.FIRST_LOOK_FILE.read_text()) if measuring.FIRST_LOOK_FILE.is_file() else None
    assert record is not None, "no reports/first_look.json: run `make first-look` on an idle machine"
    assert record["profile"] == "quick" and record["command"] == "make report"
    assert record["exit_status"] == 0 and not record["failed"] and record["page_written"]
    # one run folder per notebook of the measured commit, and one more per alias (03_lstm and 04_gru
    # run one notebook); a notebook added since waits for the next `make first-look`, and is named here
    listed = subprocess.run(
        ["git", "ls-tree", "--name-only", record["commit"], "notebooks/"], cwd=ROOT, capture_output=True, text=True
    )
    then = {Path(name).stem for name in listed.stdout.split()} if listed.returncode == 0 else None
    now = discover(None, NOTEBOOKS)
    newer = [p for p in now if then is not None and Path(p).stem not in then and Path(p).is_file()]  # not an alias
    assert record["notebooks"] >= len(now) - len(newer), f"the first look missed a notebook; newer: {newer}"
    assert record["seconds"] <= measuring.LIMIT_SECONDS, json.dumps(record)
    assert record["load_at_start"] < record["cores"], "measured on a busy machine"
    # the measured commit is in this repository's history
    found = subprocess.run(["git", "cat-file", "-e", f"{record['commit']}^{{commit}}"], cwd=ROOT, capture_output=True)
    assert found.returncode == 0 or not (ROOT / ".git").exists()


def test_the_longest_notebooks_start_first(tmp_path):
    from predcalc.training.runner import longest_first

    paths = [tmp_path / f"{name}.ipynb" for name in ("00_a", "01_b", "02_c", "03_d")]
    seconds = {"01_b": 5.0, "03_d": 50.0, "00_a": 10.0}
    assert [p.stem for p in longest_first(paths, seconds)] == ["03_d", "00_a", "01_b", "02_c"]
    assert longest_first(paths, {}) == paths  # nothing stored: name order


def test_notebook_seconds_read_the_stored_first_look(tmp_path):
    assert measuring.notebook_seconds(tmp_path / "missing.json") == {}
    path = tmp_path / "first_look.json"
    path.write_text(json.dumps({"notebook_seconds": {"40_calculator": 167.6, "00_a": None}}))
    assert measuring.notebook_seconds(path) == {"40_calculator": 167.6}
