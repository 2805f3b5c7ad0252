"""The gated-sum transformer with rounded gates (notebook 35, :mod:`predcalc.studies.rounded_transformer`) in the
findings: its families-table row, its column of the held-out table, its Results lead and Appendix
detail, and the facts the Answer and the Limitations quote."""

from __future__ import annotations

import numpy as np

from predcalc.report import prose
from predcalc.report.cell import Cell, set_cell
from predcalc.report.document import Section, Text
from predcalc.report.names import short_name
from predcalc.report.study_sections import lead_and_details
from predcalc.studies import rounded_transformer as study

# The families table's words for what is built and what is trained (the readout's form and its value
# channel are given; attention, features' projection and gates are trained).
KIND = "trained, built rounded gated-sum readout"


def rounded_record(notebooks) -> dict | None:
    """The study's stored record among the notebooks' records, or None where it has not run."""
    return next((r for r in (x.to_json() for x in notebooks) if study.is_record(r)), None)


def rounded_facts(notebooks) -> dict | None:
    """What the report quotes: the fresh seeds on the protocol's sets and on every held-out set, the
    seeds exact everywhere, the one-sided bound, and the choosing seeds beside them."""
    record = rounded_record(notebooks)
    if record is None:
        return None
    facts = study.answer_facts(record)
    fresh, choosing = facts["fresh"], facts["choosing"]
    if not fresh["n"]:
        return None
    results = record["heldout"]["fresh"]
    seeds = sorted(results, key=int)
    by_seed = study.accuracies(results)
    return {
        "name": short_name(study.MODEL),
        "params": facts["params"],
        "epochs": facts["epochs"],
        "seeds": f"fresh seeds {prose.seeds_list(int(s) for s in seeds)}",
        "n": fresh["n"],
        "sets": len(facts["sets"]),
        "protocol": {t: [results[s]["protocol"][t] for s in seeds] for t in study.PROTOCOL_SETS},
        "per_seed_mean": [float(np.mean(list(by_seed[s].values()))) for s in seeds],
        "per_set": fresh["per_set"],
        "exact_everywhere": fresh["exact_everywhere"],
        "lower_bound": prose.share(fresh["lower_bound"], 1) if fresh["lower_bound"] is not None else None,
        "stuck": len(fresh["not_exact_in_box"]),
        "choosing_exact": choosing["exact_everywhere"] if choosing else None,
        "choosing_n": choosing["n"] if choosing else None,
        "choosing_seeds": prose.seeds_list(int(s) for s in choosing["seeds"]) if choosing else None,
    }


def rounded_row(notebooks, protocol_sets, held_out: str, chosen: str) -> list[tuple[str, dict]]:
    """The families table's row (``protocol_sets``, ``held_out`` and ``chosen`` are its columns)."""
    facts = rounded_facts(notebooks)
    if facts is None:
        return []
    row = {
        "family": "transformer encoder",
        "model": f"{facts['name']} ({facts['seeds']})",
        "kind": KIND,
        "params": f"{facts['params']:,}",
    }
    for test_set, column in protocol_sets:
        row[column] = Cell(values=facts["protocol"][test_set]).text()
    every_seed = sum(row["exact"] == row["n"] for row in facts["per_set"].values())
    row[held_out] = (
        f"{every_seed} of {facts['sets']} sets exact on every seed, {facts['exact_everywhere']}/{facts['n']} fresh "
        f"seeds exact on all (ONNX files); mean {prose.share(float(np.mean(facts['per_seed_mean'])), 1)} "
        f"({prose.spread(facts['per_seed_mean'])})"
        + (
            f"; seeds {facts['choosing_seeds']}, which chose its budget: {facts['choosing_exact']}/{facts['choosing_n']}"
            if facts["choosing_n"]
            else ""
        )
    )
    row[chosen] = "design: notebook 33's side probe (development sets); budget: development data, a fixed rule"
    return [(study.MODEL, row)]


def suite_cells(notebooks, sets, fingerprint: str | None) -> tuple[str, list[str]] | None:
    """The held-out table's column for the fresh seeds: its title and one cell per set of ``sets``, where
    the record scored the suite of ``fingerprint``."""
    record, facts = rounded_record(notebooks), rounded_facts(notebooks)
    if facts is None or record["data"]["heldout"].get("fingerprint") != fingerprint:
        return None
    cells = []
    for name in sets:
        row = facts["per_set"].get(name)
        cells.append(
            set_cell(row["mean"], row["min"], row["max"], row["exact"], row["n"]) if row and row["n"] else "not scored"
        )
    return f"{facts['name']} (fresh seeds)", cells


def _lead_and_details(notebooks) -> tuple[str, str]:
    record = rounded_record(notebooks)
    return lead_and_details(study.section_markdown(record)) if record else ("", "")


def rounded_details(notebooks) -> Section:
    """The Appendix's part: which data chose the budget, and the held-out suite set by set."""
    details = _lead_and_details(notebooks)[1]
    if not details:
        return Section("appendix.rounded", "", [], part="appendix")
    return Section(
        "appendix.rounded", "The gated-sum transformer with rounded gates in detail", [Text(details)], part="appendix"
    )
