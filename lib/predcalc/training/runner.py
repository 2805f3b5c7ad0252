"""Batch execution of the notebooks with papermill (``predcalc run``).

Each notebook runs in its own process and kernel. A quick run writes into the git-ignored
``build/runs/<name>/``; only a full run (``--profile full``) writes into ``reports/runs/<name>/``,
the committed results. Each notebook first runs into a hidden temporary folder beside its
destination, which replaces the destination by a rename only once the notebook has finished:
an interrupted or failed run never leaves a half-written result where a complete one was. A
failed notebook's outputs go to ``build/failed/<name>/`` and its log to ``build/logs/<name>.log``;
the batch goes on and the summary names it.

The kernels' and runtimes' own output (IPKernel warnings, TensorFlow and CUDA stub lines) goes
to ``build/logs/<name>.log``, not to the terminal, and C-level output is kept out of the
executed notebooks. Ctrl-C (or SIGTERM) stops every kernel, keeps the notebooks that finished,
and raises :class:`Interrupted`.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import dataclasses
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat
import papermill
import psutil
from tqdm import tqdm

from predcalc import paths, quiet
from predcalc.errors import one_line
from predcalc.paths import (
    CHECKPOINTS_VARIABLE,
    FAILED,
    LOGS,
    NOTEBOOKS,
    ROOT,
    RUNS,
    compact_notebook_images,
    keep_unchanged,
    relative,
    runs_for,
)
from predcalc.training.first_look import notebook_seconds

# Parameters injected by each profile (only those a notebook declares). A notebook can
# override them in its metadata: {"predcalc": {"profiles": {"full": {...}}}}.
PROFILES = {
    "quick": {},
    "full": {"seeds": [0, 1, 2, 3, 4], "epochs": 200, "patience": 20},
    # The smallest run that still executes every cell: what `make test-notebooks` (nbval) injects.
    # Only sizes that no checked cell (tag nbval-check-output) prints (not models, data or test-set sizes).
    # Exports: float32 LiteRT only (with SavedModel and .keras), checked against Keras on the first 10
    # expressions of each test set (all of them took 40 s of 10_mamba's export); tests/test_export.py
    # covers the rest.
    "smoke": {
        "epochs": 1,
        "train_epochs": 1,
        "control_epochs": 1,
        "repeats": 1,
        "ig_steps": 8,
        "n_explained": 20,
        "export_check": 10,
        "export_formats": ["float32"],
    },
}

RUN_INFO = "run.json"
CHECKPOINTS = ".checkpoints"  # runs/.checkpoints/<notebook>/: finished seeds of an unfinished run  # written beside each executed notebook: profile, time, error

KERNEL_ENV = {**quiet.ENVIRONMENT, "PYTHONWARNINGS": "ignore"}

# Arguments of every kernel papermill starts: output written by C code (absl's "All log messages
# before absl::InitializeLog()", CUDA stub lines, the TFLite delegate banner) goes to the kernel's
# own stderr, the notebook's log file, instead of into the cell outputs.
KERNEL_ARGUMENTS = ["--IPKernelApp.capture_fd_output=False"]


def kernel_environment() -> None:
    """Make papermill's ``python`` kernel the one of this interpreter, and quiet TensorFlow."""
    bin_dir = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    for key, value in KERNEL_ENV.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("PYTHONPATH", str(ROOT / "lib"))


# One template notebook serves several runs: run name -> (template, parameters injected).
# The run's outputs go to reports/runs/<run name>/ like any other notebook's.
ALIASES = {
    "03_lstm": ("03_gated_rnn", {"models": ["lstm"]}),
    "04_gru": ("03_gated_rnn", {"models": ["gru"]}),
}


