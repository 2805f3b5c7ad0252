"""Batch execution of the notebooks with papermill (``predcalc run``).

Each notebook runs in its own kernel into ``reports/runs/<name>/``: the executed notebook,
its ``metrics.json``, figures and exported models. A notebook that fails does not stop the
others; the summary names it and the run exits non-zero.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime
import json
import os
import sys
import time
from pathlib import Path

from predcalc.paths import NOTEBOOKS, ROOT, RUNS, relative

# Parameters injected by each profile (only those a notebook declares). A notebook can
# override them in its metadata: {"predcalc": {"profiles": {"full": {...}}}}.
PROFILES = {
    "quick": {},
    "full": {"seeds": [0, 1, 2, 3, 4], "epochs": 200, "patience": 20},
}

RUN_INFO = "run.json"  # written beside each executed notebook: profile, time, error

KERNEL_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": "0", "PYTHONWARNINGS": "ignore"}


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
    notebooks += [directory / f"{alias}.ipynb" for alias, (template, _) in ALIASES.items()
                  if (directory / f"{template}.ipynb").is_file()]
    notebooks.sort()
    if only:
        wanted = [w.removesuffix(".ipynb") for w in only]
        notebooks = [p for p in notebooks if any(p.stem == w or p.stem.startswith(w) for w in wanted)]
        if not notebooks:
            raise ValueError(f"no notebook matches {', '.join(only)} in {directory}")
    return notebooks


def source_of(notebook: Path) -> tuple[Path, dict]:
    """The file a discovered notebook runs and the parameters its alias adds (none for a plain one)."""
    if notebook.stem in ALIASES and not notebook.is_file():
        template, parameters = ALIASES[notebook.stem]
        return notebook.with_name(f"{template}.ipynb"), dict(parameters)
    return notebook, {}


def parameters_for(notebook: Path, profile: str, output_dir: Path) -> dict:
    """The profile's parameters that the notebook declares, plus its output folder."""
    import nbformat
    import papermill

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


def execute(notebook: Path, profile: str, runs: Path = RUNS, progress_bar: bool = False,
            overrides: dict | None = None) -> Outcome:
    import papermill

    output_dir = runs / notebook.stem
    output_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    source, alias_parameters = source_of(notebook)
    parameters = {**parameters_for(source, profile, output_dir), **alias_parameters, **(overrides or {})}
    try:
        papermill.execute_notebook(str(source), str(output_dir / notebook.name), parameters=parameters,
                                   cwd=str(source.parent), kernel_name="python3",
                                   progress_bar=progress_bar, log_output=False)
        outcome = Outcome(notebook.stem, time.perf_counter() - start)
    except Exception as error:  # a failed notebook is reported; the batch goes on
        lines = [line for line in str(error).strip().splitlines() if line.strip()]
        reason = lines[-1] if lines else type(error).__name__
        outcome = Outcome(notebook.stem, time.perf_counter() - start, f"{type(error).__name__}: {reason[:500]}")
    label = profile if not overrides else f"{profile} with {', '.join(f'{k}={v}' for k, v in overrides.items())}"
    (output_dir / RUN_INFO).write_text(json.dumps({
        "profile": label, "overrides": overrides or {}, "seconds": round(outcome.seconds, 1), "error": outcome.error,
        "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "injected": {k: relative(v) if k == "output_dir" else v for k, v in parameters.items()}}, indent=1))
    return outcome


def run(only=None, profile: str = "quick", workers: int = 1, runs: Path = RUNS,
        notebooks_dir: Path = NOTEBOOKS, overrides: dict | None = None) -> list[Outcome]:
    """Execute the notebooks, ``workers`` at a time, with a progress bar.

    ``overrides`` (``predcalc run --set KEY=JSON``) replace parameters on top of the profile,
    e.g. fewer epochs to fit a time budget; ``run.json`` and the report's profile label name them.
    """
    from tqdm import tqdm

    if workers < 1:
        raise ValueError(f"workers must be at least 1. Received: workers={workers}")
    kernel_environment()
    notebooks = discover(only, notebooks_dir)
    outcomes = []
    with tqdm(total=len(notebooks), desc=f"notebooks ({profile})", unit="nb") as bar:
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(execute, nb, profile, runs, False, overrides): nb for nb in notebooks}
            for future in concurrent.futures.as_completed(futures):
                outcome = future.result()
                outcomes.append(outcome)
                bar.set_postfix_str(f"{outcome.notebook} {'ok' if outcome.error is None else 'FAILED'}")
                bar.update()
    return sorted(outcomes, key=lambda o: o.notebook)
