"""The stored edge suites as the Answer reads them: each model's seeds on a suite, the sets its
exported files could not read, a held-out cell's text, two models compared set by set, and how far
retraining moved a stored seed.

The Answer's held-out column is one suite for every model (:data:`HELD_OUT_KIND`, the third held-out
suite, seed 5151), scored through each seed's exported files; the first held-out edge suite (seed
31) stays the default elsewhere in the report.
"""

from __future__ import annotations

import numpy as np

from predcalc.report import prose

# the one held-out suite every model of the Answer's column is scored on, through its exported files
HELD_OUT_KIND = "third_heldout"


def heldout_seeds(findings, name: str, kind: str = "heldout") -> dict[str, dict[str, float]] | None:
    """``{seed: {set: exact accuracy}}`` on a stored edge suite (``kind``: the held-out edge suite, or
    :data:`HELD_OUT_KIND`, the Answer's), sets the model can read, or None."""
    record = findings.edges.get(f"{kind}_record") or {}
    by_seed = (record.get("models") or {}).get(name)
    if not by_seed:
        return None
    return {
        seed: {s: score["accuracy"] for s, score in sets.items() if "accuracy" in score}
        for seed, sets in by_seed.items()
    }


def not_read(findings, name: str, kind: str = HELD_OUT_KIND) -> dict[str, str]:
    """``{set: why}`` of the sets of a stored suite the model's exported files cannot read (longer
    than their input length, or outside the tokeniser's language): not scores of 0."""
    by_seed = ((findings.edges.get(f"{kind}_record") or {}).get("models") or {}).get(name) or {}
    first = next(iter(by_seed.values()), {})
    return {
        s: score.get("too_long") or score.get("not_in_input_language", "")
        for s, score in first.items()
        if "accuracy" not in score
    }


def suite_cell(seeds: dict[str, dict[str, float]], unread: int = 0) -> str:
    """A held-out cell of ``{seed: {set: accuracy}}``: the sets every seed answers exactly (of those
    read), the seeds exact on all of them, the mean over seeds of each seed's mean over the sets read
    with the lowest-highest seed, and the sets not read."""
    per_seed = [float(np.mean(list(sets.values()))) for sets in seeds.values()]
    exact = sum(all(v >= 1.0 for v in sets.values()) for sets in seeds.values())
    names = list(next(iter(seeds.values())))
    read = len(names)
    every_seed = sum(all(sets[name] >= 1.0 for sets in seeds.values()) for name in names)
    text = (
        f"{every_seed} of {read} sets exact on every seed, {exact}/{len(seeds)} seeds exact on all; "
        f"mean {prose.share(float(np.mean(per_seed)), 1)} ({prose.spread(per_seed)})"
    )
    return text + (f"; {unread} not read" if unread else "")
