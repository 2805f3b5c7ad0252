"""The runtime-only install (issue 20): `pip install ".[runtime]"` in a fresh virtual environment.

It holds NumPy, LiteRT and ONNX Runtime and nothing heavier, and its ``predcalc evaluate`` gives the
same metrics as the full install on every float32 LiteRT file and every ONNX file under
``reports/`` (token-output models and the longer-input LiteRT files included). Needs PyPI (or
a local index) for the runtime packages; skipped where pip cannot install them.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = {"tensorflow", "keras", "scipy", "jax", "jaxlib", "torch", "pandas", "tf-keras", "keras-hub"}


def runtime_artifacts() -> list[Path]:
    """Every float32 LiteRT file (the trained length; the longer ones run through it) and ONNX file."""
    found = sorted(ROOT.glob("reports/**/model_float32.tflite")) + sorted(ROOT.glob("reports/**/model.onnx"))
    found += sorted(ROOT.glob("reports/calculator/model.tflite"))  # the learned calculator
    return [path for path in found if (path.parent / "predcalc.json").is_file()]


def expression_file(directory: Path) -> Path:
    """A few hundred expressions of the prior report's test sets (in range, out of range, long), with answers."""
    sys.path.insert(0, str(ROOT / "lib"))
    from predcalc.data import reference_protocol

    protocol = reference_protocol(0)
    rows = []
    for split, count in ((protocol.test_in, 150), (protocol.test_out, 100), (protocol.test_long, 100)):
        rows += [f"{e}\t{v:g}" for e, v in zip(split.expressions[:count], split.values[:count])]
    path = directory / "expressions.tsv"
    path.write_text("\n".join(rows) + "\n")
    return path


def _pip(venv: Path) -> list[str]:
    """This install's pip acting on the runtime environment's interpreter (pip's ``--python``)."""
    return [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]


@pytest.fixture(scope="module")
def runtime_venv(tmp_path_factory):
    venv = tmp_path_factory.mktemp("runtime") / "venv"
    # without a pip of its own (ensurepip took 10 s of the 35): this install's pip installs into the
    # fresh environment's interpreter, the same packages a pip inside it would (`pip --python`)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    pip = subprocess.run([*_pip(venv), "install", "-q", f"{ROOT}[runtime]"], capture_output=True, text=True)
    if pip.returncode != 0:
        pytest.skip(f"pip could not install .[runtime] here: {pip.stderr.strip().splitlines()[-1:]}")
    return venv


def _clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "TF_CPP_MIN_LOG_LEVEL": "3"}


@pytest.mark.slow
def test_runtime_extra_installs_nothing_heavy(runtime_venv):
    listed = subprocess.run(
        [*_pip(runtime_venv), "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
        env=_clean_env(),
    )
    names = {p["name"].lower().replace("_", "-") for p in json.loads(listed.stdout)}
    assert {"numpy", "ai-edge-litert", "onnxruntime", "predcalc"} <= names
    assert not names & HEAVY, names & HEAVY


# Run by the runtime venv's interpreter: `predcalc evaluate` and `predcalc predict` on every artifact
# in one process (one import of LiteRT and ONNX Runtime instead of two per artifact).
LIGHT_DRIVER = """
import contextlib, io, json, sys
from predcalc.cli import main

tsv, artifacts = sys.argv[1], sys.argv[2:]
out = {}
for artifact in artifacts:
    record = {}
    for command, argv in (("evaluate", ["evaluate", "--model", artifact, "--file", tsv, "--json"]),
                          ("predict", ["predict", "3 - -2 + 4", "--model", artifact])):
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            rc = main(argv)
        record[command] = {"rc": rc, "stdout": stdout.getvalue(), "stderr": stderr.getvalue()}
    out[artifact] = record
print(json.dumps(out))
"""


def _full_install_evaluate(artifact: Path, tsv: Path) -> dict:
    """`predcalc evaluate --json` in this (full-install) process."""
    import contextlib
    import io

    from predcalc.cli import main

    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert main(["evaluate", "--model", str(artifact), "--file", str(tsv), "--json"]) == 0, artifact
    return json.loads(stdout.getvalue())


@pytest.mark.slow
def test_runtime_install_evaluates_every_artifact_like_the_full_install(runtime_venv, tmp_path):
    artifacts = runtime_artifacts()
    if not artifacts:
        pytest.skip("no exported LiteRT or ONNX files under reports/ (run `predcalc export`)")
    tsv = expression_file(tmp_path)
    light = subprocess.run(
        [str(runtime_venv / "bin" / "python"), "-c", LIGHT_DRIVER, str(tsv), *map(str, artifacts)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_clean_env(),
    )
    assert light.returncode == 0, light.stderr[-2000:]
    light_records = json.loads(light.stdout)
    mismatches = []
    for artifact in artifacts:
        record = light_records[str(artifact)]
        assert record["evaluate"]["rc"] == 0, (artifact, record["evaluate"]["stderr"])
        light_metrics, full_metrics = json.loads(record["evaluate"]["stdout"]), _full_install_evaluate(artifact, tsv)
        if light_metrics["exact"] != full_metrics["exact"] or (
            "mae" in full_metrics
            and abs(light_metrics["mae"] - full_metrics["mae"]) > 1e-6 * max(1.0, full_metrics["mae"])
        ):
            mismatches.append((str(artifact.relative_to(ROOT)), light_metrics, full_metrics))
        predicted = record["predict"]
        assert predicted["rc"] == 0 and predicted["stdout"].startswith("3 - -2 + 4 = "), (artifact, predicted)
    assert not mismatches, mismatches


@pytest.mark.slow
def test_the_runtime_install_has_the_predcalc_command(runtime_venv, tmp_path):
    artifact = ROOT / "reports" / "calculator" / "model.tflite"
    if not artifact.is_file():
        pytest.skip("no stored calculator (reports/calculator/model.tflite)")
    result = subprocess.run(
        [str(runtime_venv / "bin" / "predcalc"), "predict", "3 - -2 + 4", "--model", str(artifact)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_clean_env(),
    )
    assert result.returncode == 0 and result.stdout.startswith("3 - -2 + 4 = 9 "), result
    assert result.stderr == "", result.stderr
