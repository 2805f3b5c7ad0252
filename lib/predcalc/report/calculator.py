"""The learned calculator in the findings: the answer lines and its section (40_calculator)."""

from __future__ import annotations

import numpy as np

from predcalc.calculator.steps import TARGETS
from predcalc.calculator.study import ablation_rows, carriers, order, speed_summary
from predcalc.report.anchors import SEED_LLM_ROWS
from predcalc.report.tables import markdown_table

GEMINI = "Gemini 2.5 Pro"


def _pct(value: float) -> str:
    return f"{100 * value:.1f} %" if value < 0.9995 or value == 1 else f"{100 * value:.2f} %"


def answer_lines(record: dict) -> list[str]:
    """The Answer section's bullets on the calculator, from its metrics."""
    study = record["calculator"]
    main = study["summary"]["calculator"]
    seeds = study["seeds"]
    worst = min(main, key=lambda name: main[name]["mean"])
    boxes = study["boxes"]
    most = {key: max(box[key][1] for box in boxes.values()) for key in ("digits", "operators", "depth")}
    answer_digits = max(box["answer_digits"] for box in boxes.values())
    lines = [
        f"- All four operators with parentheses (40_calculator): the **learned calculator** "
        f"({seeds[0]['parameters']['total']:,} parameters in {len(seeds[0]['parameters']) - 1} step networks, "
        f"{len(seeds)} seeds, at most {max(r['train_seconds'] for r in seeds):.0f} s of training each), run through "
        f"its LiteRT file, is exact on "
        + (f"every one of the {sum(v['n'] for v in main.values()):,} expressions of its {len(main)} test families, "
           f"for every seed" if main[worst]["min"] == 1 else
           f"at least {_pct(main[worst]['mean'])} of every one of its {len(main)} test families (mean of seeds; "
           f"worst {worst})")
        + f", from a training world of at most 5 digits, 4 operators and "
        f"depth 2 to numbers of up to {most['digits']} digits, {most['operators']} operators, depth {most['depth']} "
        f"and answers of up to {answer_digits} digits, with `/` giving exact fractions.",
        "  - Learned: which tokens are ready to reduce, and every digit, carry, borrow, comparison, sign and "
        "quotient digit (7 small networks, each checked on every input that can occur). Code: the lexer, the "
        "loop, digit alignment, the splice of a result into the token list and the sign of zero.",
    ]
    gemini = SEED_LLM_ROWS[GEMINI]
    lines.append(f"  - On the protocol's own test sets (whole, as the seed scored its LLMs): "
                 f"{_pct(main['seed_in']['mean'])} in range, {_pct(main['seed_out']['mean'])} out of range, "
                 f"{_pct(main['seed_long']['mean'])} long (2-8 numbers); the prior report's best fine-tuned LLM ({GEMINI}, "
                 f"published): {100 * gemini['accuracy_in']:.2f} / {100 * gemini['accuracy_out']:.2f} / "
                 f"{100 * gemini['accuracy_long']:.1f} %. The calculator was trained on its own world "
                 f"(up to 5 digits, 4 operators), not on the prior report's training split.")
    summary = study["summary"]
    for kind in ("pick", "continuous_state", "answers_only", "uniform", "end_to_end", "untrained"):
        if kind in summary:
            means = [v["mean"] for v in summary[kind].values()]
            seeds_run = next(iter(summary[kind].values()))["seeds"]
            lines.append(f"  - {study['labels'][kind]} ({seeds_run} seed{'s' * (seeds_run != 1)}, "
                         f"{next(iter(summary[kind].values()))['n']} expressions a family): mean "
                         f"{100 * np.mean(means):.1f} % over the families (worst {100 * min(means):.1f} %).")
    carried = carriers(record)
    if carried:
        lines.append(f"  - {carried}")
    lines.append(f"  - {speed_summary(study['speed'])}")
    return lines


