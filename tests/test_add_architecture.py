"""Adding an architecture (docs/development.md): its layer, its model, its notebook and its test,
and the families table finds its row, read from the registry. Shown in a temporary copy of the
library: the four files are added, no other file changes, the notebook writes its record, and
the copy's families table has the toy family's row."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LAYER = '''"""A toy layer: each token's value times a learned gate, summed."""

import keras


@keras.saving.register_keras_serializable(package="predcalc")
class ToyGatedSum(keras.layers.Layer):
    def build(self, input_shape):
        self.gate = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="gate")

    def call(self, inputs):
        return keras.ops.sum(inputs * self.gate, axis=-1, keepdims=True)
'''

MODEL = '''"""A toy architecture: the toy layer over the numeric tokens."""

import keras

from predcalc.layers.toy_gated_sum import ToyGatedSum
from predcalc.models.registry import register_model


@register_model(
    "toy_sum",
    label="Toy gated sum",
    family="toy",
    tokenizer="numeric",
    findings_family="toy family",
    short_name="toy gated sum",
    kind="built form, trained gates",
)
def toy_sum(tokenizer) -> keras.Model:
    inputs = keras.Input((tokenizer.max_len,))
    return keras.Model(inputs, ToyGatedSum()(inputs), name="toy_sum")
'''

# The notebook's one code cell: what a run stores (two seeds' scores on the protocol's sets).
CELL = """from predcalc.paths import RUNS
from predcalc.record import ModelRecord, RunRecord, SeedRun

scores = {"in": {"accuracy": 1.0}, "out": {"accuracy": 0.5}, "long": {"accuracy": 0.25}}
runs = [SeedRun(seed, scores, epochs=1, extra={"best_val_loss": 0.1}) for seed in (0, 1)]
record = RunRecord("99_toy", "models", models={"toy_sum": ModelRecord("Toy gated sum", 3, runs)})
record.write(RUNS / "99_toy")
"""

TEST = """from predcalc.models import get_spec


def test_the_toy_is_registered_with_its_row():
    assert get_spec("toy_sum").findings_family == "toy family"
"""


def _notebook() -> str:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# 99 · A toy architecture"},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": CELL},
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_toy_architecture_gets_a_families_row_from_its_four_files(tmp_path):
    copy = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "lib", copy / "lib", ignore=ignore)
    (copy / "notebooks").mkdir()
    (copy / "tests").mkdir()
    before = _files(copy)
    added = {
        "lib/predcalc/layers/toy_gated_sum.py": LAYER,
        "lib/predcalc/models/toy_sum.py": MODEL,
        "notebooks/99_toy.ipynb": _notebook(),
        "tests/test_toy_sum.py": TEST,
    }
    for path, text in added.items():
        (copy / path).write_text(text)
    after = _files(copy)
    assert set(after) - set(before) == set(added) and all(after[p] == before[p] for p in before)

    script = (
        "import json, sys\n"
        "import predcalc\n"
        f"assert predcalc.__file__.startswith({str(copy)!r}), predcalc.__file__\n"
        "notebook = json.load(open('notebooks/99_toy.ipynb'))\n"
        "for cell in notebook['cells']:\n"
        "    if cell['cell_type'] == 'code':\n"
        "        exec(cell['source'], {})\n"
        "from predcalc.paths import RUNS\n"
        "from predcalc.report import families, findings\n"
        "print(families.families_table(findings.load_runs(RUNS)).to_json(orient='records'))\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(copy / "lib"), "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=copy, env=environment, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (row,) = json.loads(done.stdout.strip().splitlines()[-1])
    assert row["family"] == "toy family" and row["model"] == "toy gated sum"
    assert row["kind"] == "built form, trained gates" and row["params"] == "3"
    assert row["out of range"] == "50.0 %, 0/2 exact, 50.0-50.0" and row["chosen by"] == "the only candidate"
