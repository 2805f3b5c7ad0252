"""The untouched draw's record: reproduction against the stored fresh parts, the summary over seeds and the
facts and paragraph the findings quote, on a synthetic record."""

import json

import pytest

from predcalc.calculator import untouched


def _step(chosen=0, wrong=0, beta=-1.0):
    tries = [
        {"seed": 300 + 1000 * i, "train_exact": 0.5 if i < chosen else 1.0, "beta": beta} for i in range(chosen + 1)
    ]
    return {"chosen": chosen, "tries": tries, "draws": 1, "train_exact": 1.0, "wrong": wrong, "held_out_wrong": wrong}


def _part(seed, exact, chosen=0, wrong=0, beta=-1.0):
    families = {"iid": {"exact": min(exact, 500), "n": 500}, "adversarial": {"exact": max(exact - 500, 0), "n": 500}}
    return {
        "seed": seed,
        "steps": {"muldigit": _step(chosen, wrong, beta), "control": _step()},
        "end_to_end": {"exact": exact, "n": 1000, "families": families},
        "seconds": 40.0,
    }


def _record():
    parts = {"300": _part(300, 1000, chosen=2), "301": _part(301, 1000), "302": _part(302, 996, wrong=3)}
    stored = {"300": _part(300, 1000, chosen=2), "301": _part(301, 1000, beta=-1.5), "302": _part(302, 1000)}
    rows = untouched.per_seed_rows(parts, stored)
    return {
        "draw": {"family_seed": 8317, "n": 500, "families": ["adversarial", "iid"]},
        "runtime": "numpy tables",
        "per_seed": rows,
        "summary": untouched.summary(rows),
    }


def test_reproduction_matches_the_decisive_fields_and_reports_identical_starts():
    same = untouched.reproduction(_part(300, 1000, chosen=2), _part(300, 1000, chosen=2))
    assert same == {"reproduced": True, "steps": {"muldigit": True, "control": True}, "tries_identical": True}
    offset = untouched.reproduction(_part(300, 1000), _part(300, 1000, beta=-1.5))
    assert offset["reproduced"] is True and offset["tries_identical"] is False
    other = untouched.reproduction(_part(300, 1000, chosen=1), _part(300, 1000))
    assert other["reproduced"] is False and other["steps"] == {"muldigit": False, "control": True}
    assert untouched.reproduction(_part(300, 1000), None)["reproduced"] is None


def test_summary_counts_exact_seeds_and_bounds_their_share():
    rows = _record()["per_seed"]
    assert [rows[s]["exact"] for s in ("300", "301", "302")] == [1000, 1000, 996]
    assert rows["302"]["families"]["adversarial"] == {"exact": 496, "n": 500}
    assert [rows[s]["reproduced"] for s in ("300", "301", "302")] == [True, True, False]
    summary = _record()["summary"]
    assert summary["exact_seeds"] == 2 and summary["n"] == 1000
    assert summary["min"] == pytest.approx(0.996) and summary["max"] == 1.0
    assert (
        summary["complete"] == 2 and summary["reproduced"] == 2 and summary["tries_identical"] == 2
    )  # 301: another offset
    # one-sided 95 % Clopper-Pearson lower bound after 2 of 3: the 5 % quantile of Beta(2, 2)
    assert summary["lower_bound"] == pytest.approx(0.1354, abs=1e-4)
    every = untouched.summary({str(s): {**rows["300"]} for s in range(10)})
    assert every["lower_bound"] == pytest.approx(0.05 ** (1 / 10))  # 10 of 10: 0.7411


def test_summary_refuses_seeds_scored_on_other_draws():
    rows = _record()["per_seed"]
    rows["301"] = {**rows["301"], "n": 999}
    with pytest.raises(ValueError, match="same draw"):
        untouched.summary(rows)


def test_stored_fresh_reads_one_part_per_seed(tmp_path):
    (tmp_path / "fresh_300-0123456789ab.json").write_text(json.dumps({"code": "x", "result": {"seed": 300}}))
    assert untouched.stored_fresh(300, tmp_path) == {"seed": 300}
    assert untouched.stored_fresh(301, tmp_path) is None


def _litert(seed, exact, chosen=0, mismatches=0):
    scored = _part(seed, exact)["end_to_end"]
    return {
        "seed": seed,
        "chosen": {"muldigit": chosen, "control": 0},
        "parity": {"muldigit": mismatches},
        "end_to_end": scored,
    }


def test_litert_rows_compare_starts_and_count_mismatches():
    parts = {"300": _part(300, 1000, chosen=2), "301": _part(301, 1000)}
    litert = {"300": _litert(300, 1000, chosen=2), "301": _litert(301, 999, chosen=1, mismatches=4)}
    rows = untouched.litert_rows(litert, parts)
    assert rows["300"]["same_starts"] is True and rows["301"]["same_starts"] is False
    assert [rows[s]["mismatches"] for s in ("300", "301")] == [0, 4]
    summary = untouched.summary(rows)
    assert summary["exact_seeds"] == 1 and summary["exact"] == [1000, 999] and summary["complete"] == 0
