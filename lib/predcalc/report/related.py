"""The Related work section: the prior report and the published anchors, each result of this
project placed beside them. The sentences live in ``templates/related_work.md.j2``; this module
gathers the project's numbers they quote (from the stored runs, the edge suites and the
calculator's record)."""

from __future__ import annotations

import numpy as np

from predcalc.report import prose
from predcalc.report.answer import HELD_OUT_KIND, heldout_seeds, short_name, trained_exact_facts
from predcalc.report.calculator import calculator_facts
from predcalc.report.document import Bullets, Section, Text

PRIOR_CITATION = (
    'Anton Mukin, "Neural Predictive Calculator: Findings" (October 2025), code in the public repository '
    "[AntonStantan/matura](https://github.com/AntonStantan/matura)"
)


def _set_spread(findings, name: str, set_name: str) -> str | None:
    seeds = heldout_seeds(findings, name, HELD_OUT_KIND)
    if not seeds:
        return None
    values = [sets[set_name] for sets in seeds.values() if set_name in sets]
    return prose.spread(values) if values else None


def related_facts(findings) -> dict:
    """The project's numbers the Related work quotes; a missing study leaves its entry None."""
    out: dict = {"prior": PRIOR_CITATION, "replicas": None, "scan": None, "built": None, "calculator": None}
    replicas = [
        n
        for n in ("fnn2", "rnn2", "bilstm_attention", "transformer4_reference", "transformer5_reference")
        if n in findings.models
    ]
    if replicas:
        means = [float(np.mean(findings.accuracy(n, "out"))) for n in replicas]
        out["replicas"] = {
            "count": len(replicas),
            "means": prose.spread(means),  # the lowest and highest model mean
            "highest": max(max(findings.accuracy(n, "out")) for n in replicas),
        }
    if "scan_typed" in findings.models:
        out["scan"] = {
            "digits_3": _set_spread(findings, "scan_typed", "digits_3"),
            "digits_4": _set_spread(findings, "scan_typed", "digits_4"),
            "terms_80": _set_spread(findings, "scan_typed", "terms_80"),
            "seeds": len(findings.accuracy("scan_typed", "in")),
        }
    seeds = heldout_seeds(findings, "scan_typed_solved", HELD_OUT_KIND)
    if seeds:
        sets = sorted({name for by_set in seeds.values() for name in by_set})
        missed = [name for name in sets if any(by_set.get(name, 1.0) < 1.0 for by_set in seeds.values())]
        out["built"] = {"exact": not missed, "seeds": len(seeds), "sets": len(sets), "missed": missed}
    tokens = [n for n in ("transformer_tokens_reversed", "lstm_tokens_reversed") if n in findings.models]
    if tokens:
        best = max(tokens, key=lambda n: np.mean(findings.accuracy(n, "out")))
        out["reversed"] = {
            "mean": float(np.mean(findings.accuracy(best, "out"))),
            "spread": prose.spread(findings.accuracy(best, "out")),
        }
    else:
        out["reversed"] = None
    efficient = [n for n in ("min_gru", "min_lstm", "slstm", "mlstm_stable", "mamba_bounded") if n in findings.models]
    out["efficient"] = (
        {
            "highest_out": max(max(findings.accuracy(n, "out")) for n in efficient),
            "count": len(efficient),
            "names": [short_name(n) for n in efficient],
        }
        if efficient
        else None
    )
    out["units"] = [
        {
            "name": short_name(n),
            "seeds": len(findings.accuracy(n, "in")),
            **{t: sum(v >= 1.0 for v in findings.accuracy(n, t)) for t in ("in", "out", "long")},
            "long_spread": prose.spread(findings.accuracy(n, "long")),
        }
        for n in ("nau_nmu", "nau_nmu_dense")
        if n in findings.models
    ]
    records = findings.study("calculator")
    if records:
        out["calculator"] = calculator_facts(records[0].to_json())
    out["trained_exact"] = trained_exact_facts(findings)
    return out


def related_section(findings) -> Section:
    """Related work: one bullet per line of work, this project's result beside it."""
    facts = related_facts(findings)
    lead = prose.say("related_lead.md.j2", **facts)
    return Section(
        "related", "Related work", [*[Text(p) for p in lead], Bullets(prose.bullets("related_work.md.j2", **facts))]
    )
