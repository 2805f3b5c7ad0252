import json

import nbformat
import pytest

from predcalc import cli, cli_commands
from predcalc.training import sweep

TINY = (
    "import json, pathlib\n"
    "if a == 3:\n    raise ValueError('a three')\n"
    "pathlib.Path(output_dir).mkdir(parents=True, exist_ok=True)\n"
    "pathlib.Path(output_dir, 'metrics.json').write_text(json.dumps({'models': {}, 'value': a * 10 + seeds[0]}))"
)


def _notebook(path, body=TINY, parameters='a = 1\nseeds = [0]\noutput_dir = "out"'):
    """A notebook of a parameters cell and one ``body`` cell, written to ``path``."""
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell(parameters)
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(body)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


@pytest.fixture
def setup(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    _notebook(notebooks / "90_tiny.ipynb")
    config = {"name": "tiny", "notebooks": ["90_tiny"], "grid": {"a": [1, 3]}, "seeds": [0, 1]}
    return tmp_path, notebooks, config


def test_config_errors(tmp_path, setup):
    _, notebooks, config = setup
    with pytest.raises(FileNotFoundError, match="no sweep config"):
        sweep.load_config(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("name: x\nnotebooks: [a]\ngird: {}\n")
    with pytest.raises(ValueError, match="unknown sweep config keys \\['gird'\\]"):
        sweep.load_config(tmp_path / "bad.yaml")
    with pytest.raises(ValueError, match="does not declare the grid parameters \\['lr'\\]"):
        sweep.expand({**config, "grid": {"lr": [1]}}, tmp_path / "sweeps", notebooks)
    with pytest.raises(ValueError, match="engine='ray'"):
        sweep.run(config, engine="ray", root=tmp_path / "sweeps", notebooks_dir=notebooks)


@pytest.mark.slow
def test_sweep_runs_resumes_and_reports_failures(setup, capsys):
    tmp_path, notebooks, config = setup
    (tmp_path / "tiny.yaml").write_text("name: tiny\nnotebooks: [90_tiny]\ngrid:\n  a: [1, 3]\nseeds: [0, 1]\n")
    assert sweep.load_config(tmp_path / "tiny.yaml") == {**config, "name": "tiny"}
    root = tmp_path / "sweeps"
    jobs = sweep.expand(config, root, notebooks)
    assert [j.parameters["seeds"] for j in jobs] == [[0], [1], [0], [1]]
    assert len({j.output_dir for j in jobs}) == 4 and all("90_tiny__" in j.name for j in jobs)

    outcomes = sweep.run(config, workers=2, root=root, notebooks_dir=notebooks, progress=False)
    failed = sorted(o.parameters["seeds"][0] for o in outcomes if o.error)
    assert failed == [0, 1] and all("a three" in o.error for o in outcomes if o.error)
    values = sorted(r["metrics"]["value"] for r in sweep.collect("tiny", root))
    assert values == [10, 11]
    summary = json.loads((root / "tiny" / "sweep.json").read_text())
    assert len(summary["runs"]) == 4

    again = sweep.run(config, workers=2, root=root, notebooks_dir=notebooks, progress=False)
    assert sorted(o.skipped for o in again) == [False, False, True, True]  # finished runs skipped
    assert all(o.error for o in again if not o.skipped)  # failed runs are tried again


def test_cli_parses_sweep_and_dask_missing_is_clear(monkeypatch):
    args = cli.parser().parse_args(["sweep", "grid.yaml", "--workers", "3", "--engine", "dask"])
    assert (args.config, args.workers, args.engine, args.handler) == (
        "grid.yaml",
        3,
        "dask",
        cli_commands.sweep_command,
    )
    import builtins

    real_import = builtins.__import__

    def no_dask(name, *rest, **kwargs):
        if name.startswith("dask"):
            raise ImportError(name)
        return real_import(name, *rest, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    with pytest.raises(RuntimeError, match="pip install dask distributed"):
        sweep._dask_client(1, None)


@pytest.mark.parametrize(
    "text, message",
    [
        ("name: x\nnotebooks: [a\n", "not valid YAML at line 3"),
        ("- a\n- b\n", "a sweep config is a mapping"),
        ("notebooks: []\n", "'notebooks' names at least one notebook"),
        ("notebooks: [1, 2]\n", "'notebooks' is a list of notebook names"),
        ("notebooks: [a]\ngrid: [1, 2]\n", "'grid' maps parameter names"),
        (
            "notebooks: [a]\ngrid:\n  epochs: 20\n",
            "grid values are non-empty lists. Received: epochs=20 \\(write epochs: \\[20\\]\\)",
        ),
        (
            "notebooks: [a]\nseeds: 3\n",
            "'seeds' is a non-empty list of integers. Received: 3 \\(write seeds: \\[3\\]\\)",
        ),
        ("notebooks: [a]\nseeds: [0, x]\n", "'seeds' is a non-empty list of integers"),
        ("notebooks: [a]\nworkers: two\n", "'workers' is a positive integer"),
        ("notebooks: [a]\nname: ../up\n", "'name' is a folder name"),
    ],
)
def test_malformed_configs_are_one_line_errors(tmp_path, capsys, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(sweep.SweepConfigError, match=message):
        sweep.load_config(path)
    assert cli.main(["sweep", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("predcalc sweep: error: ") and "Traceback" not in err


def test_a_single_notebook_string_is_one_notebook_not_its_characters(tmp_path):
    path = tmp_path / "one.yaml"
    path.write_text('notebooks: "01"\n')
    assert sweep.load_config(path)["notebooks"] == ["01"]
    (tmp_path / "bad.json").write_text('{"notebooks": ["a"],}')
    with pytest.raises(sweep.SweepConfigError, match="not valid JSON at line 1"):
        sweep.load_config(tmp_path / "bad.json")


@pytest.mark.slow
def test_a_killed_sweep_ends_its_workers_and_their_kernels(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    import psutil

    sleep = (
        "import pathlib, time\npathlib.Path(output_dir).mkdir(parents=True, exist_ok=True)\n"
        "pathlib.Path(output_dir, 'started').write_text('')\ntime.sleep(600)"
    )
    _notebook(tmp_path / "91_sleep.ipynb", sleep, parameters='a = 1\noutput_dir = "out"')
    (tmp_path / "s.json").write_text(
        json.dumps({"name": "s", "notebooks": [str(tmp_path / "91_sleep.ipynb")], "grid": {"a": [1, 2]}})
    )
    root = tmp_path / "sweeps"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "predcalc.cli",
            "sweep",
            str(tmp_path / "s.json"),
            "--workers",
            "2",
            "--output",
            str(root),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 180
    while len(list(root.glob("s/*/started"))) < 2:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.2)
    family = psutil.Process(process.pid).children(recursive=True)
    assert len(family) >= 4  # two workers, each with a kernel
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, (out, err)
    assert "Traceback" not in err and "interrupted; workers stopped" in err
    time.sleep(0.5)
    assert not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.slow
def test_a_run_inside_the_repository_keeps_no_machine_path(setup, monkeypatch):
    from predcalc import paths

    tmp_path, notebooks, config = setup
    monkeypatch.setattr(paths, "ROOT", tmp_path)  # the sweep folder now lies inside "the repository"
    (job,) = sweep.expand({**config, "grid": {"a": [1]}, "seeds": [0]}, tmp_path / "reports" / "sweeps", notebooks)
    assert sweep.run_job(job).error is None
    folder = tmp_path / "reports" / "sweeps" / "tiny" / job.name
    info = json.loads((folder / "run.json").read_text())
    assert info["parameters"]["output_dir"] == f"reports/sweeps/tiny/{job.name}"
    for path in folder.iterdir():
        assert str(tmp_path) not in path.read_text(), path.name
    outcome = {"name": job.name, "parameters": {"a": 1, "output_dir": str(folder)}}
    assert sweep.portable(outcome)["parameters"]["output_dir"] == f"reports/sweeps/tiny/{job.name}"


@pytest.mark.slow
def test_the_kernels_stderr_goes_to_a_log_not_the_terminal(setup, monkeypatch, capfd):
    from predcalc import paths

    tmp_path, notebooks, config = setup
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    nb = nbformat.read(notebooks / "90_tiny.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import os\nos.write(2, b'C-level noise\\n')"))
    nbformat.write(nb, notebooks / "90_tiny.ipynb")
    (job,) = sweep.expand({**config, "grid": {"a": [1]}, "seeds": [0]}, tmp_path / "sweeps", notebooks)
    assert sweep.run_job(job).error is None
    assert "C-level noise" not in capfd.readouterr().err
    assert "C-level noise" in (tmp_path / "logs" / "sweeps" / "tiny" / f"{job.name}.log").read_text()


@pytest.mark.slow
def test_the_dask_engine_runs_jobs_on_a_real_local_cluster(tmp_path, capsys):
    import os

    pid = (  # the kernel's parent: the Dask worker that ran the job
        "import json, os, pathlib\npathlib.Path(output_dir).mkdir(parents=True, exist_ok=True)\n"
        "pathlib.Path(output_dir, 'metrics.json').write_text(json.dumps({'models': {}, 'value': a,\n"
        "    'worker_pid': os.getppid()}))"
    )
    _notebook(tmp_path / "92_pid.ipynb", pid, parameters='a = 1\noutput_dir = "out"')
    (tmp_path / "d.yaml").write_text(f"name: d\nnotebooks: ['{tmp_path / '92_pid.ipynb'}']\ngrid:\n  a: [1, 2]\n")
    root = tmp_path / "sweeps"
    assert (
        cli.main(["sweep", str(tmp_path / "d.yaml"), "--engine", "dask", "--workers", "2", "--output", str(root)]) == 0
    )
    assert "2 of 2 runs finished" in capsys.readouterr().out
    records = sweep.collect("d", root)
    assert sorted(r["metrics"]["value"] for r in records) == [1, 2]
    assert all(r["metrics"]["worker_pid"] != os.getpid() for r in records)  # not this process: the cluster's
    assert json.loads((root / "d" / "sweep.json").read_text())["engine"] == "dask"
