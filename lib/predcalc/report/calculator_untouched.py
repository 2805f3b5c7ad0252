"""The restart recipe's fresh seeds on a family draw never scored before, in the findings: the facts its
Results paragraph quotes and that paragraph.

The record (:mod:`predcalc.calculator.untouched`, ``calculator_untouched.json`` in the calculator study's run
folder) holds each fresh seed retrained with the frozen recipe, whether its steps reproduced the fresh study's
stored ones, and its calculator's exact answers per family on the draw of the untouched family seed.
"""

from __future__ import annotations

from predcalc.report import prose

#: The untouched draw's record file name, beside the calculator study's metrics.json.
UNTOUCHED_RECORD = "calculator_untouched.json"
#: How the record's ``runtime`` is written in the sentences.
RUNTIMES = {
    "numpy tables": "as NumPy tables",
    "litert": "through their exported LiteRT files",
}


def untouched_facts(record: dict | None) -> dict | None:
    """What the paragraph quotes of the untouched draw (None without a scored record): the family seed, the
    expressions a seed answers, the seeds and how many answer every expression exactly, the lowest-highest
    seed's share, the one-sided 95 % Clopper-Pearson lower bound on the share of exact seeds, how many have
    every step exact on every input, how many reproduced their stored fresh steps, how the steps ran, and
    (``litert``, None where not scored) the same seeds through their exported LiteRT files."""
    summary = (record or {}).get("summary")
    if not summary:
        return None
    seeds = summary["seeds"]
    return {
        "family_seed": record["draw"]["family_seed"],
        "families": len(record["draw"]["families"]),
        "per_family": record["draw"]["n"],
        "n": summary["n"],
        "seeds": len(seeds),
        "list": prose.seeds_list(seeds),
        "exact": summary["exact_seeds"],
        "spread": prose.spread([e / summary["n"] for e in summary["exact"]]),
        "lower_bound": prose.share(summary["lower_bound"], 1),
        "confidence": prose.share(summary["confidence"], 0),
        "complete": summary["complete"],
        "reproduced": summary["reproduced"],
        "runtime": RUNTIMES[record["runtime"]],
        "litert": _litert_facts(record.get("litert")),
    }


def _litert_facts(litert: dict | None) -> dict | None:
    """Each seed's steps exported as one LiteRT file and its calculator scored through that file: how many
    seeds answer every expression exactly, the lowest-highest share, the inputs on which a signature decides
    otherwise than its network (every input of every step's domain), how many kept the same starts."""
    summary = (litert or {}).get("summary")
    if not summary:
        return None
    return {
        "exact": summary["exact_seeds"],
        "spread": prose.spread([e / summary["n"] for e in summary["exact"]]),
        "lower_bound": prose.share(summary["lower_bound"], 1),
        "mismatches": summary["mismatches"],
        "same_starts": summary["same_starts"],
    }
