import json

import nbformat
import pytest

from predcalc.report import appendix, families, findings
from predcalc.report import written as written_module
from predcalc.training import runner


def _notebook(path, body, parameters="seeds = [0]\nepochs = 1\noutput_dir = 'x'"):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(parameters, metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(body),
    ]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, path)
    return path


def test_parameters_for_injects_only_what_the_notebook_declares(tmp_path):
    path = _notebook(tmp_path / "01_x.ipynb", "pass", parameters="epochs = 1\noutput_dir = 'x'")
    values = runner.parameters_for(path, "full", tmp_path / "out")
    assert values == {"epochs": 200, "output_dir": str(tmp_path / "out")}
    assert runner.parameters_for(path, "quick", tmp_path / "out") == {"output_dir": str(tmp_path / "out")}
    with pytest.raises(ValueError, match="unknown profile 'huge'"):
        runner.parameters_for(path, "huge", tmp_path)


def test_notebook_metadata_overrides_a_profile(tmp_path):
    path = _notebook(tmp_path / "02_y.ipynb", "pass")
    notebook = nbformat.read(path, as_version=4)
    notebook.metadata["predcalc"] = {"profiles": {"full": {"epochs": 7}}}
    nbformat.write(notebook, path)
    assert runner.parameters_for(path, "full", tmp_path)["epochs"] == 7


