"""The calculator study's tables: labels of its models, which families lie inside the training
world, and the frames and rows the notebook and the report show."""

from __future__ import annotations

import numpy as np

AXIS_FAMILIES = {
    "digits": ("iid", "digits_6_10", "digits_11_20", "digits_21_50"),
    "operators": ("iid", "ops_5_10", "ops_11_20", "ops_21_40"),
    "depth": ("iid", "depth_3_4", "depth_5_6", "depth_7_10"),
}


TRAINING_BOX = {"digits": 5, "operators": 4, "depth": 2}


ABLATION_LABELS = {
    "calculator": "rung 1, memorised steps (readiness control, discrete states, coverage-checked steps)",
    "pick": "control trained on the reference's single pick",
    "continuous_state": "adder with a continuous GRU state (digit and carry targets)",
    "answers_only": "adder GRU trained on result digits only (no carry targets)",
    "uniform": "steps trained on uniform digits, no coverage check",
    "end_to_end": "one end-to-end character LSTM (char_lstm_tokens)",
    "untrained": "control: the same networks, untrained",
}


# Each ablation swaps one design choice; the model it is compared with has that choice and keeps the
# rest. The supervision ablation swaps the targets of the continuous-state adder (a discrete state
# fed back has no gradient, so it cannot be trained from final answers alone).
CHOICES = {
    "continuous_state": "calculator",
    "pick": "calculator",
    "uniform": "calculator",
    "answers_only": "continuous_state",
}


def order(kind: str) -> int:
    """Where a model of the study stands in tables: the calculator, the ablations, the baseline, the control."""
    order = ["calculator", *CHOICES, "end_to_end", "untrained"]
    return order.index(kind) if kind in order else len(order)


def inside_world(boxes: dict, box: dict = TRAINING_BOX) -> set[str]:
    """The families whose every expression lies inside the training world's box."""
    return {name for name, found in boxes.items() if all(found[axis][1] <= box[axis] for axis in box)}


def family_frame(summary_of: dict):
    """Mean and worst-seed exact accuracy (%) per family, and the share in lowest terms."""
    import pandas as pd  # tables only when the notebook shows them

    return pd.DataFrame(
        {
            name: {
                "exact %": 100 * v["mean"],
                "worst seed %": 100 * v["min"],
                "lowest terms %": 100 * v["lowest_terms"],
                "n": v["n"],
                "seeds": v["seeds"],
            }
            for name, v in summary_of.items()
        }
    ).T.round(2)


def check_frame(records: list[dict]):
    """Per step: reachable inputs, wrong decisions (worst seed), inputs missing from training, parameters."""
    import pandas as pd  # tables only when the notebook shows them

    rows = {}
    for name in records[0]["checks"]:
        rows[name] = {
            "inputs": records[0]["checks"][name]["inputs"],
            "wrong (worst seed)": max(r["checks"][name]["wrong"] for r in records),
            "missing in training (most)": max(r["coverage"][name]["missing"] for r in records),
            "parameters": records[0]["parameters"][name],
            "epochs (most)": max(r["steps"][name]["epochs"] for r in records),
            "LiteRT disagreements": max(r["litert_parity"][name] for r in records),
        }
    return pd.DataFrame(rows).T


def comparison_frame(comparison: dict):
    """Mean exact accuracy (%) of the calculator, each ablation and the control, family by family."""
    import pandas as pd  # tables only when the notebook shows them

    return pd.DataFrame(
        {label: {name: 100 * v["mean"] for name, v in summary_of.items()} for label, summary_of in comparison.items()}
    ).round(1)


def ablation_rows(record: dict) -> list[dict]:
    """Per model of the study (the calculator, each ablation, the baseline, the control): seeds, mean
    exact accuracy over the families inside and beyond the training world, the worst family, and the
    points lost beyond it against the calculator (the ablations score smaller draws of the families)."""
    study = record["calculator"]
    inside = inside_world(study["boxes"], study.get("training_box", TRAINING_BOX))
    rows = []
    for kind, summary_of in study["summary"].items():
        within = [v["mean"] for name, v in summary_of.items() if name in inside]
        beyond = [v["mean"] for name, v in summary_of.items() if name not in inside]
        worst = min(summary_of, key=lambda name: summary_of[name]["mean"])
        rows.append(
            {
                "kind": kind,
                "label": study["labels"].get(kind, kind),
                "seeds": next(iter(summary_of.values()))["seeds"],
                "n": next(iter(summary_of.values()))["n"],
                "inside": float(np.mean(within)),
                "beyond": float(np.mean(beyond)),
                "worst_family": worst,
                "worst_family_mean": summary_of[worst]["mean"],
                "worst_seed": float(min(v["min"] for v in summary_of.values())),
            }
        )
    rows.sort(key=lambda row: order(row["kind"]))
    calculator = next(row for row in rows if row["kind"] == "calculator")
    for row in rows:
        row["lost_beyond"] = calculator["beyond"] - row["beyond"]
    return rows


