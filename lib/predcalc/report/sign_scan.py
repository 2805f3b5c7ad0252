"""The sign scan's facts the Answer and Limitations quote from its record (notebook 33's metrics):
its ablations that break exactness on large numbers, one ablation's exact seeds, and the side probe's
rounded-gate transformer."""

from __future__ import annotations

from predcalc.report import prose

ROUNDED_PROBE = "transformer4_local_rounded"


def rounded_probe(record: dict) -> dict | None:
    """The side probe's transformer with rounded gates: its seeds, the development sets every seed
    answers exactly, and those some seed does not; None where the probe did not run."""
    runs = (record.get("transformer") or {}).get("runs", {}).get(ROUNDED_PROBE) or {}
    if not runs:
        return None
    sets = list(next(iter(runs.values())))
    exact = [n for n in sets if all(scores[n] >= 1.0 for scores in runs.values())]
    return {
        "seeds": len(runs),
        "epochs": record["transformer"].get("epochs"),
        "exact": exact,
        "not_exact": [f"{n} {prose.spread([scores[n] for scores in runs.values()])} %" for n in sets if n not in exact],
    }


# The sign scan's ablations the Answer names, in its words, and its development sets of 3 or more digits.
BREAKS = {
    "no_clamp": "without the clamp",
    "wide_clamp": "with the clamp at ±2",
    "no_straight_through": "without straight-through gates",
}
LARGE_NUMBER_SETS = ("digits_exactly_3", "digits_exactly_4", "terms_30_digits_3")


def breaking_ablations(record: dict) -> list[str]:
    """The ablations of :data:`BREAKS` under which no seed is exact on any development set of numbers
    of 3 or more digits, in the Answer's words."""
    runs = record["ablation"].get("runs") or {}
    return [
        words
        for name, words in BREAKS.items()
        if runs.get(name) and all(scores.get(s, 0.0) < 1.0 for scores in runs[name].values() for s in LARGE_NUMBER_SETS)
    ]


def ablation_exact(record: dict, name: str) -> dict | None:
    """One ablation of the trained exact scan: its seeds exact on every development set, of how many,
    and each seed's lowest development-set score; None where the record did not run it."""
    runs = (record["ablation"].get("runs") or {}).get(name) or {}
    if not runs:
        return None
    return {
        "exact": sum(all(v >= 1.0 for v in sets.values()) for sets in runs.values()),
        "seeds": len(runs),
        "worst": prose.share(min(min(sets.values()) for sets in runs.values()), 1),
    }
