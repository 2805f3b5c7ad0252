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
    """A few hundred expressions of the seed's test sets (in range, out of range, long), with answers."""
    sys.path.insert(0, str(ROOT / "lib"))
    from predcalc.data import seed_protocol

    protocol = seed_protocol(0)
    rows = []
    for split, count in ((protocol.test_in, 150), (protocol.test_out, 100), (protocol.test_long, 100)):
        rows += [f"{e}\t{v:g}" for e, v in zip(split.expressions[:count], split.values[:count])]
    path = directory / "expressions.tsv"
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def runtime_venv(tmp_path_factory):
    venv = tmp_path_factory.mktemp("runtime") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"{ROOT}[runtime]"],
                         capture_output=True, text=True)
    if pip.returncode != 0:
        pytest.skip(f"pip could not install .[runtime] here: {pip.stderr.strip().splitlines()[-1:]}")
    return venv


def _clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "TF_CPP_MIN_LOG_LEVEL": "3"}


@pytest.mark.slow
def test_runtime_extra_installs_nothing_heavy(runtime_venv):
    listed = subprocess.run([str(runtime_venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
                            capture_output=True, text=True, check=True, env=_clean_env())
    names = {p["name"].lower().replace("_", "-") for p in json.loads(listed.stdout)}
    assert {"numpy", "ai-edge-litert", "onnxruntime", "predcalc"} <= names
    assert not names & HEAVY, names & HEAVY


@pytest.mark.slow
def test_runtime_install_evaluates_every_artifact_like_the_full_install(runtime_venv, tmp_path):
    artifacts = runtime_artifacts()
    if not artifacts:
        pytest.skip("no exported LiteRT or ONNX files under reports/ (run `predcalc export`)")
    tsv = expression_file(tmp_path)
    full_env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}
    mismatches = []
    for artifact in artifacts:
        light = subprocess.run([str(runtime_venv / "bin" / "predcalc"), "evaluate", "--model", str(artifact),
                                "--file", str(tsv), "--json"], capture_output=True, text=True, cwd=tmp_path,
                               env=_clean_env())
        full = subprocess.run([sys.executable, "-m", "predcalc.cli", "evaluate", "--model", str(artifact),
                               "--file", str(tsv), "--json"], capture_output=True, text=True, env=full_env)
        assert full.returncode == 0, (artifact, full.stderr)
        assert light.returncode == 0, (artifact, light.stderr)
        light_metrics, full_metrics = json.loads(light.stdout), json.loads(full.stdout)
        if light_metrics["exact"] != full_metrics["exact"] or ("mae" in full_metrics and
                abs(light_metrics["mae"] - full_metrics["mae"]) > 1e-6 * max(1.0, full_metrics["mae"])):
            mismatches.append((str(artifact.relative_to(ROOT)), light_metrics, full_metrics))
    assert not mismatches, mismatches
    # and `predict`, once per artifact
    for artifact in artifacts:
        result = subprocess.run([str(runtime_venv / "bin" / "predcalc"), "predict", "3 - -2 + 4", "--model",
                                 str(artifact)], capture_output=True, text=True, cwd=tmp_path, env=_clean_env())
        assert result.returncode == 0 and result.stdout.startswith("3 - -2 + 4 = "), (artifact, result.stderr)
