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