def discover(only=None, directory: Path = NOTEBOOKS) -> list[Path]:
    """The notebooks to run, in name order; ``only`` keeps those whose name starts with one of it.

    A template of :data:`ALIASES` runs under its aliases' names (``notebooks/03_lstm.ipynb``
    stands for ``03_gated_rnn`` with ``models=['lstm']``), not under its own.
    """
    templates = {template for template, _ in ALIASES.values()}
    notebooks = [p for p in directory.glob("*.ipynb") if not p.name.startswith("_") and p.stem not in templates]
    notebooks += [
        directory / f"{alias}.ipynb"
        for alias, (template, _) in ALIASES.items()
        if (directory / f"{template}.ipynb").is_file()
    ]
    notebooks.sort()
    if only:
        wanted = [w.removesuffix(".ipynb") for w in only]
        notebooks = [p for p in notebooks if any(p.stem == w or p.stem.startswith(w) for w in wanted)]
        if not notebooks:
            raise ValueError(f"no notebook matches {', '.join(only)} in {directory}")
    return notebooks


INDEX = "index.json"  # beside the notebooks: their groups and order in the book


def notebook_groups(directory: Path = NOTEBOOKS) -> dict[str, list[str]]:
    """The notebooks' groups, in order, from ``index.json`` beside them (``{"architectures": [...],
    "studies": [...]}``); a notebook :func:`discover` finds that the index lacks is an error."""
    index = directory / INDEX
    if not index.is_file():
        raise FileNotFoundError(f"no {INDEX} in {directory}: it lists each notebook's group")
    groups = {group: list(names) for group, names in json.loads(index.read_text())["groups"].items()}
    listed = [name for names in groups.values() for name in names]
    found = [p.stem for p in discover(directory=directory)]
    missing = [name for name in found if name not in listed]
    if missing:
        raise ValueError(f"{index.name} lists no group for {', '.join(missing)}")
    return {group: [name for name in names if name in found] for group, names in groups.items()}


def source_of(notebook: Path) -> tuple[Path, dict]:
    """The file a discovered notebook runs and the parameters its alias adds (none for a plain one)."""
    if notebook.stem in ALIASES and not notebook.is_file():
        template, parameters = ALIASES[notebook.stem]
        return notebook.with_name(f"{template}.ipynb"), dict(parameters)
    return notebook, {}


def parameters_for(notebook: Path, profile: str, output_dir: Path) -> dict:
    """The profile's parameters that the notebook declares, plus its output folder."""

    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {sorted(PROFILES)}")
    declared = set(papermill.inspect_notebook(str(notebook)))
    metadata = nbformat.read(notebook, as_version=4).metadata.get("predcalc", {})
    wanted = {**PROFILES[profile], **metadata.get("profiles", {}).get(profile, {})}
    values = {k: v for k, v in wanted.items() if k in declared}
    if "output_dir" in declared:
        values["output_dir"] = str(output_dir)
    if "profile" in declared:
        values["profile"] = profile
    return values


@dataclasses.dataclass
class Outcome:
    notebook: str
    seconds: float
    error: str | None = None
    output: Path | None = None  # where its outputs are (the run folder, or build/failed/<name> on failure)


class Interrupted(Exception):
    """A batch stopped by Ctrl-C or SIGTERM: its kernels are stopped; ``outcomes`` are the notebooks
    that had finished (their results kept)."""

    def __init__(self, outcomes: list[Outcome]):
        super().__init__(f"interrupted after {len(outcomes)} notebook{'s' * (len(outcomes) != 1)}")
        self.outcomes = outcomes


def _execute_here(source: str, output_notebook: str, parameters: dict, cwd: str) -> str | None:
    """Run one notebook with papermill in this process; the error in one line, or None."""

    try:
        papermill.execute_notebook(
            source,
            output_notebook,
            parameters=parameters,
            cwd=cwd,
            kernel_name="python3",
            progress_bar=False,
            log_output=False,
            extra_arguments=KERNEL_ARGUMENTS,
        )
    except Exception as error:  # noqa: BLE001  papermill and nbclient raise their own classes; the batch goes on
        return one_line(error, 500, last=True)
    return None


def _replace_text(folder: Path, old: str, new: str) -> None:
    """Name the final folder, not the temporary one, in the text files the notebook wrote."""
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".ipynb", ".md", ".txt", ".csv"):
            try:
                text = path.read_text()
            except (UnicodeDecodeError, OSError):
                continue
            if old in text:
                path.write_text(text.replace(old, new))


