"""The learned calculator in the findings: its Answer line, Method paragraph, Results blocks and
appendix section (the calculator study's record)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from predcalc.calculator.prose import COMPETENT
from predcalc.calculator.steps import TARGETS
from predcalc.calculator.study import ablation_rows, carriers, error_bound, inside_world, order, speed_summary
from predcalc.readable import percent_number, share
from predcalc.report import prose
from predcalc.report.document import Bullets, Table, Text
from predcalc.report.tables import markdown_table, plain_cell


def _pct(value: float) -> str:
    return share(value, 1)


def section(record: dict, folder: str) -> list[str]:
    """The findings section of the learned calculator."""
    study = record["calculator"]
    seeds = study["seeds"]
    main = study["summary"]["calculator"]
    boxes = study["boxes"]
    rows = []
    for name, value in main.items():
        box = boxes[name]
        rows.append(
            {
                "family": name,
                "digits": "-".join(map(str, box["digits"])),
                "operators": "-".join(map(str, box["operators"])),
                "depth": "-".join(map(str, box["depth"])),
                "n": value["n"],
                "exact (mean)": _pct(value["mean"]),
                "worst seed": _pct(value["min"]),
                "lowest terms": _pct(value["lowest_terms"]),
            }
        )

    steps = []
    for name in seeds[0]["checks"]:
        reads, writes = TARGETS[name]
        steps.append(
            {
                "step": name,
                "reads": reads,
                "trained to write": writes,
                "parameters": f"{seeds[0]['parameters'][name]:,}",
                "reachable inputs": seeds[0]["checks"][name]["inputs"],
                "wrong (worst seed)": max(r["checks"][name]["wrong"] for r in seeds),
                "unseen in training (most)": max(r["coverage"][name]["missing"] for r in seeds),
                "LiteRT vs Keras (inputs differing)": max(r["litert_parity"][name] for r in seeds),
            }
        )
    comparison = pd.DataFrame(
        {
            study["labels"].get(k, k): {
                n: f"{percent_number(v['mean'], 1)} ({percent_number(v['min'], 1)})" for n, v in s.items()
            }
            for k, s in sorted(study["summary"].items(), key=lambda item: order(item[0]))
        }
    )
    comparison.insert(0, "family", comparison.index)
    summary_rows = [
        {
            "model": row["label"],
            "seeds": row["seeds"],
            "expressions a family": row["n"],
            "inside": percent_number(row["inside"], 1),
            "beyond": percent_number(row["beyond"], 1),
            "worst family (mean)": f"{row['worst_family']} {percent_number(row['worst_family_mean'], 1)}",
            "worst seed on a family": percent_number(row["worst_seed"], 1),
        }
        for row in ablation_rows(record)
    ]
    lines = [
        f"### A learned calculator: + - * / with parentheses{_from(record)}",
        "",
        "This section is rung 1 of the ladder, the memorised build (every arithmetic step trained on every "
        "input it can meet, the control on the windows of its traces and top-ups), and its ablations; the "
        "shipped rule build (rungs 2 and 3 of the ladder, defined above) is above and in the Results. Trained on integers of at most 5 digits, 1-4 "
        "operators of `+ - * /`, parenthesis depth at most 2; scored exactly (integers and fractions, no "
        "float) through its exported LiteRT files (`reports/calculator/memorised/model.tflite` for seed 0; "
        "seeds 1-4 are not committed, their scores are in `reports/calculator/parts/`) with the look-up cache. "
        "Boxes are the smallest and largest digits per number, operators and depth found in each family.",
        "",
        markdown_table(pd.DataFrame(rows)),
        "",
        "Every learned step checked on every input that can occur (the controller on every window of token "
        "kinds a valid expression can show):",
        "",
        markdown_table(pd.DataFrame(steps)),
        "",
        "Which choice carries the extrapolation: each ablation swaps one choice and keeps the rest; exact "
        "accuracy (%, mean over families and seeds) inside the training world (families whose every "
        "expression lies in it) and beyond it:",
        "",
        markdown_table(pd.DataFrame(summary_rows)),
        "",
        carriers(record),
        "",
        "The same, family by family (%, mean of seeds, the worst seed in brackets; the ablations and the "
        "control score smaller draws of the same families):",
        "",
        markdown_table(comparison),
        "",
        f"![accuracy by axis]({folder}/accuracy_by_axis.png)",
        "",
    ]
    return lines


def step_rows(record: dict) -> list[dict]:
    """Per step network of the shipped calculator: inputs that can occur, distinct inputs trained on,
    wrong on the inputs it never saw (worst seed), and what that makes it: a memorised table when
    it saw every input.

    Reads the record's top-level ``steps`` (the rule calculator), else the older per-seed checks and
    training coverage (memorised tables with a coded schedule)."""
    study = record["calculator"]
    found = record.get("steps") or study.get("steps")
    if not found:
        seeds = study["seeds"]
        found = {}
        for name in seeds[0]["checks"]:
            reachable = seeds[0]["checks"][name]["inputs"]
            missing = min(r["coverage"][name]["missing"] for r in seeds)
            found[name] = {
                "reachable": reachable,
                "trained_on": reachable - missing,
                "held_out_wrong": max(r["checks"][name]["wrong"] for r in seeds) if missing else None,
            }
    rows = []
    for name, step in found.items():
        seen = step["trained_on"] / step["reachable"] if step["reachable"] else 1.0
        wrong = step.get("held_out_wrong")
        kind = (
            "memorised table (saw every input)"
            if seen >= 1
            else "rule unit (partly built) learned from a third of its inputs"
            if not wrong
            else "not exact on the inputs it never saw"
        )
        rows.append(
            {
                "step": name,
                "reachable": step["reachable"],
                "trained on": step["trained_on"],
                "share": share(seen, 0),
                "wrong on held-out inputs (worst development seed)": "-" if seen >= 1 else wrong,
                "kind": kind,
            }
        )
    return rows


def _from(record: dict) -> str:
    """`` (the notebook)`` that wrote ``record``, or nothing if it does not say."""
    return f" ({record['notebook']})" if record.get("notebook") else ""


def detail_blocks(record: dict) -> list:
    """The Appendix's calculator blocks: what each step saw, the ladder, adversarial digits, the
    development seeds on the held-out draw, speed."""
    study = record["calculator"]
    blocks = [
        Text(
            "What each step network saw in training, of the inputs it can meet (worst of 5 seeds; a step that saw "
            "every input is a memorised table, and its exactness shows no rule learned):"
        ),
        Table(pd.DataFrame(step_rows(record)), cell=plain_cell),
    ]
    blocks += ladder_blocks(record)
    adversarial = (record.get("ladder") or {}).get("adversarial")
    speed = record.get("speed") or {}
    facts = []
    if adversarial:
        facts.append(
            "Adversarial digits (`000...002 * 000...002`, `10^n - 1` chains, alternating 9/0 runs, quotients "
            "with many zero digits; "
            f"{adversarial['rules']['n']} expressions): " + _adversarial_seeds(adversarial)
        )
    if record.get("held_out"):
        facts.append(held_out_sentence(record["held_out"]))
    if "forward" in speed:
        facts.append(speed_summary(study["speed"]))
    if facts:
        blocks.append(Bullets(facts))
    return blocks


def _code_versions(record: dict) -> str:
    """Whether every stored part of the study was computed by the same code (its fingerprint), or by several."""
    versions = record.get("code_versions")
    if not versions:
        return ""
    if len(versions) == 1 and versions[0] != "unknown":
        return f" (every part of the study computed by the same code, fingerprint `{versions[0]}`)"
    return f" (but the study's parts were computed by {len(versions)} versions of the code: {', '.join(versions)})"


def _adversarial_seeds(adversarial: dict) -> str:
    """The rule and memorised rungs' adversarial scores: the mean and worst of their seeds, or seed 0's
    alone in a record that scored only it."""
    seeds = adversarial["rules"].get("seeds", 1)
    if seeds == 1:
        return (
            f"rule calculator seed 0 {_pct(adversarial['rules']['exact'])}, memorised "
            f"{_pct(adversarial['memorised']['exact'])} (the other seeds were not run)."
        )
    return (
        f"rule calculator {_pct(adversarial['rules']['exact'])}, memorised {_pct(adversarial['memorised']['exact'])} "
        f"(mean of {seeds} seeds; worst seed {_pct(adversarial['rules']['min'])} and "
        f"{_pct(adversarial['memorised']['min'])})."
    )


# The ladder's rungs: (key in the record, where its per-family summary is, the per-seed key), in order.
RUNGS = (
    ("memorised", "summary:calculator", "calculator"),
    ("rules", "ladder:rules", None),
    ("answers_only", "summary:answers_only", "answers_only"),
    ("end_to_end", "summary:end_to_end", "end_to_end"),
)


def _rung_summary(record: dict, where: str) -> dict | None:
    part, key = where.split(":")
    source = record["calculator"]["summary"] if part == "summary" else (record.get("ladder") or {})
    found = source.get(key)
    return dict(found) if found else None  # every family, the protocol's fixed sets too (as the per-seed means)


def ladder_rows(record: dict) -> list[dict]:
    """One row per rung: exact accuracy inside and beyond the training world (mean over families,
    with the per-seed range where each seed's mean is stored), the worst family and the worst seed."""
    study = record["calculator"]
    inside = inside_world(study["boxes"], study.get("training_box") or {"digits": 5, "operators": 4, "depth": 2})
    per_seed = study.get("per_seed") or {}
    rows = []
    for rung, where, seed_key in RUNGS:
        families = _rung_summary(record, where)
        if not families:
            continue
        within = [v["mean"] for f, v in families.items() if f in inside]
        beyond = [v["mean"] for f, v in families.items() if f not in inside]
        seeds = next(iter(families.values()))["seeds"]
        everywhere = min(v["min"] for v in families.values())
        row = {"rung": rung, "families": len(families), "seeds": seeds, "n": next(iter(families.values()))["n"]}
        for column, values, key in (("inside", within, "inside"), ("beyond", beyond, "beyond")):
            spread = (
                prose.spread([s[key] for s in per_seed[seed_key]])
                if seed_key in per_seed
                else (
                    "every seed 100.0"
                    if everywhere >= 1.0
                    else f"worst seed on a family {percent_number(everywhere, 1)}"
                )
            )
            row[column] = float(np.mean(values)) if values else None
            row[f"{column} seeds"] = spread
        worst = min(families, key=lambda f: families[f]["mean"])
        row["worst family"] = (worst, families[worst]["mean"])
        row["worst seed"] = everywhere
        rows.append(row)
    return rows


# The ladder's "beyond it" cell of a rung below COMPETENT inside its own training world.
NOT_COMPARED = "not compared"


def _weak(row: dict) -> bool:
    """A trained-end-to-end rung that has not learned its own world (below :data:`COMPETENT` inside)."""
    return row["rung"] in ("answers_only", "end_to_end") and row["inside"] is not None and row["inside"] < COMPETENT


def budget(study: dict, kind: str) -> dict | None:
    """The training budget a rung was given, from its per-seed records: epochs, weights, training
    examples and seconds a seed (a value, or a min-max where the seeds differ)."""
    runs = (study.get("ablations") or {}).get(kind) or []
    if not runs:
        return None

    def span(key, fmt="{:,}"):
        values = [r[key] for r in runs if key in r]
        if not values:
            return None
        low, high = min(values), max(values)
        return fmt.format(low) if low == high else f"{fmt.format(low)}-{fmt.format(high)}"

    return {
        "seeds": len(runs),
        "epochs": span("epochs"),
        "weights": span("parameters"),
        "examples": span("training_sequences") or span("train_expressions"),
        "seconds": span("train_seconds", "{:.0f}"),
    }


def ladder_blocks(record: dict) -> list:
    """The ladder of structure, its definition from a template and one table."""
    study = record["calculator"]
    rows = ladder_rows(record)
    if not rows:
        return []
    labels = {
        "memorised": "1. memorised steps",
        "rules": "2 and 3. rule steps on a third of their inputs, learned schedule",
        "answers_only": "4. " + study["labels"].get("answers_only", "answers only"),
        "end_to_end": "5. " + study["labels"].get("end_to_end", "end to end"),
    }
    table = pd.DataFrame(
        [
            {
                "rung": labels[r["rung"]],
                "families": r["families"],
                "expressions a family": f"{r['n']:,}",
                "inside the training world": ""
                if r["inside"] is None
                else f"{prose.share(r['inside'], 1)} ({r['inside seeds']})",
                "beyond it": ""
                if r["beyond"] is None
                else NOT_COMPARED
                if _weak(r)
                else f"{prose.share(r['beyond'], 1)} ({r['beyond seeds']})",
                "worst family (mean)": f"{r['worst family'][0]} {prose.share(r['worst family'][1], 1)}",
                "worst seed on a family": prose.share(r["worst seed"], 1),
                "seeds": r["seeds"],
            }
            for r in rows
        ]
    )
    weak = [
        {"rung": labels[r["rung"]], "inside": r["inside"], "budget": budget(study, r["rung"])} for r in rows if _weak(r)
    ]
    text = prose.say(
        "calculator_ladder.md.j2",
        code=_code_versions(record),
        size=study["parameters"].get("ablation_size", 100),
        weak=weak,
        competent=COMPETENT,
        not_compared=NOT_COMPARED,
    )
    return [*[Text(t) for t in text], Table(table, cell=plain_cell)]


def held_out_sentence(held_out: dict) -> str:
    """The rule calculator on the draw no choice touched, with the one-sided bound zero wrong answers allow."""
    scores = held_out["families"]
    worst = min(scores, key=lambda name: (scores[name]["min"], scores[name]["mean"]))
    exact = scores[worst]["min"] >= 1.0
    family = min(v["n"] for v in scores.values())
    return " ".join(
        prose.say(
            "calculator_held_out.md.j2",
            held=held_out,
            families=len(scores),
            seeds=next(iter(scores.values()))["seeds"],
            exact=exact,
            bound_family=error_bound(0, family) if exact else None,
            lowest=min(v["mean"] for v in scores.values()),
            worst=worst,
            worst_seed=scores[worst]["min"],
        )
    )


def fresh_rule_seeds(rows: list[dict], competent: float = 0.9) -> dict:
    """The rule steps retrained on fresh seeds, seed by seed: ``complete``, the seeds whose every rule
    step makes no wrong decision on any input (of ``fresh_seeds`` sharing one seed list), and
    ``failing``, each step with seeds that make a wrong decision somewhere: how many, and how many of
    those get under ``competent`` of their own training rows right (a training failure, not a failure
    to generalise)."""
    rows = [r for r in rows if r.get("train_exact")]
    shared = [r for r in rows if r["seeds"] == rows[0]["seeds"]] if rows else []
    complete = sum(
        all(r["held_out_wrong"][i] == 0 and r["train_exact"][i] >= 1.0 for r in shared)
        for i in range(len(shared[0]["seeds"]) if shared else 0)
    )
    failing = [
        {
            "step": r["step"],
            "seeds": sum(w > 0 or t < 1.0 for w, t in zip(r["held_out_wrong"], r["train_exact"])),
            "unfit": sum(t < competent for t in r["train_exact"]),
            "of": len(r["seeds"]),
        }
        for r in shared
        if any(w > 0 or t < 1.0 for w, t in zip(r["held_out_wrong"], r["train_exact"]))
    ]
    # end to end with one fresh step swapped in (the other steps the reference): the lowest seed's share
    swapped = [v for r in shared for v in (r.get("end_to_end") or [])]
    return {
        "fresh_seeds": len(shared[0]["seeds"]) if shared else 0,
        "complete": complete,
        "failing": failing,
        "end_to_end_low": min(swapped) if swapped else None,
    }
