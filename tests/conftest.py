import json
import os
import sys
from collections import Counter
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

import pytest

# make test runs pytest-xdist with --dist loadfile --no-loadscope-reorder: a free worker takes the
# next test file in collection order. The files that take longest (about 15 to 80 s each in the
# clean-clone CI log of 2026-11-26, on two cores) go first, so that no worker is left alone with a
# long file at the end while the other core idles; the rest follow in xdist's own default order
# (most tests first). Tests inside a file keep their order. The calculator's learned parts and given
# variants, the Gemma weights and the exact scan were added from per-file times of 2026-12-02 (one
# process a file, beside training runs: test_calculator_learned.py took as long as test_book.py).
LONGEST_FIRST = [
    "tests/test_jetson.py",
    "tests/test_deploy.py",
    "tests/test_token_head.py",
    "tests/test_tune.py",
    "tests/calculator/test_calculator_learned.py",
    "tests/test_cli.py",
    "tests/test_runner_and_report.py",
    "tests/test_book.py",
    "tests/test_runtime_install.py",
    "tests/test_transformer.py",
    "tests/test_edges.py",
    "tests/test_exact_scan.py",
    "tests/calculator/test_calculator_engine.py",
    "tests/test_gemma_weights.py",
    "tests/test_experiment.py",
    "tests/test_difficulty.py",
    "tests/test_export_formats.py",
    "tests/calculator/test_calculator_given.py",
]


def _real_gemma_at_hand() -> bool:
    """The converted Gemma 3 270M is cached (converting its 268M weights is not a test's job), or
    PREDCALC_REAL_GEMMA=1 asks for the conversion."""
    if os.environ.get("PREDCALC_REAL_GEMMA") == "1":
        return True
    from predcalc.llm import weights as gemma_weights

    return (gemma_weights.preset_dir() / "conversion.json").is_file()


def pytest_collection_modifyitems(config, items):
    if any(item.get_closest_marker("real_gemma") for item in items) and not _real_gemma_at_hand():
        skip = pytest.mark.skip(
            reason="the real Gemma 3 270M is not converted here (PREDCALC_REAL_GEMMA=1 converts it)"
        )
        for item in items:
            if item.get_closest_marker("real_gemma"):
                item.add_marker(skip)
    files = Counter(item.nodeid.split("::")[0] for item in items)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: (rank.get(f := item.nodeid.split("::")[0], len(rank)), -files[f], f))


# Under pytest-xdist the summary line lost its "N deselected" (`make test-fast`'s -m "not slow"): the
# workers collect and deselect, the controller prints and never hears of it. Each worker reports its
# count (every worker collects the whole suite, so each holds the same count); the controller adds it
# to the summary, as a run without workers (-n 0) prints it itself.
DESELECTED = []  # the sizes of this process's deselections


def pytest_deselected(items):
    DESELECTED.append(len(items))


def pytest_sessionfinish(session):
    output = getattr(session.config, "workeroutput", None)  # a pytest-xdist worker's report to the controller
    if output is not None:
        output["deselected"] = sum(DESELECTED)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: absent without it
def pytest_testnodedown(node, error):
    count = getattr(node, "workeroutput", {}).get("deselected", 0)
    reporter = node.config.pluginmanager.get_plugin("terminalreporter")
    if count and reporter is not None and not reporter.stats.get("deselected"):
        reporter.stats["deselected"] = [None] * count  # the summary counts the entries


@pytest.fixture(scope="session")
def exported_fnn2(tmp_path_factory):
    """An FNN2 trained for 3 epochs and exported in every format (with model.keras); full-integer
    int8 calibrated on training and out-of-range inputs.

    Built once per test session: under pytest-xdist the first worker that asks builds it (about
    half a minute) in the folder all workers share, under a file lock; the others wait for it and
    load it, the model from its model.keras and the report from its export.json."""
    import fcntl

    from predcalc.data import reference_protocol
    from predcalc.deploy.export import export_trained, write_export_record
    from predcalc.training import fit

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # each worker's own base folder is below the session's
    directory = shared / "exported_fnn2" / "fnn2"
    protocol = reference_protocol(0)
    with open(shared / "exported_fnn2.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (directory / "export.json").is_file():  # written last: a finished export
            trained = fit.train("fnn2", protocol, seed=0, epochs=3)
            # int8's calibration holds out-of-range inputs too, so its first rung (int8, these inputs)
            # passes: one converter child instead of three (training inputs alone climbed to the third
            # rung, 40 s more). The ladder's climb stays checked: test_export_command_on_a_run_directory
            # exports this model with `predcalc export`'s own calibration, the training split.
            calibration = [*protocol.train.expressions[:100], *protocol.test_out.expressions[:100]]
            report = export_trained(trained, directory, {"in": protocol.test_in, "out": protocol.test_out}, calibration)
            trained.model.save(directory / "model.keras")
            write_export_record(directory, trained.spec, report, {"data_seed": 0})
            return protocol, trained, directory, report
    import keras

    spec = fit.get_spec("fnn2")
    trained = fit.TrainedModel(
        spec=spec,
        model=keras.saving.load_model(directory / "model.keras"),
        tokenizer=fit.make_tokenizer(spec),
        seed=0,
        history={},
        epochs=3,
        seconds=0.0,
    )
    return protocol, trained, directory, json.loads((directory / "export.json").read_text())["formats"]