#: The in-world exact share a model needs before its score beyond the world says anything about
#: extrapolation (below it, it has not learned its own world).
COMPETENT = 0.9
#: A swap that loses at least this much inside the training world fails to learn its step there,
#: so its loss beyond the world says nothing specific about extrapolation.
LOST_INSIDE = 0.05
#: The speed goal of the calculator: forward passes within this many times Python's time.
SPEED_GOAL = 10.0
#: The confidence of the study's error bounds (one-sided, exact binomial).
CONFIDENCE = 0.95


def error_bound(wrong: int, n: int, confidence: float = CONFIDENCE) -> float:
    """One-sided exact (Clopper-Pearson) upper bound on the error rate after ``wrong`` of ``n``."""
    from statsmodels.stats.proportion import proportion_confint  # statsmodels only when a bound is computed

    return float(proportion_confint(wrong, n, alpha=2 * (1 - confidence), method="beta")[1])


def _separated(a: list[dict], b: list[dict]) -> bool:
    """Whether two models' per-seed means beyond the training world have disjoint min-max ranges."""
    first, second = [r["beyond"] for r in a], [r["beyond"] for r in b]
    return max(first) < min(second) or max(second) < min(first)


def carrier_rows(record: dict) -> list[dict]:
    """:func:`ablation_rows`, each with ``competent`` (at least :data:`COMPETENT` inside the training
    world) and, for a swap of :data:`CHOICES`, the model it is compared with (``against``: the one that
    keeps the choice), the points it loses beyond and inside against that model, ``learns_step`` (less
    than :data:`LOST_INSIDE` lost inside) and ``resolved`` (the two models' per-seed means beyond have
    disjoint min-max ranges; None without per-seed records). The calculator and the swaps score
    different draws of the families."""
    rows = ablation_rows(record)
    by_kind = {row["kind"]: row for row in rows}
    seeds = record["calculator"].get("per_seed", {})
    for row in rows:
        row["competent"] = row["inside"] >= COMPETENT
        against = CHOICES.get(row["kind"])
        if against not in by_kind:
            continue
        reference = by_kind[against]
        row["against"] = against
        row["lost_beyond_against"] = reference["beyond"] - row["beyond"]
        row["lost_inside_against"] = reference["inside"] - row["inside"]
        row["learns_step"] = row["lost_inside_against"] < LOST_INSIDE
        row["resolved"] = (
            _separated(seeds[row["kind"]], seeds[against]) if row["kind"] in seeds and against in seeds else None
        )
    return rows


def _flag(value) -> str:
    return "" if value is None else "yes" if value else "no"


def carrier_frame(record: dict):
    """:func:`carrier_rows` as a table: shares and points lost in percent, flags as yes or no."""
    import pandas as pd  # tables only when the notebook shows them

    return pd.DataFrame(
        {
            row["kind"]: {
                "seeds": row["seeds"],
                "n": row["n"],
                "inside %": round(100 * row["inside"], 1),
                "beyond %": round(100 * row["beyond"], 1),
                "worst family": row["worst_family"],
                "worst seed %": round(100 * row["worst_seed"], 1),
                "competent": _flag(row["competent"]),
                "compared with": row.get("against", ""),
                "lost beyond (points)": round(100 * row["lost_beyond_against"], 1) if "against" in row else None,
                "lost inside (points)": round(100 * row["lost_inside_against"], 1) if "against" in row else None,
                "learns the step": _flag(row.get("learns_step")),
                "resolved": _flag(row.get("resolved")),
            }
            for row in carrier_rows(record)
        }
    ).T


def carrier_texts(record: dict) -> dict[str, str]:
    """The values the notebook glues from :func:`carrier_rows`, by name: ``ablation_KIND_inside``,
    ``_beyond`` and ``_n`` for every model, ``_lost_beyond`` and ``_lost_inside`` (points) for each
    swap, and the two thresholds."""
    from predcalc.readable import percent  # the one formatting rule of shares

    out = {"ablation_competent": percent(COMPETENT, 0), "ablation_lost_inside": f"{100 * LOST_INSIDE:.0f}"}
    for row in carrier_rows(record):
        kind = row["kind"]
        out[f"ablation_{kind}_inside"] = percent(row["inside"])
        out[f"ablation_{kind}_beyond"] = percent(row["beyond"])
        out[f"ablation_{kind}_n"] = f"{row['n']:,}"
        if "against" in row:
            out[f"ablation_{kind}_lost_beyond"] = f"{100 * row['lost_beyond_against']:.1f}"
            out[f"ablation_{kind}_lost_inside"] = f"{100 * row['lost_inside_against']:.1f}"
    return out


