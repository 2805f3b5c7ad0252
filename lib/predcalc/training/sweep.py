"""Mass training: ``predcalc sweep CONFIG`` runs notebooks x parameter grid x seeds.

A config (YAML or JSON)::

    name: lr_units                 # folder under reports/sweeps/
    notebooks: [01_fnn]            # names (or name prefixes) in notebooks/, or paths
    grid:                          # every combination is one run (notebook parameters)
      learning_rate: [0.001, 0.003]
      epochs: [20]
    seeds: [0, 1, 2]               # injected as seeds=[s] (or seed=s) per run
    workers: 2                     # optional; the command line's --workers wins

Each run is executed by papermill in its own kernel into
``reports/sweeps/<name>/<notebook>__<hash of its parameters>/`` (the executed notebook, its
``metrics.json`` and figures, and ``run.json`` with the parameters and the error if any),
so ``predcalc report`` (which reads ``reports/runs/``) is not affected. A run whose folder
already holds ``metrics.json`` and a ``run.json`` without error is skipped: an interrupted
sweep resumes where it stopped, and failed runs are tried again.

Engines: ``process`` (default) runs ``workers`` runs at a time in local worker processes
(``concurrent.futures.ProcessPoolExecutor``); ``dask`` submits the same function to a
``dask.distributed`` cluster (a local one, or ``--scheduler tcp://host:8786``), which needs
the optional ``dask`` and ``distributed`` packages on every machine.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime
import hashlib
import itertools
import json
import signal
import time
from pathlib import Path

import papermill
import yaml
from tqdm.auto import tqdm

from predcalc import paths
from predcalc.errors import one_line
from predcalc.paths import NOTEBOOKS, ROOT, relative, write_if_changed, write_json_if_changed
from predcalc.quiet import silenced_stderr
from predcalc.training.runner import (
    RUN_INFO,
    Interrupted,
    as_completed_interruptibly,
    end_with_parent,
    kernel_environment,
    kill_tree,
    main_thread_signals,
    name_relative,
)

SWEEPS = ROOT / "reports" / "sweeps"
ENGINES = ("process", "dask")
SUMMARY = "sweep.json"


class SweepConfigError(ValueError):
    """A sweep config that cannot be read or does not follow the schema (one line, naming the file)."""


CONFIG_KEYS = ("name", "notebooks", "grid", "seeds", "workers")


def is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_keys(config, keys, kind: str, fail) -> None:
    """``fail`` unless ``config`` is a mapping whose keys are among ``keys``."""
    if not isinstance(config, dict):
        fail(f"a {kind} config is a mapping ({', '.join(keys)}). Received: {type(config).__name__}")
    unknown = sorted(str(k) for k in set(config) - set(keys))
    if unknown:
        fail(f"unknown {kind} config keys {unknown} (known: {', '.join(keys)})")


def check_config(config, where: str = "the sweep config") -> dict:
    """The schema of a sweep config, checked; returns it with its defaults (``notebooks`` always a list).

    name: a folder name; notebooks: a name or a list of names (a single string is one notebook, not
    its characters); grid: a mapping of parameter -> non-empty list; seeds: null or a list of
    integers; workers: a positive integer.
    """

    def fail(message):
        raise SweepConfigError(f"{where}: {message}")

    check_keys(config, CONFIG_KEYS, "sweep", fail)
    config = dict(config)
    name = config.get("name")
    if name is not None and (
        not isinstance(name, str) or not name.strip() or "/" in name or "\\" in name or name.startswith(".")
    ):
        fail(f"'name' is a folder name (text without '/', not starting with '.'). Received: {name!r}")
    notebooks = config.get("notebooks")
    if isinstance(notebooks, str):
        notebooks = [notebooks]  # one notebook, not its characters
    if not notebooks:
        fail("'notebooks' names at least one notebook (e.g. notebooks: [01_fnn])")
    if not isinstance(notebooks, list) or not all(isinstance(n, str) and n.strip() for n in notebooks):
        fail(f"'notebooks' is a list of notebook names. Received: {notebooks!r}")
    config["notebooks"] = notebooks
    grid = config.get("grid")
    if grid is None:
        grid = {}
    if not isinstance(grid, dict):
        fail(f"'grid' maps parameter names to lists of values. Received: {type(grid).__name__}")
    for key, values in grid.items():
        if not isinstance(key, str) or not key.isidentifier():
            fail(f"grid keys are notebook parameter names. Received: {key!r}")
        if not isinstance(values, list) or not values:
            fail(
                f"grid values are non-empty lists. Received: {key}={values!r}"
                + (f" (write {key}: [{values!r}])" if not isinstance(values, (list, dict)) else "")
            )
    config["grid"] = grid
    seeds = config.get("seeds")
    if seeds is not None and (not isinstance(seeds, list) or not seeds or not all(is_int(x) for x in seeds)):
        fail(
            f"'seeds' is a non-empty list of integers. Received: {seeds!r}"
            + (f" (write seeds: [{seeds}])" if is_int(seeds) else "")
        )
    config["seeds"] = seeds
    if "workers" in config and not (is_int(config["workers"]) and config["workers"] >= 1):
        fail(f"'workers' is a positive integer. Received: {config['workers']!r}")
    return config


def read_config_file(path, kind: str = "sweep", error=SweepConfigError):
    """The mapping in a ``.yaml``/``.yml`` or ``.json`` config file (unchecked); errors are one line
    (``error``), naming the file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no {kind} config at {path}")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read it ({type(exc).__name__})") from None
    if path.suffix in (".yaml", ".yml"):
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or type(exc).__name__
            raise error(f"{path}: not valid YAML{where}: {problem}") from None
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise error(f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    raise error(f"{path}: a {kind} config is a .yaml, .yml or .json file")


def load_config(path) -> dict:
    """Reads and checks a sweep config (``.yaml``/``.yml`` or ``.json``); errors are one line."""
    path = Path(path)
    config = check_config(read_config_file(path), str(path))
    config["name"] = config.get("name") or path.stem
    return config


def params_hash(parameters: dict) -> str:
    """A short stable hash of a run's parameters (its folder name)."""
    return hashlib.sha1(json.dumps(parameters, sort_keys=True).encode()).hexdigest()[:10]


@dataclasses.dataclass
class Job:
    notebook: str  # path
    parameters: dict
    output_dir: str

    @property
    def name(self) -> str:
        return Path(self.output_dir).name


@dataclasses.dataclass
class Outcome:
    name: str
    parameters: dict
    seconds: float
    error: str | None = None
    skipped: bool = False


def _resolve(notebook: str, notebooks_dir: Path) -> Path:
    path = Path(notebook)
    if path.suffix == ".ipynb" and path.is_file():
        return path.resolve()
    matches = sorted(
        p for p in Path(notebooks_dir).glob("*.ipynb") if p.stem == notebook or p.stem.startswith(notebook)
    )
    if not matches:
        raise ValueError(f"no notebook matches {notebook!r} in {notebooks_dir}")
    return matches[0].resolve()


def expand(config: dict, root: Path = SWEEPS, notebooks_dir: Path = NOTEBOOKS) -> list[Job]:
    """Every (notebook, grid point, seed) of a config as a job with its output folder.

    Grid parameters must be declared in the notebook's ``parameters`` cell (a typo fails
    here, not after hours of training).
    """

    grid = config.get("grid", {})
    keys = sorted(grid)
    jobs = []
    for notebook in config["notebooks"]:
        path = _resolve(notebook, notebooks_dir)
        declared = set(papermill.inspect_notebook(str(path)))
        missing = [k for k in keys if k not in declared]
        if missing:
            raise ValueError(
                f"{path.name} does not declare the grid parameters {missing} (it declares {sorted(declared)})"
            )
        seeds = config.get("seeds")
        if seeds and not ({"seeds", "seed"} & declared):
            raise ValueError(f"{path.name} declares neither 'seeds' nor 'seed'; remove 'seeds' from the config")
        for values in itertools.product(*(grid[k] for k in keys)):
            for seed in seeds or [None]:
                parameters = dict(zip(keys, values))
                if seed is not None:
                    parameters.update({"seeds": [seed]} if "seeds" in declared else {"seed": seed})
                folder = Path(root) / config["name"] / f"{path.stem}__{params_hash(parameters)}"
                if "output_dir" in declared:
                    parameters["output_dir"] = str(folder)
                jobs.append(Job(str(path), parameters, str(folder)))
    return jobs


def is_finished(output_dir) -> bool:
    """A run is done when its folder has metrics.json and a run.json without error."""
    folder = Path(output_dir)
    info = folder / RUN_INFO
    if not (folder / "metrics.json").is_file() or not info.is_file():
        return False
    try:
        return json.loads(info.read_text()).get("error") is None
    except json.JSONDecodeError:
        return False


def run_job(job: Job) -> Outcome:
    """Executes one job with papermill (in this process's environment) and writes run.json."""

    kernel_environment()
    folder = Path(job.output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    notebook = Path(job.notebook)
    start = time.perf_counter()
    error = None
    # The kernel inherits this worker's stderr: its TensorFlow and CUDA stub lines go to a log file
    # (build/logs/sweeps/<sweep>/<run>.log), not to the terminal.
    log = paths.LOGS / "sweeps" / folder.parent.name / f"{folder.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    with silenced_stderr(to=log):
        try:
            papermill.execute_notebook(
                str(notebook),
                str(folder / notebook.name),
                parameters=job.parameters,
                cwd=str(notebook.parent),
                kernel_name="python3",
                progress_bar=False,
                log_output=False,
            )
            if not (folder / "metrics.json").is_file():
                error = "the notebook ran but wrote no metrics.json into its output_dir"
        except Exception as exc:  # noqa: BLE001  papermill and nbclient raise their own classes; the sweep goes on
            error = one_line(exc, 500, last=True)
    seconds = time.perf_counter() - start
    # The kernel ran in notebooks/, so it was given the absolute folder; what is kept names it
    # relative to the repository (no machine path in a committed file) when it lies inside it.
    if relative(folder) != str(folder):
        name_relative(folder, str(folder), folder)
    parameters = portable({"parameters": job.parameters})["parameters"]
    write_json_if_changed(
        folder / RUN_INFO,
        {
            "notebook": notebook.stem,
            "parameters": parameters,
            "seconds": round(seconds, 1),
            "error": error,
            "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        },
    )
    return Outcome(job.name, job.parameters, seconds, error)


def _worker_start() -> None:
    """Each worker ends with the sweep (see :func:`predcalc.training.runner.end_with_parent`)."""
    end_with_parent()


def _dask_client(workers: int, scheduler: str | None):
    try:  # dask is optional (--engine dask), not in requirements.txt
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise RuntimeError(
            "--engine dask needs the optional packages dask and distributed: pip install dask distributed"
        ) from None
    if scheduler:
        return Client(scheduler)
    return Client(
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0"
        )
    )


def run(
    config: dict,
    workers: int | None = None,
    engine: str = "process",
    root: Path = SWEEPS,
    notebooks_dir: Path = NOTEBOOKS,
    scheduler: str | None = None,
    progress: bool = True,
) -> list[Outcome]:
    """Runs every unfinished job of a sweep; returns one outcome per job (finished ones skipped)."""

    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}. Received: engine={engine!r}")
    config = check_config(config)
    config["name"] = config.get("name") or "sweep"
    workers = workers or int(config.get("workers", 1))
    if workers < 1:
        raise ValueError(f"workers must be at least 1. Received: workers={workers}")
    kernel_environment()
    jobs = expand(config, root, notebooks_dir)
    outcomes = [Outcome(j.name, j.parameters, 0.0, skipped=True) for j in jobs if is_finished(j.output_dir)]
    todo = [j for j in jobs if not is_finished(j.output_dir)]
    with tqdm(total=len(todo), desc=f"sweep {config['name']}", unit="run", disable=not progress) as bar:
        if todo and engine == "dask":
            with _dask_client(workers, scheduler) as client:
                from dask.distributed import as_completed

                for future in as_completed(client.map(run_job, todo, pure=False)):
                    outcomes.append(future.result())
                    bar.update()
        elif todo:
            previous = main_thread_signals()
            pool = concurrent.futures.ProcessPoolExecutor(max_workers=workers, initializer=_worker_start)
            try:
                for future in as_completed_interruptibly([pool.submit(run_job, j) for j in todo]):
                    outcomes.append(future.result())
                    bar.update()
            except (KeyboardInterrupt, concurrent.futures.process.BrokenProcessPool):
                # Ctrl-C or SIGTERM: end every worker and its kernel; the finished runs stay (and are skipped
                # when the sweep is run again)
                for process in list((pool._processes or {}).values()):
                    kill_tree(process.pid, timeout=5)
                pool.shutdown(wait=False, cancel_futures=True)
                bar.close()
                raise Interrupted(outcomes) from None
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
                if previous is not None:
                    signal.signal(signal.SIGTERM, previous)
    outcomes.sort(key=lambda o: o.name)
    summary = Path(root) / config["name"] / SUMMARY
    summary.parent.mkdir(parents=True, exist_ok=True)
    write_if_changed(
        summary,
        json.dumps(
            {
                "name": config["name"],
                "engine": engine,
                "workers": workers,
                "runs": [portable(dataclasses.asdict(o)) for o in outcomes],
            },
            indent=1,
        ),
    )
    return outcomes


def portable(outcome: dict) -> dict:
    """An outcome as sweep.json keeps it: its output_dir relative to the repository when inside it."""
    parameters = outcome.get("parameters") or {}
    if "output_dir" in parameters:
        outcome = {**outcome, "parameters": {**parameters, "output_dir": relative(parameters["output_dir"])}}
    return outcome


def collect(name: str, root: Path = SWEEPS) -> list[dict]:
    """The finished runs of a sweep: ``{"run", "parameters", "metrics"}`` (metrics.json as stored)."""
    records = []
    for folder in sorted((Path(root) / name).glob("*__*")):
        if is_finished(folder):
            info = json.loads((folder / RUN_INFO).read_text())
            records.append(
                {
                    "run": folder.name,
                    "parameters": info.get("parameters", {}),
                    "metrics": json.loads((folder / "metrics.json").read_text()),
                }
            )
    return records
