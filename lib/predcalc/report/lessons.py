"""What we learned and the Limitations: the numbers behind their sentences (the sentences live in
``templates/learned.md.j2`` and ``templates/limitations.md.j2``).

Every comparison follows the report's rule: one model is better than another only when every seed
of one lies on one side of every seed of the other; otherwise the difference is not resolved.
"""

from __future__ import annotations

import numpy as np

from predcalc.report import prose
from predcalc.report.answer import FAMILIES, HELD_OUT_KIND, heldout_seeds, short_name
from predcalc.report.calculator_fresh import calculator_payload
from predcalc.report.document import Bullets, Section

# The scan's ablations (the beyond-the-protocol study): what each removes.
ABLATIONS = {
    "scan_typed_value_gates": "gates that also read the number's value",
    "scan_numeric": "the prior report's numeric tokens instead of typed ones",
    "scan_typed_additive": "an additive value path instead of a multiplicative one",
    "lstm_typed": "an LSTM on the same typed tokens",
}


def verdict(a: list[float], b: list[float]) -> str:
    """ "higher", "lower" (every seed of ``a`` above, or below, every seed of ``b``) or "not resolved"."""
    if min(a) > max(b):
        return "higher"
    if max(a) < min(b):
        return "lower"
    return "not resolved"


def ablation_verdicts(findings, reference: str = "scan_typed", test_set: str = "out") -> list[dict]:
    """Each ablation of the scan against the full model on ``test_set``, seed by seed."""
    if reference not in findings.models:
        return []
    full = findings.accuracy(reference, test_set)
    rows = []
    for name, change in ABLATIONS.items():
        if name not in findings.models:
            continue
        values = findings.accuracy(name, test_set)
        ties = sum(v >= min(full) for v in values)
        rows.append(
            {
                "change": change,
                "mean": float(np.mean(values)),
                "spread": prose.spread(values),
                "verdict": verdict(values, full),
                "ties": ties,
                "seeds": len(values),
            }
        )
    return rows


def learned_facts(findings) -> dict:
    trained = {n for _, names, _ in FAMILIES for n in names}
    exact = [
        n
        for n in trained
        if n in findings.models and all(min(findings.accuracy(n, t)) >= 1.0 for t in ("in", "out", "long"))
    ]
    # the families without an exact trained model: their candidates are the "other" models
    exact_families = {family for family, names, _ in FAMILIES if set(names) & set(exact)}
    others = [n for family, names, _ in FAMILIES if family not in exact_families for n in names if n in findings.models]
    best_other = max(others, key=lambda n: np.mean(findings.accuracy(n, "out"))) if others else None
    held = []
    for n in sorted(exact):
        seeds = heldout_seeds(findings, n, HELD_OUT_KIND)
        if not seeds:
            continue
        per_set = {}
        for sets in seeds.values():
            for s, v in sets.items():
                per_set.setdefault(s, []).append(v)
        held.append(
            {
                "name": short_name(n),
                "seeds": len(seeds),
                "digits_4": max(per_set.get("digits_4", [np.nan])),
                "digits_4_exact": sum(v >= 1.0 for v in per_set.get("digits_4", [])),
                "terms_40": prose.spread(per_set["terms_40"]) if "terms_40" in per_set else None,
                "terms_80": prose.spread(per_set["terms_80"]) if "terms_80" in per_set else None,
            }
        )
    calculator = findings.study("calculator")
    return {
        "ablations": ablation_verdicts(findings),
        "best_other": None
        if best_other is None
        else {
            "name": short_name(best_other),
            "mean": float(np.mean(findings.accuracy(best_other, "out"))),
            "highest": max(max(findings.accuracy(n, "out")) for n in others),
            "count": len(others),
            "families": len({family for family, _, _ in FAMILIES} - exact_families),
        },
        "held": held,
        "calculator": calculator_payload(calculator[0]) if calculator else None,
    }


def learned_section(findings, calculator_lesson) -> Section:
    facts = learned_facts(findings)
    items = prose.bullets("learned.md.j2", **facts)
    if facts["calculator"]:
        items.append(calculator_lesson(facts["calculator"]))
    return Section("learned", "What we learned", [Bullets(items)])