def family_texts(summary_of: dict, prefix: str) -> dict[str, str]:
    """The values the notebook glues from a family summary (:func:`predcalc.calculator.study.summary`),
    each named ``PREFIX_...``: the lowest family mean (``_lowest``), the worst seed on any family
    (``_worst_seed``), the wrong answers over every seed and family (``_wrong``), and the seeds,
    families and expressions a family (``_seeds``, ``_families``, ``_n``: the smallest)."""
    from predcalc.readable import percent  # the one formatting rule of shares

    wrong = sum(round((1 - v["mean"]) * v["n"] * v["seeds"]) for v in summary_of.values())
    return {
        f"{prefix}_lowest": percent(min(v["mean"] for v in summary_of.values()), 2),
        f"{prefix}_worst_seed": percent(min(v["min"] for v in summary_of.values()), 2),
        f"{prefix}_wrong": f"{wrong:,}",
        f"{prefix}_seeds": str(next(iter(summary_of.values()))["seeds"]),
        f"{prefix}_families": str(len(summary_of)),
        f"{prefix}_n": f"{min(v['n'] for v in summary_of.values()):,}",
    }


def _rounds(bench_record: dict):
    """Each path and set of a bench record: ``(path, label, entry, its rounds' ratios)``."""
    for path in ("forward", "cache"):
        for label in ("integers", "with_division"):
            entry = bench_record[label][path]
            yield path, label, entry, entry.get("ratios") or [entry["ratio"]]


def speed_verdicts(bench_record: dict) -> dict:
    """Per path and set: ``"met"`` where every round's ratio is at most :data:`SPEED_GOAL`, ``"not met"``
    where every one is above it, else ``"not resolved"`` (the rounds straddle the goal)."""
    out: dict = {}
    for path, label, _, ratios in _rounds(bench_record):
        out.setdefault(path, {})[label] = (
            "met" if max(ratios) <= SPEED_GOAL else "not met" if min(ratios) > SPEED_GOAL else "not resolved"
        )
    return out


def speed_frame(bench_record: dict):
    """Per path and set: the median time over Python's, the lowest and highest round, and the verdict
    of :func:`speed_verdicts`."""
    import pandas as pd  # tables only when the notebook shows them

    verdicts = speed_verdicts(bench_record)
    rows = {
        (path, label): {
            "x Python's time (median)": round(entry["ratio"], 1),
            "lowest round": round(min(ratios), 1),
            "highest round": round(max(ratios), 1),
            f"within {SPEED_GOAL:g}x": verdicts[path][label],
        }
        for path, label, entry, ratios in _rounds(bench_record)
    }
    return pd.DataFrame(rows).T


def speed_texts(bench_record: dict) -> dict[str, str]:
    """The values the notebook glues from a bench record, by name (``speed_...``): its size, each path's
    median ratio and range of rounds on integers and with division, the latencies and the verdicts."""
    verdicts = speed_verdicts(bench_record)
    latency = bench_record["latency_ms"]
    out = {
        "speed_n": f"{bench_record['n']:,}",
        "speed_operators": str(bench_record["operators"]),
        "speed_repeats": str(bench_record.get("repeats", 1)),
        "speed_goal": f"{SPEED_GOAL:g}x",
        "speed_latency_forward": f"{latency['forward']:.1f}",
        "speed_latency_python": f"{latency['python']:.3f}" if "python" in latency else "not measured",
    }
    for path, label, entry, ratios in _rounds(bench_record):
        short = "division" if label == "with_division" else label
        out[f"speed_{path}_{short}"] = f"{entry['ratio']:.1f}x"
        out[f"speed_{path}_{short}_rounds"] = f"{min(ratios):.1f}-{max(ratios):.1f}"
        out[f"speed_{path}_{short}_verdict"] = verdicts[path][label]
    return out


def held_out_texts(held_out: dict, untouched_seed: int) -> dict[str, str]:
    """The values notebook 40's second-draw paragraph glues (:func:`study.held_out_scores`)."""
    from predcalc.readable import percent  # the one formatting rule of shares

    smallest = min(v["n"] for v in held_out["families"].values())
    return {
        **family_texts(held_out["families"], "held_out"),
        "held_out_family_seed": str(held_out["family_seed"]),
        "held_out_expressions": f"{held_out['expressions']:,}",
        "held_out_shared": f"{held_out['shared_with_development']:,}",
        "held_out_bound": percent(error_bound(0, smallest), 2),
        "confidence": percent(CONFIDENCE, 0),
        "untouched_seed": str(untouched_seed),
    }


def rung_texts(records: list, summary_of: dict) -> dict[str, str]:
    """The values of notebook 40's first rung: its size, training time, file and family scores."""
    return {
        "rung1_parameters": f"{records[0]['parameters']['total']:,}",
        "rung1_train_seconds": f"{max(r['train_seconds'] for r in records):.0f}",
        "rung1_file_kib": f"{records[0]['size_bytes'] / 1024:.0f}",
        **family_texts(summary_of, "rung1"),
    }


def rule_texts(rule_steps: dict, summary_of: dict) -> dict[str, str]:
    """The values of notebook 40's rule rung: the largest share of a learned step's inputs it was
    trained on, its held-out wrong answers, and its family scores."""
    from predcalc.readable import percent  # the one formatting rule of shares

    learned = [v for v in rule_steps.values() if not v["memorised"]]
    return {
        "rules_share": percent(max(v["trained_on"] / v["reachable"] for v in learned), 0),
        "rules_held_out_wrong": f"{sum(v['held_out_wrong'] for v in learned)}",
        **family_texts(summary_of, "rules"),
    }
