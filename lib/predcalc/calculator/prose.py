"""The calculator study's sentences, from its record's numbers (none typed)."""

from __future__ import annotations

import numpy as np

from predcalc.calculator.tables import (
    ABLATION_LABELS,
    CHOICES,
    COMPETENT,
    LOST_INSIDE,
    SPEED_GOAL,
    ablation_rows,
    error_bound,
    speed_verdicts,
)


def ladder_facts(record: dict) -> list[str]:
    """Sentences for the notebook's conclusion from a metrics.json's ``steps``, ``ladder`` and
    ``held_out`` (numbers read, not typed; the speed is :func:`speed_summary`'s)."""
    steps, lines = record["steps"], []
    learned = [
        f"`{name}` {v['trained_on']} of {v['reachable']} ({100 * v['trained_on'] / v['reachable']:.0f} %), "
        f"{v['held_out_wrong']} wrong on the rest"
        for name, v in steps.items()
        if not v["memorised"]
    ]
    memorised = [f"`{name}` ({v['reachable']} rows)" for name, v in steps.items() if v["memorised"]]
    seeds = next(iter(steps.values()))["seeds"]
    lines.append(
        f"- Rule steps, trained on a share of their reachable inputs drawn from traces of short expressions "
        f"(worst of {seeds} seed(s)): "
        + "; ".join(learned)
        + ". Memorised tiny tables, trained on every row: "
        + ", ".join(memorised)
        + "."
    )
    rules = record["ladder"]["rules"]
    worst = min(rules, key=lambda name: rules[name]["mean"])
    lines.append(
        "- Through the LiteRT file with forward passes, the rule calculator is "
        + (
            "exact on every answer of every family"
            if min(v["min"] for v in rules.values()) == 1
            else f"exact on {100 * rules[worst]['mean']:.2f} % or more of every family{_worst(rules, worst)}"
        )
        + f", {seeds} seed(s)."
    )
    if "adversarial" in record["ladder"]:
        lines.append(
            "- Adversarial digits: "
            + ", ".join(
                f"{label} {100 * v['exact']:.1f} % of {v['n']}"
                + (f" (mean of {v['seeds']} seeds, worst {100 * v['min']:.1f} %)" if v.get("seeds", 1) > 1 else "")
                for label, v in record["ladder"]["adversarial"].items()
            )
            + "."
        )
    if "held_out" in record:
        lines.append(f"- {held_out_sentence(record['held_out'])}")
    return lines


def _worst(scores: dict, worst: str) -> str:
    """`` (worst: name)`` where the worst family falls short of exact, else nothing (no tie is named)."""
    return f" (worst: {worst})" if scores[worst]["mean"] < 1 else ""


def held_out_sentence(held_out: dict) -> str:
    """One sentence on the rule calculator's score on the draw no choice touched, with the error rate
    that zero wrong answers still allow (one-sided 95 % confidence) where every seed is exact
    (``templates/held_out.md.j2``)."""
    from predcalc.calculator.templates import render  # Jinja2 only when text is rendered

    scores = held_out["families"]
    worst = min(scores, key=lambda name: (scores[name]["min"], scores[name]["mean"]))
    exact = scores[worst]["min"] == 1
    return render(
        "held_out.md.j2",
        held_out=held_out,
        families=len(scores),
        seeds=next(iter(scores.values()))["seeds"],
        exact=exact,
        bound_family=100 * error_bound(0, min(v["n"] for v in scores.values())) if exact else None,
        lowest=100 * min(v["mean"] for v in scores.values()),
        worst_min=100 * scores[worst]["min"],
        worst=worst,
    ).strip()


