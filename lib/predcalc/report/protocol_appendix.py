"""Appendix sections moved from the Results: every model on the protocol's test sets, the prior
report's published rows like for like, and the extended suites (each a function of the
:class:`~predcalc.report.paper.Findings`)."""

from __future__ import annotations

import pandas as pd

from predcalc.calculator.prose import COMPETENT
from predcalc.readable import share
from predcalc.report import prose
from predcalc.report.anchors import PRIOR_REPORT
from predcalc.report.answer import MODEL_KINDS, PROTOCOL_SETS, Cell, short_name
from predcalc.report.document import Section, Table, Text
from predcalc.report.names import with_short_names
from predcalc.report.prose import count
from predcalc.report.scoreboard import comparison, matches, summary_table
from predcalc.report.studies import extended_best, extended_title
from predcalc.report.tables import plain_cell


def _pct(value: float) -> str:
    return share(value, 1)


def reference_protocol(findings, names) -> Section:
    """Every model of ``names`` on the protocol's three test sets, ordered by out-of-range, then long accuracy."""
    keep = [n for n in names if n in findings.models]
    if not keep:
        return Section("appendix.reference_protocol", "The protocol's test sets", [], part="appendix")
    order = [n for n in findings.general["name"] if n in keep]  # by out-of-range, then long accuracy
    rows = [
        {
            "model": short_name(name),
            "params": f"{findings.models[name][1].params:,}",
            **{column: Cell(values=findings.accuracy(name, test_set)).text() for test_set, column in PROTOCOL_SETS},
        }
        for name in order
    ]
    return Section(
        "appendix.reference_protocol",
        "The protocol's test sets",
        [
            Text(
                "Exact accuracy on the protocol's three test sets: mean over seeds, the seeds exact on every "
                "expression, and the lowest-highest seed (%); ordered by out-of-range, then long accuracy. In range "
                "is interpolation; out of range (|n| 5..8) and long (2-8 terms) leave the training box by one "
                "step. These sets chose designs (Method): they are development numbers."
            ),
            Table(pd.DataFrame(rows), cell=plain_cell),
        ],
        part="appendix",
    )


def published(findings) -> Section:
    """The prior report's regression rows against the replicas and the best variants (sign tests)."""
    board = summary_table(findings.pool)
    board = board.map(lambda v: with_short_names(v) if isinstance(v, str) else v)  # main text: short names
    if board.empty:
        return Section("appendix.published", "The published rows, like for like", [], part="appendix")
    return Section(
        "appendix.published",
        "The published rows, like for like",
        [
            Text(
                f"Each of the {len(board)} regression rows of {PRIOR_REPORT}, computed its way on the same test "
                "sets (Appendix: the reference-way table and every column). The faithful replica comes first; the best "
                "variant is another model trained here, picked as best on these same columns from designs "
                "developed on these test sets (Method), so its verdicts are development numbers, not held-out "
                "ones. Counts are of ranked columns, each decided by the sign "
                f"test over {count(findings.seeds, 'seed')}." + chance_sentence(findings)
            ),
            Table(board, cell=plain_cell),
        ],
        part="appendix",
    )


def extended(findings) -> Section:
    """The extended suites' best trained and partly built models."""
    rows, weak = [], set()  # weak: suites whose shown model is not competent inside its own world
    for record in findings.study("extended"):
        for built in (False, True):
            top = extended_best(record.entries["extended"], built=built)
            if top:
                if top["by_family"].get("iid", 1.0) < COMPETENT:
                    weak.add(record.notebook)
                rows.append(
                    {
                        "suite": f"{extended_title(record)} ({record.notebook})",
                        "model": short_name(top["name"]),
                        "kind": "partly built" if built else MODEL_KINDS.get(top["name"], "trained"),
                        "families": len(top["by_family"]),
                        "mean exact over families": f"{_pct(top['mean'])} (seeds {prose.spread(top['per_seed'])})",
                        "worst family": f"{top['worst'][0]} {_pct(top['worst'][1])} "
                        f"(seeds {prose.spread(top['worst_seeds'])})",
                        "inside its own world (iid)": _pct(top["by_family"]["iid"])
                        if "iid" in top["by_family"]
                        else "-",
                    }
                )
    if not rows:
        return Section("appendix.extended", "Extended suites", [], part="appendix")
    return Section(
        "appendix.extended",
        "Extended suites",
        [
            Text(
                "Beyond the protocol: families that vary digits (up to 6), terms, parentheses and, in 32, all four "
                "operators. 31's models were trained on the protocol (3 numbers of -5..4); 32's on the suite's own "
                "training world, for the epochs its notebook ran (Appendix: every family). The model shown is the "
                "one with the highest mean over these families, chosen on the suite it is shown on, and 31's "
                "suite also chose the scan's finish (Method): these are development numbers, not held-out ones. "
                "Mean over seeds with the per-seed range (%). A model under "
                f"{_pct(COMPETENT)} exact inside its own training world (iid) has not learned that world, so its "
                "other families say nothing about extrapolation (the calculator's ladder applies the same rule)"
                + (f"; rows of {', '.join(sorted(weak))} are such baselines and are not compared." if weak else ".")
                + " A suite trained on the protocol has no iid family here: its world is the protocol (Answer)."
            ),
            Table(pd.DataFrame(rows), cell=plain_cell),
        ],
        part="appendix",
    )


def verdict_counts(pool: list[dict]) -> dict:
    """Sign-test verdicts summed over the published rows: the faithful replicas', and those of the
    one variant with the most "better" verdicts; {} without candidates."""

    replica = {"better": 0, "worse": 0, "not resolved": 0, "total": 0}
    by_variant: dict[str, dict] = {}
    for _, published, rep, variant in matches(pool):
        if rep is not None:
            for test in comparison(rep, published).values():
                replica[test["verdict"]] += 1
                replica["total"] += 1
        if variant is not None:
            tally = by_variant.setdefault(variant["name"], {"name": variant["name"], "better": 0, "total": 0})
            verdicts = [t["verdict"] for t in comparison(variant, published).values()]
            tally["better"] += verdicts.count("better")
            tally["total"] += len(verdicts)
    if not by_variant:
        return {}
    return {"replica": replica, "variant": max(by_variant.values(), key=lambda t: t["better"])}


def chance_sentence(findings) -> str:
    """How many of the replicas' verdicts chance alone would give (the sign test runs on every column)."""
    counts = verdict_counts(findings.pool)
    if not counts:
        return ""
    replica, seeds = counts["replica"], findings.seeds
    return " " + " ".join(
        prose.say(
            "chance.md.j2",
            total=replica["total"],
            expected=replica["total"] / 2 ** (seeds - 1),
            found=replica["better"] + replica["worse"],
            p=2**seeds,
        )
    )
