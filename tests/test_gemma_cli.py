"""``predcalc evaluate --model reports/runs/07_gemma_finetune``: the committed LoRA adapter on the
installed base weights answers a test file as the recorded run did."""

import json

import numpy as np
import pytest

pytest.importorskip("keras_hub")
pytestmark = [pytest.mark.slow, pytest.mark.real_gemma]  # rebuilds the 268M-parameter model (about 40 s)

from predcalc import cli  # noqa: E402
from predcalc.data import reference_protocol  # noqa: E402
from predcalc.llm import deploy as llm_deploy  # noqa: E402
from predcalc.paths import RUNS  # noqa: E402

RUN = RUNS / "07_gemma_finetune"


def test_evaluate_rebuilds_the_fine_tune_and_answers_as_recorded(tmp_path, capsys):
    if not llm_deploy.is_gemma_adapter(RUN):
        pytest.skip("no committed Gemma adapter in reports/runs/07_gemma_finetune")
    record = json.loads((RUN / "metrics.json").read_text())["gemma3_270m"]
    chosen = json.loads((RUN / llm_deploy.RUN_INFO).read_text())["seed"]
    recorded = next(s for s in record["seeds"] if s["seed"] == chosen)["probe_in_correct"]
    split = reference_protocol(record["settings"]["data_seed"]).test_in
    lines = [f"{e}\t{int(v)}" for e, v in zip(split.expressions[: len(recorded)], split.values)]
    (tmp_path / "test.tsv").write_text("\n".join(lines) + "\n")
    code = cli.main(
        ["evaluate", "--model", str(RUN), "--file", str(tmp_path / "test.tsv"), "--output", str(tmp_path / "out.tsv")]
    )
    assert code == 0
    assert f"answered {len(recorded):,} of {len(recorded):,} lines" in capsys.readouterr().out
    right = [int(line.split("\t")[3]) for line in (tmp_path / "out.tsv").read_text().splitlines()[1:]]
    # decoding through the command line agrees with the run's one-pass scores, expression by expression
    assert np.mean(np.array(right) == np.array(recorded)) >= 0.95, (right, recorded)
    assert sum(right) > 0
