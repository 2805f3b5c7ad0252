"""The calculator's restart recipe on fresh seeds in the findings: its record beside the calculator study's,
and the facts the Answer, the families table, the lessons and the limitations quote of it.

The record (:mod:`predcalc.calculator.fresh`, ``calculator_fresh.json`` in the calculator study's run
folder) holds every fresh seed's steps (training-row and held-out exactness, the starts each took) and
its calculator end to end on the held-out draw.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from predcalc.calculator.prose import error_bound
from predcalc.report import prose
from predcalc.report.calculator_untouched import UNTOUCHED_RECORD, untouched_facts
from predcalc.report.document import Table, Text
from predcalc.report.tables import plain_cell

#: The fresh-seed record's file name, beside the calculator study's metrics.json.
FRESH_RECORD = "calculator_fresh.json"
#: Method's row of what chose the restarts and the row check (:data:`predcalc.calculator.fresh.CHOICES`).
RESTART_CHOICE = (
    "the calculator's restarts (a step retrained from another start where its start does not fit its own "
    "training rows, its value unit within 0.25 of its target on each, up to 10 starts) and row check (rows drawn "
    "again where they miss a region of a staircase)",
    "the training rows and step checks of development seeds 200-219 (and the failures seen on the given "
    "study's fresh seeds 100-104)",
    "each start's training-row exactness, development seed 212's qdigit and 202's compare; the claim uses "
    "fresh seeds 300-309 on family seed 8317, drawn after the recipe froze (family seed 7777, scored "
    "before, is shown beside it)",
)


def calculator_payload(stored) -> dict:
    """The calculator study's stored payload (``stored.to_json()``) with the restart recipe's fresh-seed
    record as its ``"restarts"`` field, where that record sits in the same run folder."""
    record = stored.to_json()
    folder = getattr(stored, "folder", None)
    path = Path(folder) / FRESH_RECORD if folder else None
    if path is not None and path.is_file():
        record["restarts"] = json.loads(path.read_text())
    untouched = Path(folder) / UNTOUCHED_RECORD if folder else None
    if untouched is not None and untouched.is_file():
        record["untouched"] = json.loads(untouched.read_text())
    return record


def restart_facts(record: dict) -> dict | None:
    """What the sentences quote of the restart recipe's fresh seeds (None without a scored record): the
    seeds, how many answer the whole draw exactly and the lowest-highest seed's share, how many have every
    step exact on every input, which steps needed another start on how many seeds (at most how many
    starts), the starts allowed, the seeds one start a step was first tried on (the given study) and whether
    each of its failures was a start that did not fit its own training rows."""
    fresh = record.get("restarts") or {}
    scored = (fresh.get("summary") or {}).get("end_to_end")
    if not scored:
        return None
    seeds = fresh["summary"]["seeds"]
    restarted = [
        {"step": row["step"], "seeds": sum(s > 1 for s in row["starts"]), "most": max(row["starts"])}
        for row in fresh["steps"]
        if max(row["starts"]) > 1
    ]
    redrawn = [
        {"step": row["step"], "seeds": sum(d > 1 for d in row.get("draws", []))}
        for row in fresh["steps"]
        if any(d > 1 for d in row.get("draws", []))
    ]
    given = (record.get("given") or {}).get("fresh_steps") or []
    rules = [row for row in given if row.get("step") != "control" and row.get("train_exact")]
    one_start = {int(s) for row in rules for s in row["seeds"]}
    # one start a step: every seed wrong somewhere did not fit its own training rows (an optimisation failure)
    failures = [t for row in rules for w, t in zip(row["held_out_wrong"], row["train_exact"]) if w > 0 or t < 1.0]
    return {
        "seeds": len(seeds),
        "list": prose.seeds_list(seeds),
        "exact": scored["exact_seeds"],
        # one-sided 95 % lower bound on the share of seeds the recipe makes exact end to end (Clopper-Pearson)
        "lower_bound": prose.share(1 - error_bound(len(seeds) - scored["exact_seeds"], len(seeds)), 1),
        "n": scored["n"],
        "spread": prose.spread([e / scored["n"] for e in scored["exact"]]),
        "complete": len(fresh["summary"]["complete"]),
        "restarted": restarted,
        "redrawn": redrawn,
        "tries": fresh["recipe"]["tries"],
        "margin": fresh["recipe"].get("value_margin"),
        "one_start": prose.seeds_list(one_start) if one_start else None,
        "optimisation": bool(failures) and all(t < 1.0 for t in failures),
    }


def cell_lead(record: dict, one_start: dict | None = None) -> str | None:
    """The families table's calculator cell, its fresh-seed part (``calculator_cell.md.j2``): the restart
    recipe's fresh seeds, and ``one_start`` (:func:`predcalc.report.calculator.fresh_rule_seeds`: one start a
    step, on the given study's fresh seeds) beside them."""
    facts = restart_facts(record)
    one = one_start if one_start and one_start.get("fresh_seeds") and facts and facts["one_start"] else None
    untouched = untouched_facts(record.get("untouched"))
    return " ".join(prose.say("calculator_cell.md.j2", r=facts, one=one, u=untouched)) if facts else None


def seed_frame(record: dict) -> pd.DataFrame:
    """One row per fresh seed of the restart recipe: the starts each rule step took, the rule steps whose
    rows were drawn again, the wrong decisions of all steps on every reachable input, and the exact answers
    on the held-out draw."""
    fresh = record.get("restarts") or {}
    rows = []
    for seed, part in sorted((fresh.get("seeds") or {}).items(), key=lambda kv: int(kv[0])):
        steps = part["steps"]
        row = {"seed": int(seed)}
        row.update({f"{name} starts": len(step["tries"]) for name, step in steps.items() if step.get("draws")})
        row["rows drawn again"] = ", ".join(n for n, s in steps.items() if s.get("draws", 1) > 1) or "-"
        row["wrong decisions (all steps)"] = sum(step["wrong"] for step in steps.values())
        scored = part.get("end_to_end")
        row["exact end to end"] = f"{scored['exact']:,} of {scored['n']:,}" if scored else "-"
        rows.append(row)
    return pd.DataFrame(rows)


def fresh_seed_blocks(record: dict) -> list:
    """The Appendix's table of every fresh seed: its starts per step, rows drawn again, wrong decisions."""
    if restart_facts(record) is None:
        return []
    return [
        Text(
            "The restart recipe's fresh seeds, one row each (written by `python -m predcalc.calculator.fresh fresh`):"
        ),
        Table(seed_frame(record), cell=plain_cell),
    ]
