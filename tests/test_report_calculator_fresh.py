"""The calculator's restart record in the findings: read beside the study's record, quoted from its numbers."""

import json
from types import SimpleNamespace

from predcalc.calculator import fresh
from predcalc.report.calculator_fresh import FRESH_RECORD, calculator_payload, cell_lead, restart_facts

GIVEN = {  # the given study's fresh rows: one start a step (muldigit stuck on one seed, not fitting its rows)
    "fresh_steps": [
        {"step": "muldigit", "seeds": [100, 101], "train_exact": [0.12, 1.0], "held_out_wrong": [270, 0]},
        {"step": "control", "seeds": [15, 16], "train_exact": [1.0, 1.0], "held_out_wrong": [0, 0]},
    ]
}


def _parts():
    def part(seed, starts, exact):
        tries = [{"seed": seed + 1000 * i, "train_exact": 0.1 if i < starts - 1 else 1.0} for i in range(starts)]
        step = {"reachable": 460, "trained_on": 153, "held_out_wrong": 0, "wrong": 0, "train_exact": 1.0}
        return {
            "seed": seed,
            "steps": {"muldigit": {**step, "tries": tries, "chosen": starts - 1, "draws": 2 if seed == 302 else 1}},
            "end_to_end": {"exact": exact, "n": 8500, "families": {}},
        }

    return {"300": part(300, 1, 8500), "301": part(301, 3, 8500), "302": part(302, 1, 8415)}


def _record(tmp_path):
    parts = _parts()
    restarts = {
        "seeds": parts,
        "recipe": {"tries": 10, "stride": 1000, "value_margin": 0.25},
        "steps": fresh.step_rows(parts),
        "summary": fresh.summary(parts),
    }
    (tmp_path / FRESH_RECORD).write_text(json.dumps(restarts))
    stored = SimpleNamespace(folder=tmp_path, to_json=lambda: {"given": GIVEN})
    return calculator_payload(stored)


def test_payload_reads_the_record_beside_the_study(tmp_path):
    assert "restarts" in _record(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "restarts" not in calculator_payload(SimpleNamespace(folder=empty, to_json=lambda: {}))


def test_facts_come_from_the_record(tmp_path):
    facts = restart_facts(_record(tmp_path))
    assert facts["seeds"] == 3 and facts["list"] == "300-302"
    assert facts["exact"] == 2 and facts["n"] == 8500 and facts["spread"] == "99.0-100.0"
    assert facts["complete"] == 3
    assert facts["restarted"] == [{"step": "muldigit", "seeds": 1, "most": 3}]
    assert facts["one_start"] == "100, 101" and facts["optimisation"]
    assert restart_facts({"given": GIVEN}) is None


def test_cell_quotes_exact_seeds_and_range(tmp_path):
    one = {"fresh_seeds": 2, "complete": 1, "end_to_end_low": 0.275}
    text = cell_lead(_record(tmp_path), one)
    assert text.startswith("fresh seeds 300-302, restarts chosen by training rows (Method): 2/3 exact on all 8,500")
    assert "99.0-100.0 %" in text
    assert "one start a step, fresh seeds 100, 101: 1/2 with every rule step exact on every input" in text
    assert "down to 27.5 % exact" in text


def test_the_appendix_table_shows_every_seed(tmp_path):
    from predcalc.report.calculator_fresh import fresh_seed_blocks, seed_frame

    frame = seed_frame(_record(tmp_path))
    assert frame["seed"].tolist() == [300, 301, 302]
    assert frame["muldigit starts"].tolist() == [1, 3, 1]
    assert frame["rows drawn again"].tolist() == ["-", "-", "muldigit"]
    assert frame["exact end to end"].tolist() == ["8,500 of 8,500", "8,500 of 8,500", "8,415 of 8,500"]
    _, table = fresh_seed_blocks(_record(tmp_path))
    assert table.frame["seed"].tolist() == [300, 301, 302]
    assert fresh_seed_blocks({"given": GIVEN}) == []