def carriers(record: dict) -> str:
    """What each swapped choice costs inside the training world and beyond it, against the model that
    keeps the choice. A gap beyond is called resolved only where the two models' per-seed means over
    the families beyond do not overlap (min-max); the calculator and the swaps score different draws."""
    rows = {row["kind"]: row for row in ablation_rows(record)}
    study = record["calculator"]
    seeds = study.get("per_seed", {})
    swapped = sorted(
        (kind for kind in CHOICES if kind in rows and CHOICES[kind] in rows),
        key=lambda kind: rows[kind]["beyond"] - rows[CHOICES[kind]]["beyond"],
    )
    if not swapped:
        return ""
    parts, unresolved, inside = [], [], []
    for kind in swapped:
        row, reference = rows[kind], rows[CHOICES[kind]]
        if row["inside"] < COMPETENT:  # it has not learned its own world: its score beyond it is no comparison
            parts.append(
                f"{row['label']}: {100 * row['inside']:.1f} % inside the training world, below "
                f"{100 * COMPETENT:.0f} %, so not trained to competence and not compared beyond it"
            )
            continue
        against = "" if CHOICES[kind] == "calculator" else f" against the {reference['label']}"
        parts.append(
            f"{row['label']}: {100 * (reference['beyond'] - row['beyond']):.1f} points lost beyond it and "
            f"{100 * (reference['inside'] - row['inside']):.1f} inside{against}"
        )
        if kind in seeds and CHOICES[kind] in seeds and not _separated(seeds[kind], seeds[CHOICES[kind]]):
            unresolved.append(row["label"])
        if reference["inside"] - row["inside"] >= LOST_INSIDE:
            inside.append(row["label"])
    text = (
        f"Beyond the training world the calculator is exact on {100 * rows['calculator']['beyond']:.1f} % "
        f"(mean over families and seeds, {rows['calculator']['n']} expressions a family; the swaps score "
        f"draws of {rows[swapped[0]]['n']}). One choice swapped at a time: " + "; ".join(parts) + "."
    )
    if inside:
        one = len(inside) == 1
        text += (
            f" Losing {100 * LOST_INSIDE:.0f} points or more inside the training world as well, "
            + " and ".join(inside)
            + (" fails" if one else " fail")
            + " to learn the step itself: "
            + ("its" if one else "their")
            + " loss beyond it is not specific to extrapolation."
        )
    if unresolved:
        text += " Not resolved by the seeds' min-max ranges: " + "; ".join(unresolved) + "."
    if "end_to_end" in rows:
        row = rows["end_to_end"]
        text += (
            f" One end-to-end model on the same world reaches {100 * row['inside']:.1f} % inside and "
            f"{100 * row['beyond']:.1f} % beyond"
            + (
                f": below {100 * COMPETENT:.0f} % inside its own world it is not trained to competence, so it says "
                "nothing about extrapolation."
                if row["inside"] < COMPETENT
                else "."
            )
        )
    return text


def _separated(a: list[dict], b: list[dict]) -> bool:
    """Whether two models' per-seed means beyond the training world have disjoint min-max ranges."""
    first, second = [r["beyond"] for r in a], [r["beyond"] for r in b]
    return max(first) < min(second) or max(second) < min(first)


def conclusion(record: dict) -> str:
    """A few sentences of what the study measured, from its numbers: the memorised rung and the
    ablations, then the rule rung (:func:`ladder_facts`) where the record has it."""
    full, record = record, record["calculator"]
    main = record["summary"]["calculator"]
    worst = min(main, key=lambda name: main[name]["mean"])
    seeds = record["seeds"]
    lines = [
        f"- Rung 1, every step memorised ({seeds[0]['parameters']['total']:,} parameters, at most "
        f"{max(r['train_seconds'] for r in seeds):.0f} s of training per seed, {len(seeds)} seed(s)) is "
        + (
            "exact on every answer of every family."
            if min(v["min"] for v in main.values()) == 1
            else f"exact on {100 * min(v['mean'] for v in main.values()):.2f} % or more of every family"
            f"{_worst(main, worst)}; mean over families {100 * np.mean([v['mean'] for v in main.values()]):.2f} %."
        ),
        f"- Every learned step was checked on every input that can occur: "
        f"{sum(max(r['checks'][s]['wrong'] for r in seeds) for s in seeds[0]['checks'])} wrong decisions in the "
        f"worst seed.",
    ]
    for kind, summary_of in record["summary"].items():
        if kind == "calculator":
            continue
        mean = np.mean([v["mean"] for v in summary_of.values()])
        lines.append(
            f"- {ABLATION_LABELS.get(kind, kind)}: mean {100 * mean:.1f} % over families "
            f"(iid {100 * summary_of['iid']['mean']:.1f} %, digits 21-50 "
            f"{100 * summary_of['digits_21_50']['mean']:.1f} %, depth 7-10 "
            f"{100 * summary_of['depth_7_10']['mean']:.1f} %)."
        )
    carried = carriers({"calculator": record})
    if carried:
        lines.append(f"- {carried}")
    lines.append(f"- {speed_summary(record['speed'])}")
    if "steps" in full:
        lines += ladder_facts(full)
    return "\n".join(lines)


def speed_summary(speed: dict, goal: float = SPEED_GOAL) -> str:
    """The bench's time ratios to Python (median and range of the rounds) for both paths, the latency of
    one expression, and whether forward passes meet the goal of ``goal`` x Python's time
    (``templates/speed.md.j2``)."""
    from predcalc.calculator.templates import render  # Jinja2 only when text is rendered

    return render(
        "speed.md.j2", speed=speed, repeats=speed.get("repeats", 1), goal=goal, verdicts=speed_verdicts(speed, goal)
    ).strip()