def name_relative(folder: Path, written_as: str, final: Path) -> None:
    """In the text files a notebook wrote into ``folder``: the folder its kernel was given
    (``written_as``) becomes ``final`` relative to the repository, and papermill's input_path loses
    the repository's prefix. No machine path is kept in a result. The folder as a path relative
    to the repository (what ``paths.relative`` writes, e.g. an export record's source) becomes the
    final one too."""
    _replace_text(folder, written_as, relative(final))
    if relative(written_as) != written_as:
        _replace_text(folder, relative(written_as) + "/", relative(final) + "/")
    _replace_text(folder, f"{paths.ROOT}{os.sep}", "")


# Files other commands write into a run folder (the edge study's per-seed scores, the digit suite's
# other models): a rerun of the notebook does not write them, so they are carried over, not lost.
WRITTEN_ELSEWHERE = ("export/*/seeds/*/*", "others.json")


def _carry_over(previous: Path, new: Path) -> None:
    """Copy into ``new`` the files of ``previous`` that other commands wrote (``WRITTEN_ELSEWHERE``)
    and the new run did not write again."""
    for pattern in WRITTEN_ELSEWHERE:
        for path in previous.glob(pattern):
            target = new / path.relative_to(previous)
            if path.is_file() and not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)


def _replace_folder(source: Path, destination: Path) -> None:
    """Move ``source`` to ``destination`` by renames: ``destination`` is at every moment either
    the previous complete folder or the new one (a hidden ``.<name>.old`` holds the previous
    one for the instant between the two renames)."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    old = destination.with_name(f".{destination.name}.old")
    if old.exists():
        shutil.rmtree(old)
    if destination.exists():
        destination.rename(old)
    source.rename(destination)
    if old.exists():
        shutil.rmtree(old, ignore_errors=True)


class _Children:
    """The notebook processes of a batch, so that an interrupt can end them and their kernels."""

    def __init__(self):
        self.lock = threading.Lock()
        self.processes: set[subprocess.Popen] = set()
        self.stopping = False

    def start(self, command, log, env: dict | None = None) -> subprocess.Popen:
        with self.lock:
            if self.stopping:
                raise KeyboardInterrupt
            # its own session: the terminal's Ctrl-C reaches this process only, which then ends the tree
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=str(ROOT),
                env=env,
            )
            self.processes.add(process)
            return process

    def done(self, process) -> None:
        with self.lock:
            self.processes.discard(process)

    def stop_all(self, timeout: float = 5.0) -> None:
        with self.lock:
            self.stopping = True
            processes = list(self.processes)
        for process in processes:
            kill_tree(process.pid, timeout)


def kill_tree(pid: int, timeout: float = 5.0) -> None:
    """Terminate a process and every descendant (a kernel papermill started is one), then kill
    what is still alive after ``timeout`` seconds."""

    try:
        parent = psutil.Process(pid)
        family = parent.children(recursive=True) + [parent]
    except psutil.NoSuchProcess:
        return
    for process in family:
        try:
            process.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(family, timeout=timeout)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=timeout)


def execute(
    notebook: Path,
    profile: str,
    runs: Path = RUNS,
    progress_bar: bool = False,
    failed: Path = FAILED,
    logs: Path = LOGS,
    children: _Children | None = None,
    overrides: dict | None = None,
) -> Outcome:
    """Run one notebook into ``runs/<name>/`` through a temporary folder, in a child process.

    Its finished (model, seed) runs are checkpointed in ``runs/.checkpoints/<name>/`` (see
    :func:`predcalc.training.experiment.run_seeds`): a run that was stopped or failed resumes there
    when started again with the same parameters; a run that succeeds deletes them.
    """
    destination = runs / notebook.stem
    checkpoints = runs / CHECKPOINTS / notebook.stem
    runs.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    for stale in runs.glob(f".{notebook.stem}.*.partial"):  # left by a run killed outright (SIGKILL)
        shutil.rmtree(stale, ignore_errors=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{notebook.stem}.", suffix=".partial", dir=runs))
    start = time.perf_counter()
    source, alias_parameters = source_of(notebook)
    parameters = {**parameters_for(source, profile, temporary), **alias_parameters, **(overrides or {})}
    if parameters.get("keep_stored") and destination.is_dir():
        # the notebook keeps the models it does not retrain: it reads their records and keeps their
        # export folders, so it starts from a copy of the stored run
        shutil.copytree(destination, temporary, dirs_exist_ok=True)
    error_file = temporary / ".error"
    command = [
        sys.executable,
        "-m",
        "predcalc.training.runner",
        "--execute",
        str(source),
        str(temporary / notebook.name),
        json.dumps(parameters),
        str(source.parent),
        str(error_file),
    ]
    children = children or _Children()
    try:
        with open(logs / f"{notebook.stem}.log", "w") as log:
            process = children.start(command, log, env={**os.environ, CHECKPOINTS_VARIABLE: str(checkpoints)})
            try:
                code = process.wait()
            finally:
                children.done(process)
        if children.stopping:
            raise KeyboardInterrupt
        error = error_file.read_text() if error_file.is_file() else None
        if error is None and code != 0:
            error = f"the notebook process exited with {code} (see {relative(logs / f'{notebook.stem}.log')})"
        error_file.unlink(missing_ok=True)
        seconds = time.perf_counter() - start
        final = failed / notebook.stem if error else destination
        name_relative(temporary, str(temporary), final)
        if (temporary / notebook.name).is_file():  # its figures as palette PNGs (a third of the bytes)
            compact_notebook_images(temporary / notebook.name)
        label = profile if not overrides else f"{profile} with {', '.join(f'{k}={v}' for k, v in overrides.items())}"
        (temporary / RUN_INFO).write_text(
            json.dumps(
                {
                    "profile": label,
                    "overrides": overrides or {},
                    "seconds": round(seconds, 1),
                    "error": error,
                    "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                    "injected": {k: relative(final) if k == "output_dir" else v for k, v in parameters.items()},
                },
                indent=1,
            )
        )
        if not error:  # a file whose numbers did not change stays as it was (bytes and time)
            if final.is_dir():
                _carry_over(final, temporary)
            keep_unchanged(temporary, final)
        _replace_folder(temporary, final)
        if not error:
            shutil.rmtree(checkpoints, ignore_errors=True)
        return Outcome(notebook.stem, seconds, error, final)
    finally:
        if temporary.exists():
            shutil.rmtree(temporary, ignore_errors=True)


def longest_first(notebooks: list[Path], seconds: dict[str, float]) -> list[Path]:
    """``notebooks`` with those that took longest before (``seconds`` by run name) first, the others
    after them in their own order: the order a pool of workers finishes soonest in (greedy scheduling)."""
    return sorted(notebooks, key=lambda path: -seconds.get(path.stem, 0.0))


def as_completed_interruptibly(futures, poll: float = 0.25, tick=None):
    """Like :func:`concurrent.futures.as_completed`, but the waiting thread wakes every ``poll`` seconds.

    A lock wait with no timeout is interrupted only by a signal delivered to its own thread; the
    kernel may deliver Ctrl-C to any thread of the process (a worker's ``waitpid``), and the main
    thread would then sleep on until a future finished. Waking up lets it run the handler at once
    (and ``tick()``, if given: the progress bar's clock).
    """
    pending = set(futures)
    while pending:
        done, pending = concurrent.futures.wait(pending, timeout=poll, return_when=concurrent.futures.FIRST_COMPLETED)
        if tick is not None:
            tick()
        yield from done


def _every(seconds: float, action):
    """A function that runs ``action`` when at least ``seconds`` have passed since it last did."""
    last = [time.monotonic()]

    def maybe():
        if time.monotonic() - last[0] >= seconds:
            last[0] = time.monotonic()
            action()

    return maybe


def main_thread_signals():
    """SIGTERM is handled like Ctrl-C (the kernels are stopped); returns the previous handler."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, handler)


def run(
    only=None,
    profile: str = "quick",
    workers: int = 1,
    runs: Path | None = None,
    notebooks_dir: Path = NOTEBOOKS,
    failed: Path = FAILED,
    logs: Path = LOGS,
    progress: bool = True,
    report=None,
    overrides: dict | None = None,
) -> list[Outcome]:
    """Execute the notebooks, ``workers`` at a time, under one progress bar.

    ``runs`` defaults to :func:`predcalc.paths.runs_for` (build/runs/ for quick, reports/runs/ for
    full). ``report(outcome, done, total)`` is called as each notebook finishes (the command line
    prints a status line). Raises :class:`Interrupted` on Ctrl-C or SIGTERM, after stopping the
    kernels; the notebooks that finished keep their results. ``overrides`` (``predcalc run --set
    KEY=JSON``) replace parameters on top of the profile (e.g. fewer epochs to fit a time budget);
    ``run.json`` and the report's profile label name them.
    """

    if workers < 1:
        raise ValueError(f"workers must be at least 1. Received: workers={workers}")
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {sorted(PROFILES)}")
    # absolute: the notebook processes run in the repository root, not in this process's folder
    runs = (Path(runs) if runs is not None else runs_for(profile)).resolve()
    failed, logs = Path(failed).resolve(), Path(logs).resolve()
    kernel_environment()
    notebooks = [path.absolute() for path in discover(only, Path(notebooks_dir).resolve())]
    if profile == "quick":  # two workers finish sooner when the longest notebooks start first
        notebooks = longest_first(notebooks, notebook_seconds())
    outcomes: list[Outcome] = []
    children = _Children()
    previous = main_thread_signals()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers)
    bar = tqdm(
        total=len(notebooks),
        desc=f"{profile} run",
        unit="notebook",
        disable=not progress,
        bar_format="{desc}: notebook {n_fmt} of {total_fmt} |{bar}| elapsed {elapsed}, left ~{remaining}{postfix}",
        dynamic_ncols=True,
    )
    try:
        futures = {
            pool.submit(execute, nb, profile, runs, False, failed, logs, children, overrides): nb for nb in notebooks
        }
        bar.set_postfix_str(", ".join(nb.stem for nb in notebooks[:workers]))
        # elapsed keeps counting: each second on a terminal, each minute in a log file (one line a minute)
        clock = _every(1.0 if sys.stderr.isatty() else 60.0, bar.refresh) if progress else None
        for future in as_completed_interruptibly(futures, tick=clock):
            outcome = future.result()
            outcomes.append(outcome)
            bar.update()
            running = [nb.stem for f, nb in futures.items() if f.running()]
            bar.set_postfix_str(", ".join(running))
            if report is not None:
                bar.clear()
                report(outcome, len(outcomes), len(notebooks))
                bar.refresh()
    except KeyboardInterrupt:
        for future in futures if "futures" in locals() else ():
            future.cancel()
        children.stop_all()
        pool.shutdown(wait=True, cancel_futures=True)
        bar.close()
        raise Interrupted(sorted(outcomes, key=lambda o: o.notebook)) from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        bar.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return sorted(outcomes, key=lambda o: o.notebook)


def end_with_parent() -> None:
    """In a child process (a notebook's, a sweep worker): ignore the terminal's Ctrl-C (the parent
    ends its children itself); on SIGTERM stop this process's kernels and exit; and get that SIGTERM
    when the parent dies, even killed outright (Linux: a parent-death signal)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def stop(signum, frame):
        for child in psutil.Process().children(recursive=True):
            kill_tree(child.pid, timeout=3)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
        if os.getppid() == 1:  # the parent already died before the signal was set
            os._exit(1)


def _child_main(argv) -> int:
    source, output_notebook, parameters, cwd, error_file = argv
    end_with_parent()
    error = _execute_here(source, output_notebook, json.loads(parameters), cwd)
    if error is not None:
        Path(error_file).write_text(error)
        return 1
    return 0


if __name__ == "__main__" and len(sys.argv) == 7 and sys.argv[1] == "--execute":
    sys.exit(_child_main(sys.argv[2:]))
