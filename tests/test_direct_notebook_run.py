"""A notebook run directly, as papermill's and nbval's users run it (issue 51): from the repository
root, with no environment of the project's own, it leaves ``git status`` as it found it and prints
no TensorFlow C++ line. Its default ``output_dir`` is read from the repository root into the
git-ignored ``build/notebooks/NAME`` (not the working directory), and its setup cell loads TensorFlow
through :func:`predcalc.quiet.quiet_tensorflow` before anything else imports it."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from predcalc.paths import NOTEBOOK_OUTPUTS, NOTEBOOKS, ROOT, relative

CHEAPEST = "00_backprop_by_hand"  # about 10 s on two cores, no training: the cheapest notebook
# What TensorFlow writes from C++ at start-up (the CUDA stub, cuInit, oneDNN, absl, the CPU
# feature guard), and the form of any C++ log line: "I0000 00:00:1796164481.870300  5774 port.cc:153]".
CPP_NEEDLES = ("cuinit", "cuda", "onednn", "absl::initializelog", "cpu_feature_guard", "rebuild tensorflow")
CPP_LINE = re.compile(r"\b[IWEF]\d{4} [\d:.]+\s+\d+ [\w.]+:\d+\]")
QUIET_FIRST = "from predcalc.quiet import quiet_tensorflow\n\nquiet_tensorflow()"


def _cells(path: Path) -> tuple[str, str]:
    """A notebook's parameters cell and the code cell after it (its setup), as text."""
    cells = json.loads(path.read_text())["cells"]
    index = next(i for i, c in enumerate(cells) if "parameters" in c["metadata"].get("tags", []))
    setup = next(c for c in cells[index + 1 :] if c["cell_type"] == "code")
    return "".join(cells[index]["source"]), "".join(setup["source"])


def _git(*arguments: str) -> str:
    """git's output; exit status 1 (check-ignore: none of them ignored) is an answer, not an error."""
    run = subprocess.run(["git", "--no-optional-locks", *arguments], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode in (0, 1), run.stderr
    return run.stdout


def test_each_notebook_writes_into_a_git_ignored_folder_and_loads_tensorflow_quietly_first():
    defaults, wrong = {}, []
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        parameters, setup = _cells(path)
        match = re.search(r'^output_dir = "([^"]+)"', parameters, re.M)
        if not match or (ROOT / match.group(1)).parent != NOTEBOOK_OUTPUTS:
            wrong.append(f"{path.name}: output_dir not {relative(NOTEBOOK_OUTPUTS)}/NAME")
        else:
            defaults[path.name] = match.group(1)
        if not setup.startswith(QUIET_FIRST):
            wrong.append(f"{path.name}: its setup cell does not start with quiet_tensorflow()")
        sources = "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"])
        if re.search(r"Path\(output_dir\)(?!\.name)", sources):
            wrong.append(f"{path.name}: Path(output_dir) reads the default from the working directory")
    ignored = set(_git("check-ignore", *defaults.values()).splitlines())
    wrong += [f"{name}: {folder} is not git-ignored" for name, folder in defaults.items() if folder not in ignored]
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow
def test_papermill_from_the_root_leaves_git_status_clean_and_prints_no_tensorflow_line(tmp_path):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("TF_", "PREDCALC_"))}  # a user's shell
    environment["PATH"] = str(Path(sys.executable).parent) + os.pathsep + environment.get("PATH", "")
    before = set(_git("status", "--porcelain", "--untracked-files=all").splitlines())
    strays = {p for p in (ROOT / "outputs", NOTEBOOKS / "outputs") if p.exists()}
    output = tmp_path / "out.ipynb"
    run = subprocess.run(
        [sys.executable, "-m", "papermill", f"notebooks/{CHEAPEST}.ipynb", str(output)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    new = set(_git("status", "--porcelain", "--untracked-files=all").splitlines()) - before
    assert not new, f"the run left files git sees: {sorted(new)}"
    assert (NOTEBOOK_OUTPUTS / CHEAPEST).is_dir()  # the default output_dir, from the root
    assert {p for p in (ROOT / "outputs", NOTEBOOKS / "outputs") if p.exists()} == strays
    executed = nbformat.read(output, as_version=4)
    streams = [o.get("text", "") for c in executed.cells for o in c.get("outputs", [])]
    for where, text in (("papermill's stderr", run.stderr + run.stdout), ("the notebook's outputs", "".join(streams))):
        lines = [line for line in text.replace("\r", "\n").splitlines() if line.strip()]
        cpp = [line for line in lines if CPP_LINE.search(line) or any(n in line.lower() for n in CPP_NEEDLES)]
        assert not cpp, f"TensorFlow's C++ lines in {where}:\n" + "\n".join(cpp[:10])