def section(record: dict, folder: str) -> list[str]:
    """The findings section of the learned calculator."""
    study = record["calculator"]
    seeds = study["seeds"]
    main = study["summary"]["calculator"]
    boxes = study["boxes"]
    rows = []
    for name, value in main.items():
        box = boxes[name]
        rows.append({"family": name, "digits": "-".join(map(str, box["digits"])),
                     "operators": "-".join(map(str, box["operators"])), "depth": "-".join(map(str, box["depth"])),
                     "n": value["n"], "exact (mean)": _pct(value["mean"]), "worst seed": _pct(value["min"]),
                     "lowest terms": _pct(value["lowest_terms"])})
    import pandas as pd

    steps = []
    for name in seeds[0]["checks"]:
        reads, writes = TARGETS[name]
        steps.append({"step": name, "reads": reads, "trained to write": writes,
                      "parameters": f"{seeds[0]['parameters'][name]:,}",
                      "reachable inputs": seeds[0]["checks"][name]["inputs"],
                      "wrong (worst seed)": max(r["checks"][name]["wrong"] for r in seeds),
                      "unseen in training (most)": max(r["coverage"][name]["missing"] for r in seeds),
                      "LiteRT vs Keras (inputs differing)": max(r["litert_parity"][name] for r in seeds)})
    comparison = pd.DataFrame({study["labels"].get(k, k): {n: f"{100 * v['mean']:.1f}" for n, v in s.items()}
                               for k, s in sorted(study["summary"].items(), key=lambda item: order(item[0]))})
    comparison.insert(0, "family", comparison.index)
    summary_rows = [{"model": row["label"], "seeds": row["seeds"], "expressions a family": row["n"],
                     "inside": f"{100 * row['inside']:.1f}", "beyond": f"{100 * row['beyond']:.1f}",
                     "worst family (mean)": f"{row['worst_family']} {100 * row['worst_family_mean']:.1f}",
                     "worst seed on a family": f"{100 * row['worst_seed']:.1f}"} for row in ablation_rows(record)]
    speed = study["speed"]
    lines = ["### A learned calculator: + - * / with parentheses (40_calculator)", "",
             "Trained on integers of at most 5 digits, 1-4 operators of `+ - * /`, parenthesis depth at most 2; "
             "scored exactly (integers and fractions, no float) through the exported LiteRT file "
             "`reports/calculator/model.tflite` (seed 0; the other seeds beside it). Boxes are the smallest and "
             "largest digits per number, operators and depth found in each family.", "",
             markdown_table(pd.DataFrame(rows)), "",
             "Every learned step checked on every input that can occur (the controller on every window of token "
             "kinds a valid expression can show):", "", markdown_table(pd.DataFrame(steps)), "",
             "Which choice carries the extrapolation: each ablation swaps one choice and keeps the rest; exact "
             "accuracy (%, mean over families and seeds) inside the training world (families whose every "
             "expression lies in it) and beyond it:", "", markdown_table(pd.DataFrame(summary_rows)), "",
             carriers(record), "",
             "The same, family by family (%, mean of seeds; the ablations and the control score smaller draws "
             "of the same families):", "", markdown_table(comparison), "",
             f"![accuracy by axis]({folder}/accuracy_by_axis.png)", "",
             f"Speed ({speed['n']:,} expressions of {speed['operators']} operators, best of three, this 2-core CPU): "
             f"the LiteRT calculator takes {speed['integers']['calculator_seconds']:.2f} s against Python's exact "
             f"evaluator's {speed['integers']['python_seconds']:.2f} s on integers "
             f"({speed['integers']['ratio']:.1f}x), {speed['with_division']['ratio']:.1f}x on "
             f"{speed['with_division']['n']:,} expressions with division; one "
             f"expression takes {speed['latency_ms']['median']:.1f} ms.", ""]
    return lines


def step_rows(record: dict) -> list[dict]:
    """Per step network: inputs that can occur, distinct inputs trained on, wrong on the inputs it
    never saw (worst seed), and what that makes it: a memorised table when it saw every input.

    Reads the record's ``steps`` entry where the study wrote one, else its per-seed checks and
    training coverage."""
    study = record["calculator"]
    if "steps" in study:
        found = study["steps"]
    else:
        seeds = study["seeds"]
        found = {}
        for name in seeds[0]["checks"]:
            reachable = seeds[0]["checks"][name]["inputs"]
            missing = min(r["coverage"][name]["missing"] for r in seeds)
            found[name] = {"reachable": reachable, "trained_on": reachable - missing,
                           "held_out_wrong": max(r["checks"][name]["wrong"] for r in seeds) if missing else None}
    rows = []
    for name, step in found.items():
        share = step["trained_on"] / step["reachable"] if step["reachable"] else 1.0
        kind = "memorised table (saw every input)" if share >= 1 else "learned from part of its inputs"
        rows.append({"step": name, "reachable": step["reachable"], "trained on": step["trained_on"],
                     "share": f"{100 * share:.0f} %",
                     "wrong on held-out": "-" if step.get("held_out_wrong") is None else step["held_out_wrong"],
                     "kind": kind})
    return rows