@pytest.mark.slow  # starts notebook kernels
def test_a_failing_notebook_does_not_stop_the_others(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    _notebook(notebooks / "01_ok.ipynb", "import pathlib\npathlib.Path(output_dir, 'done').write_text(str(epochs))")
    _notebook(notebooks / "02_bad.ipynb", "raise RuntimeError('deliberate failure')")
    _notebook(notebooks / "03_ok.ipynb", "print(seeds)")
    runs, failed = tmp_path / "runs", tmp_path / "failed"
    (runs / "02_bad").mkdir(parents=True)
    (runs / "02_bad" / "metrics.json").write_text("{}")  # a complete earlier result
    outcomes = runner.run(
        profile="full",
        workers=2,
        runs=runs,
        notebooks_dir=notebooks,
        failed=failed,
        logs=tmp_path / "logs",
        progress=False,
    )
    assert [o.notebook for o in outcomes] == ["01_ok", "02_bad", "03_ok"]
    assert outcomes[0].error is None and outcomes[2].error is None
    assert "deliberate failure" in outcomes[1].error
    assert (runs / "01_ok" / "done").read_text() == "200"
    # the failed notebook is kept to read, away from the complete result it would have replaced
    assert (failed / "02_bad" / "02_bad.ipynb").is_file() and outcomes[1].output == failed / "02_bad"
    assert (runs / "02_bad" / "metrics.json").read_text() == "{}"
    info = json.loads((failed / "02_bad" / "run.json").read_text())
    assert info["profile"] == "full" and "deliberate failure" in info["error"]
    assert sorted(p.name for p in runs.iterdir()) == ["01_ok", "02_bad", "03_ok"]  # no temporary folder left
    injected = json.loads((runs / "01_ok" / "run.json").read_text())["injected"]["output_dir"]
    assert injected.endswith("runs/01_ok")  # the final folder, not the temporary one


def test_a_quick_run_goes_to_the_scratch_folder():
    from predcalc import paths

    assert paths.runs_for("quick") == paths.ROOT / "build" / "runs"
    assert paths.runs_for("full") == paths.RUNS
    assert paths.reports_for("quick") == paths.ROOT / "build"


@pytest.mark.slow
def test_ctrl_c_stops_the_kernels_keeps_what_finished_and_exits_130(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    import psutil

    notebooks, runs = tmp_path / "notebooks", tmp_path / "runs"
    notebooks.mkdir()
    _notebook(notebooks / "01_fast.ipynb", "print('fast')")
    _notebook(
        notebooks / "02_slow.ipynb",
        "import pathlib, time\npathlib.Path(output_dir, 'started').write_text('')\ntime.sleep(600)",
    )
    # a shell that started this test in the background (`cmd &`) makes it ignore SIGINT, and a Python
    # started with SIGINT ignored keeps ignoring it: the child gets the terminal's default back
    process = subprocess.Popen(
        [sys.executable, "-m", "predcalc.cli", "run", "--notebooks", str(notebooks), "--output", str(runs)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 120
    while not list(runs.glob(".02_slow*/started")):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.2)
    family = psutil.Process(process.pid).children(recursive=True)
    assert len(family) >= 2  # the notebook's process and its kernel
    start = time.monotonic()
    process.send_signal(signal.SIGINT)
    try:
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # leave no stray run, notebook or kernel behind
        runner.kill_tree(process.pid, timeout=2)
        raise
    assert process.returncode == 130, (out, err)
    assert time.monotonic() - start < 20
    assert "Traceback" not in err and "Traceback" not in out
    lines = [line for line in err.splitlines() if line.strip() and "notebook" in line and "interrupted" in line]
    assert len(lines) == 1 and "1 finished notebook kept" in lines[0], err
    assert (runs / "01_fast" / "01_fast.ipynb").is_file()  # what finished is kept
    assert sorted(p.name for p in runs.iterdir()) == ["01_fast"]  # nothing half-written
    time.sleep(0.5)
    assert not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def _default_sigint():
    """In a child before exec: SIGINT as a terminal delivers it (Python then raises KeyboardInterrupt)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _record(notebook, models):
    return {
        "notebook": notebook,
        "backend": "tensorflow",
        "parameters": {},
        "data": {"seed": 0, "counts": {"in": 1}},
        "models": models,
    }


def _model(label, mae_in, seeds=2, reference_row=None):
    runs = [
        {
            "seed": s,
            "epochs": 10,
            "metrics": {
                t: {"mae": mae_in * f, "mre": 0.1 * mae_in * f, "accuracy": 0.5, "n": 10}
                for t, f in (("in", 1 + s / 10), ("out", 10), ("long", 20), ("out22", 12), ("long4", 15))
            },
        }
        for s in range(seeds)
    ]
    return {
        "label": label,
        "family": "FNN",
        "reference_row": reference_row,
        "tokenizer": "numeric",
        "params": 100,
        "runs": runs,
        "export": {
            "float32": {
                "bytes": 2048,
                "tf_select": False,
                "max_abs_diff": 1e-6,
                "accuracy_change": {"in": 0.0, "out": 0.0, "long": 0.0},
            }
        },
    }


def test_report_builds_the_findings_page_from_the_runs(tmp_path):
    runs, reports = tmp_path / "runs", tmp_path / "reports"
    (runs / "01_fnn").mkdir(parents=True)
    (runs / "02_rnn").mkdir(parents=True)
    (runs / "01_fnn" / "metrics.json").write_text(
        json.dumps(
            _record(
                "01_fnn",
                {
                    "fnn_baseline": _model("baseline", 0.4),
                    "fnn2": _model("FNN2", 0.2, reference_row="FNN2 (1 x 345 PReLU)"),
                },
            )
        )
    )
    (runs / "02_rnn" / "metrics.json").write_text(json.dumps(_record("02_rnn", {"rnn": _model("RNN", 0.8)})))
    written = appendix.build(runs=runs, reports=reports)
    text = (reports / "findings.md").read_text()
    table = findings.model_table(findings.load_runs(runs), score=True)
    scores = dict(zip(table["model"] + "/" + table["source"], table["score"]))
    assert scores["baseline/01_fnn (notebook defaults, 2 seeds)"] == pytest.approx(1.0, rel=0.01)
    assert scores["FNN2/01_fnn (notebook defaults, 2 seeds)"] == pytest.approx(4.0, rel=0.01)  # half the errors
    assert scores["RNN/02_rnn (notebook defaults, 2 seeds)"] == pytest.approx(0.25, rel=0.01)  # against 01's baseline
    for first, second in (
        ("## Question", "## Answer"),
        ("## Answer", "## Method"),
        ("## Method", "## Results"),
        ("## Results", "## Limitations"),
        ("## Limitations", written_module.MARKER),
        (written_module.MARKER, "# Appendix"),
        ("## The families table", "## The models by name"),
        ("## The models by name", "## The claims"),
        ("## The claims", "## The notebooks"),
    ):
        assert text.index(first) < text.index(second)
    assert "| feed-forward network | FNN 2 x 30 (baseline) | trained | 100 |" in text  # no loss stored: the first
    assert "| FNN 1 x 345 (prior report's FNN2) | `fnn2` | feed-forward network |" in text
    assert "[01_fnn](runs/01_fnn/01_fnn.ipynb)" not in text  # no executed copy: not linked
    assert written["models"] == 3 and (reports / "findings.html").read_text().startswith("<!doctype html>")


def test_a_model_reproduced_by_a_later_notebook_is_listed_once():
    first = _record("04_gru", {"gru": _model("GRU", 0.3), "fnn_baseline": _model("baseline", 0.4)})
    again = _record("08_min_rnn", {"gru": _model("GRU", 0.3 * (1 + 1e-7)), "min_gru": _model("MinGRU", 0.5)})
    other = _record("09_other", {"gru": _model("GRU", 0.31)})  # different numbers: its own row
    table = findings.model_table([first, again, other])
    sources = list(table[table.model == "GRU"].source)
    assert sources == ["04_gru (this run, 2 seeds; 08_min_rnn reproduced it)", "09_other (this run, 2 seeds)"]


def test_report_without_runs_writes_only_what_needs_none(tmp_path):
    appendix.build(runs=tmp_path / "none", reports=tmp_path, full=False)
    text = (tmp_path / "findings.md").read_text()
    assert "# Appendix" in text and "## The notebooks" in text and "## The families table" not in text


def _seeded(label, accuracy, params=100, seeds=5, val_loss=0.1):
    built = _model(label, 0.1)
    built["runs"] = [dict(built["runs"][0], seed=s, best_val_loss=val_loss) for s in range(seeds)]
    for run in built["runs"]:
        run["metrics"] = {k: dict(v) for k, v in run["metrics"].items()}
        for test_set, value in accuracy.items():
            run["metrics"][test_set]["accuracy"] = value
    return {**built, "params": params}


def test_the_families_table_shows_each_familys_model_on_every_set():
    exact = {"in": 1.0, "out": 1.0, "long": 1.0}
    records = [
        _record(
            "30_beyond_reference",
            {
                "scan_typed": _seeded("Scan", exact),
                "lstm": _seeded("LSTM", {"in": 0.99, "out": 0.2, "long": 0.3}),
                "scan_typed_solved": _seeded("Solved", exact, params=10),
            },
        )
    ]
    table = families.families_table(findings.typed(records)).set_index(["family", "kind"])
    assert table.loc[("syntax-gated scan", "built form, trained weights"), "model"] == "typed scan"
    assert (
        table.loc[("syntax-gated scan", "built form, trained weights"), "in range"] == "100.0 %, 5/5 exact, 100.0-100.0"
    )
    assert table.loc[("syntax-gated scan", "partly built"), "model"].startswith("typed scan, gates set by hand")
    assert table.loc[("LSTM / GRU", "trained"), "out of range"] == "20.0 %, 0/5 exact, 20.0-20.0"
    assert table.loc[("LSTM / GRU", "trained"), families.HELD_OUT] == "-"  # not scored on the held-out suite


def test_each_family_is_represented_by_its_lowest_validation_loss_not_its_test_accuracy():
    records = [
        _record(
            "04_gru",
            {
                "gru": _seeded("GRU", {"in": 0.9, "out": 0.1, "long": 0.2}, val_loss=0.01),
                "lstm": _seeded("LSTM", {"in": 0.9, "out": 0.3, "long": 0.4}, val_loss=0.05),
            },
        )
    ]
    assert families.choices(findings.typed(records)) == [("LSTM / GRU", False, "gru", 2)]


def test_the_quick_page_is_a_run_check_without_the_hand_written_findings(tmp_path):
    record = _record(
        "30_beyond_reference", {"scan_typed": _seeded("Scan", {"in": 1.0, "out": 1.0, "long": 1.0}, seeds=1)}
    )
    quick = appendix.page(findings.typed([record]), tmp_path, tmp_path, full=False)
    assert quick.startswith("# Findings of a quick run") and written_module.MARKER not in quick
    assert "## The claims" not in quick and "## The families table" in quick


def test_one_template_runs_as_03_lstm_and_04_gru():
    names = [p.stem for p in runner.discover()]
    assert "03_lstm" in names and "04_gru" in names and "03_gated_rnn" not in names
    assert [p.stem for p in runner.discover(["04"])] == ["04_gru"]
    source, parameters = runner.source_of(runner.NOTEBOOKS / "04_gru.ipynb")
    assert source == runner.NOTEBOOKS / "03_gated_rnn.ipynb" and source.is_file()
    assert parameters == {"models": ["gru"]}
    assert runner.source_of(runner.NOTEBOOKS / "01_fnn.ipynb") == (runner.NOTEBOOKS / "01_fnn.ipynb", {})


@pytest.mark.slow
def test_a_quick_run_on_a_fresh_clone_leaves_every_tracked_file_unchanged(tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    from predcalc.paths import ROOT

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout")
    clone = tmp_path / "clone"
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "checkout", "--quiet", head], cwd=clone, check=True)
    env = {**os.environ, "PYTHONPATH": str(clone / "lib")}
    for command in (["run", "--only", "00"], ["report", "--profile", "quick"]):
        result = subprocess.run(
            [sys.executable, "-m", "predcalc.cli", *command],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        assert "Traceback" not in result.stderr and "cudart_stub" not in result.stderr
    executed = clone / "build" / "runs" / "00_backprop_by_hand" / "00_backprop_by_hand.ipynb"
    assert executed.is_file()
    assert str(clone) not in executed.read_text()  # no machine path, papermill's input_path included
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True, check=True)
    assert status.stdout == ""


def test_set_overrides_reach_the_notebook_and_run_json(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    _notebook(
        notebooks / "01_ok.ipynb", "import pathlib\npathlib.Path(output_dir, 'done').write_text(f'{epochs} {seeds}')"
    )
    outcomes = runner.run(
        profile="full", runs=tmp_path / "runs", notebooks_dir=notebooks, overrides={"epochs": 3, "seeds": [1, 2]}
    )
    assert outcomes[0].error is None
    assert (tmp_path / "runs" / "01_ok" / "done").read_text() == "3 [1, 2]"
    info = json.loads((tmp_path / "runs" / "01_ok" / "run.json").read_text())
    assert info["overrides"] == {"epochs": 3, "seeds": [1, 2]}
    assert info["profile"].startswith("full with epochs=3")


@pytest.mark.slow  # starts notebook kernels
def test_a_failed_run_keeps_its_checkpoints_and_a_finished_one_deletes_them(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    body = (
        "import os, pathlib\nfolder = pathlib.Path(os.environ['PREDCALC_CHECKPOINTS'])\n"
        "folder.mkdir(parents=True, exist_ok=True)\nresumed = (folder / 'seed0').is_file()\n"
        "(folder / 'seed0').write_text('done')\n"
        "pathlib.Path(output_dir, 'resumed').write_text(str(resumed))\n"
        "if epochs == 1:\n    raise RuntimeError('stopped after seed 0')"
    )
    _notebook(notebooks / "01_ck.ipynb", body)
    runs, failed = tmp_path / "runs", tmp_path / "failed"
    checkpoints = runs / runner.CHECKPOINTS / "01_ck"
    kwargs = dict(
        profile="full", runs=runs, notebooks_dir=notebooks, failed=failed, logs=tmp_path / "logs", progress=False
    )
    (outcome,) = runner.run(**kwargs, overrides={"epochs": 1})
    assert "stopped after seed 0" in outcome.error and (checkpoints / "seed0").is_file()
    (outcome,) = runner.run(**kwargs, overrides={"epochs": 2})
    assert outcome.error is None
    assert (runs / "01_ck" / "resumed").read_text() == "True"  # the second run found the first's checkpoint
    assert not checkpoints.exists()


def test_a_keep_stored_run_starts_from_the_stored_folder(tmp_path):
    """The notebook sees the stored run (its metrics.json, the kept models' export folders); a run
    without keep_stored starts empty, so nothing stale survives it."""
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    body = (
        "import pathlib\nout = pathlib.Path(output_dir)\n"
        "(out / 'seen').write_text(' '.join(sorted(p.name for p in out.iterdir())))"
    )
    _notebook(notebooks / "01_ok.ipynb", body, parameters="keep_stored = False\noutput_dir = 'x'")
    runs = tmp_path / "runs"
    (runs / "01_ok" / "export" / "old").mkdir(parents=True)
    (runs / "01_ok" / "metrics.json").write_text("{}")
    for keep in (True, False):
        (outcome,) = runner.run(profile="full", runs=runs, notebooks_dir=notebooks, overrides={"keep_stored": keep})
        assert outcome.error is None
        seen = (runs / "01_ok" / "seen").read_text().split()
        assert ("export" in seen and "metrics.json" in seen) if keep else "export" not in seen, (keep, seen)
    assert not (runs / "01_ok" / "export").exists()


def test_a_rerun_keeps_the_files_other_commands_wrote_into_its_folder(tmp_path):
    """The edge study's per-seed scores and the digit suite's others.json live in a notebook's run
    folder; a rerun that does not write them carries them over. Anything else it did not write goes."""
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    _notebook(notebooks / "01_ok.ipynb", "import pathlib\npathlib.Path(output_dir, 'metrics.json').write_text('{}')")
    runs = tmp_path / "runs"
    scores = runs / "01_ok" / "export" / "m" / "seeds" / "seed_3" / "scores.json"
    scores.parent.mkdir(parents=True)
    scores.write_text('{"exact": 1}')
    (runs / "01_ok" / "others.json").write_text("{}")
    (runs / "01_ok" / "stale.png").write_text("old figure")
    (outcome,) = runner.run(profile="full", runs=runs, notebooks_dir=notebooks, progress=False)
    assert outcome.error is None
    assert scores.read_text() == '{"exact": 1}' and (runs / "01_ok" / "others.json").is_file()
    assert not (runs / "01_ok" / "stale.png").exists()


def test_keep_stored_keeps_models_not_retrained(tmp_path):
    from predcalc.data import reference_protocol
    from predcalc.training.experiment import Results

    stored = {**_record("06_x", {"old": _model("Old", 0.5), "new": _model("New", 0.9)}), "created": "2026-01-02T00:00"}
    (tmp_path / "metrics.json").write_text(json.dumps(stored))
    (tmp_path / "run.json").write_text(json.dumps({"profile": "full"}))
    results = Results(protocol=reference_protocol(0))
    results.models["new"] = None  # stands for a model this run trains
    assert results.keep_stored(tmp_path) == ["old"]
    assert results.kept["old"]["kept_from"] == {"created": "2026-01-02T00:00", "profile": "full", "parameters": {}}
    record = _record("06_x", {"old": results.kept["old"]})
    table = findings.model_table([record], reference_runs=None)
    assert "full, run of 2026-01-02, 2 seeds" in table.source.iloc[0]


def test_the_partly_built_models_are_the_registry_models_with_a_closed_form_finish():
    from predcalc.models import registry
    from predcalc.report.studies import FINISHES

    assert set(FINISHES) == {name for name, spec in registry.MODELS.items() if spec.finish is not None}


def test_ctrl_c_delivered_to_a_worker_thread_still_stops_the_wait():
    """The kernel may deliver SIGINT to any thread; the waiting main thread must still wake and raise."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import concurrent.futures, signal, threading, time
        from predcalc.training.runner import as_completed_interruptibly

        idents = []
        def work():
            idents.append(threading.get_ident())
            time.sleep(30)
        pool = concurrent.futures.ThreadPoolExecutor(1)
        future = pool.submit(work)
        while not idents:
            time.sleep(0.01)
        threading.Timer(0.5, signal.pthread_kill, (idents[0], signal.SIGINT)).start()
        start = time.monotonic()
        try:
            for _ in as_completed_interruptibly([future]):
                pass
        except KeyboardInterrupt:
            print(f"interrupted after {time.monotonic() - start:.1f} s", flush=True)
        import os
        os._exit(0)
    """)
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=25, preexec_fn=_default_sigint
    )
    assert result.stdout.startswith("interrupted after"), (result.stdout, result.stderr)
    assert float(result.stdout.split()[2]) < 3


def test_the_wait_ticks_the_progress_clock_while_a_notebook_runs():
    """The bar's elapsed time keeps counting between notebooks: the wait calls ``tick`` as it wakes,
    and ``_every`` limits the redraws to one a second."""
    import concurrent.futures
    import time

    ticks, redraws = [], []
    clock = runner._every(1.0, lambda: redraws.append(1))
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(time.sleep, 1.6)
        done = list(runner.as_completed_interruptibly([future], poll=0.1, tick=lambda: (ticks.append(1), clock())))
    assert done == [future] and len(ticks) >= 10 and len(redraws) == 1


def test_load_runs_skips_a_run_still_being_written(tmp_path):
    for folder in ("02_rnn", ".02_rnn.abc123.partial"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "metrics.json").write_text(json.dumps(_record("02_rnn", {"rnn": _model("RNN", 0.8)})))
    assert [record.folder.name for record in findings.load_runs(tmp_path)] == ["02_rnn"]


def test_the_runner_does_not_load_keras():
    """``predcalc run`` itself must not import TensorFlow: its C++ log lines would reach the terminal."""
    import subprocess
    import sys

    code = "import sys, predcalc.training.runner, predcalc.training.sweep; print('keras' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )


def test_a_result_names_the_final_folder_not_the_temporary_one(tmp_path, monkeypatch):
    """Absolute and repository-relative spellings of the temporary folder both become the final one."""
    monkeypatch.setattr(runner.paths, "ROOT", tmp_path.resolve())
    temporary, final = tmp_path / "reports" / "runs" / ".06_x.abc.partial", tmp_path / "reports" / "runs" / "06_x"
    (temporary / "export" / "m").mkdir(parents=True)
    (temporary / "export" / "m" / "export.json").write_text(
        json.dumps(
            {"source": "reports/runs/.06_x.abc.partial/export/m/model.keras", "kernel": f"{temporary}/metrics.json"}
        )
    )
    runner.name_relative(temporary, str(temporary), final)
    record = json.loads((temporary / "export" / "m" / "export.json").read_text())
    assert record == {"source": "reports/runs/06_x/export/m/model.keras", "kernel": "reports/runs/06_x/metrics.json"}


def test_a_rerun_that_changes_no_number_leaves_every_file_as_it_was(tmp_path):
    """The rerun's notebook, metrics.json (a new "created") and run.json (new times) hold the same
    results: the stored files stay, byte for byte; a changed number writes them again."""
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    body = (
        "import datetime, json, pathlib\n"
        "record = {'created': datetime.datetime.now().isoformat(), 'mae': 0.5 if same else 0.4}\n"
        "pathlib.Path(output_dir, 'metrics.json').write_text(json.dumps(record))\nprint(record['mae'])"
    )
    _notebook(notebooks / "01_same.ipynb", body, parameters="same = True\noutput_dir = 'x'")
    runs = tmp_path / "runs"

    def stored():
        return {p.name: p.read_bytes() for p in (runs / "01_same").iterdir() if p.is_file()}

    assert runner.run(profile="full", runs=runs, notebooks_dir=notebooks)[0].error is None
    first = stored()
    assert set(first) == {"01_same.ipynb", "metrics.json", "run.json"}
    assert runner.run(profile="full", runs=runs, notebooks_dir=notebooks)[0].error is None
    assert stored() == first
    assert runner.run(profile="full", runs=runs, notebooks_dir=notebooks, overrides={"same": False})[0].error is None
    changed = stored()
    assert all(changed[name] != first[name] for name in first)
    assert json.loads(changed["metrics.json"])["mae"] == 0.4