def inference_path(study: dict) -> str:
    """What runs when the calculator answers: forward passes, or tables the networks filled at load."""
    speed = study["speed"]
    if "forward" in speed:
        return "batched forward passes of the LiteRT file's networks"
    return ("NumPy look-ups in tables that the LiteRT file's networks fill once at load (one pass over each "
            "step's finite input domain); no network runs while an expression is answered")


def headline(record: dict) -> str:
    """The Answer's bullet on the calculator: exactness, and what it is made of."""
    study = record["calculator"]
    main = study["summary"]["calculator"]
    rows = step_rows(record)
    memorised = sum(row["share"] == "100 %" for row in rows)
    exact = all(v["min"] == 1 for v in main.values())
    reach = (f"exact on all {sum(v['n'] for v in main.values()):,} expressions of its {len(main)} families (5 seeds)"
             if exact else f"at least {_pct(min(v['mean'] for v in main.values()))} exact on each of {len(main)} "
             "families")
    return (f"The learned calculator (40) is {reach}, by code and tables: {memorised} of {len(rows)} step networks "
            "saw every input they can meet; code runs the digit algorithms.")


def mechanism(record: dict) -> str:
    """How the calculator works, for the Method: code, networks, and what runs at inference."""
    study = record["calculator"]
    rows = step_rows(record)
    return ("**Learned calculator** (40_calculator): code lexes the expression into signed numbers and operators "
            "and repeats a loop; a control network marks which operator is ready to reduce; step networks "
            f"({', '.join(r['step'] for r in rows)}) map small discrete inputs (digits, carries, signs) to outputs, "
            "and code runs schoolbook addition, multiplication, long division and Euclid's algorithm over digit "
            "arrays with them, and splices each result into the token list. At inference: "
            f"{inference_path(study)}.")


def results_blocks(record: dict) -> list:
    """The Results' calculator blocks: the step table, exactness by family kind, and speed of each path."""
    import pandas as pd

    from predcalc.report.document import Table, Text
    from predcalc.report.tables import plain_cell

    study = record["calculator"]
    main = study["summary"]["calculator"]
    boxes = study["boxes"]
    most = {key: max(box[key][1] for box in boxes.values()) for key in ("digits", "operators", "depth")}
    speed = study["speed"]
    blocks = [
        Text(f"Training world: integers of at most {study['training_box']['digits']} digits, 1-"
             f"{study['training_box']['operators']} operators of `+ - * /`, depth at most "
             f"{study['training_box']['depth']}. Test families reach {most['digits']} digits, {most['operators']} "
             f"operators and depth {most['depth']}; scored exactly (fractions, no float) through "
             "`reports/calculator/model.tflite`. Worst family mean over 5 seeds: "
             f"{_pct(min(v['mean'] for v in main.values()))}."),
        Text("What each step network saw in training, of the inputs it can meet (a step that saw every input is "
             "a memorised table: its exactness shows no rule learned):"),
        Table(pd.DataFrame(step_rows(record)), cell=plain_cell),
        Text(f"At inference: {inference_path(study)}. Speed on {speed['n']:,} expressions of {speed['operators']} "
             f"operators (one run, this 2-core CPU): {speed['integers']['ratio']:.1f}x Python's `fractions` time on "
             f"integers, {speed['with_division']['ratio']:.1f}x with division"
             + (f"; with real forward passes {speed['forward']['integers']:.1f}x and "
                f"{speed['forward']['division']:.1f}x." if "forward" in speed else
                "; the look-up path only (forward passes were not timed in this run).")),
    ]
    return blocks
