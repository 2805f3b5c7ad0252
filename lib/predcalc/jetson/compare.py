"""Answer comparison: each artifact's answers and raw predictions on both architectures."""

from __future__ import annotations

import math
import re

from predcalc.jetson.artifacts import Artifact, file_digest
from predcalc.jetson.root import shown
from predcalc.jetson.settings import DIFFERING_SHOWN


def compare_values(arm: list, host: list) -> dict:
    """Raw predictions of the two installs: how many are bitwise the same and the largest |difference|
    (NaN on both sides counts as the same; NaN on one side makes the difference infinite)."""
    if len(arm) != len(host):
        raise ValueError(f"{len(arm)} aarch64 values against {len(host)} x86-64 values")
    identical, largest = 0, 0.0
    for a, h in zip(arm, host):
        a, h = float(a), float(h)
        if a == h or (math.isnan(a) and math.isnan(h)):
            identical += 1
        else:
            largest = max(largest, math.inf if math.isnan(a) or math.isnan(h) else abs(a - h))
    return {"n": len(arm), "identical": identical, "max_abs_diff": largest}


def compare_predict(arm: str, host: str, tolerance: float | None) -> dict:
    """Two ``predcalc predict`` lines: ``same`` text, and ``agree``: the same apart from the printed
    value, which differs by at most ``tolerance`` (a value model's float32 noise)."""
    arm, host = arm.strip(), host.strip()
    record = {"aarch64": arm, "x86_64": host, "same": arm == host}
    values = [PREDICTED_VALUE.search(line) for line in (arm, host)]
    close = (
        tolerance is not None
        and all(values)
        and abs(float(values[0].group(1)) - float(values[1].group(1))) <= tolerance
        and PREDICTED_VALUE.sub("= # ", arm) == PREDICTED_VALUE.sub("= # ", host)
    )
    record["agree"] = record["same"] or close
    return record


def compare_answers(arm: list[str], host: list[str]) -> dict:
    """The answers ``predcalc evaluate --output`` wrote (texts): how many are the same."""
    if len(arm) != len(host):
        raise ValueError(f"{len(arm)} aarch64 answers against {len(host)} x86-64 answers")
    return {"n": len(arm), "identical": sum(a == h for a, h in zip(arm, host))}


PREDICTED_VALUE = re.compile(r"= (-?\d+\.\d+) ")  # the value in a value model's `predcalc predict` line
PROBE_CPUS = {"max": "qemu's default: SVE and int8 matrix multiply, which the Orin's cores lack"}  # int8 files there
METRIC_KEYS = ("n", "exact", "lowest_terms", "mae")
EXACT_KEYS = ("n", "exact", "lowest_terms")  # equal on both sides; the MAE follows the raw values


def artifact_record(artifact: Artifact, arm: dict, host: dict) -> dict:
    """One artifact's entry: what each install printed and computed, and whether they agree.

    ``arm`` and ``host`` hold ``predict`` (stdout), ``evaluate`` (its JSON metrics), ``answers``
    (the texts of ``--output``) with ``expressions`` (its first column), ``values`` (raw
    predictions, value models only), ``values_builtin`` (the same on LiteRT's builtin kernels, for
    a LiteRT file not recommended), ``stderr`` (what the commands wrote there) and ``wall_s`` (per
    command), or ``error`` where a command failed.
    """
    head = {
        "name": artifact.name,
        "file": shown(artifact.path),
        "sha256": file_digest(artifact.path),
        "runtime": artifact.runtime,
        "note": artifact.note,
        "recommended": artifact.not_recommended is None,
        **({"not_recommended": artifact.not_recommended} if artifact.not_recommended else {}),
    }
    if "error" in arm or "error" in host:
        return {
            **head,
            "agree": False,
            "error": {side: run["error"] for side, run in (("aarch64", arm), ("x86_64", host)) if "error" in run},
        }
    metrics = {
        side: {k: run["evaluate"][k] for k in METRIC_KEYS if k in run["evaluate"]}
        for side, run in (("aarch64", arm), ("x86_64", host))
    }
    record = {**head, "evaluate": metrics, "answers": compare_answers(arm["answers"], host["answers"])}
    if arm.get("values") is not None:
        from predcalc.deploy.export import PARITY_RELATIVE_DIFF

        record["values"] = compare_values(arm["values"], host["values"])
        finite = [abs(v) for v in host["values"] if math.isfinite(v)]
        tolerance = PARITY_RELATIVE_DIFF * max([1.0, *finite])  # export's float32 parity: last bits differ
        record["values"].update(tolerance=tolerance, within=record["values"]["max_abs_diff"] <= tolerance)
    differ = differing_answers(arm, host)
    if differ:
        record["answers"]["differ"] = differ[:DIFFERING_SHOWN]
    if arm.get("values_builtin") is not None and host.get("values_builtin") is not None:
        record["builtin_kernels"] = {
            "what": "raw predictions on LiteRT's builtin kernels (its default XNNPACK delegate off), "
            "on both sides, and how far XNNPACK moves each side's",
            "x86_64_vs_aarch64": compare_values(arm["values_builtin"], host["values_builtin"]),
            "xnnpack_vs_builtin_max_abs_diff": {
                side: compare_values(run["values"], run["values_builtin"])["max_abs_diff"]
                for side, run in (("aarch64", arm), ("x86_64", host))
            },
        }
    record["predict"] = compare_predict(arm["predict"], host["predict"], record.get("values", {}).get("tolerance"))
    record["evaluate"]["same"] = all(metrics["aarch64"].get(k) == metrics["x86_64"].get(k) for k in EXACT_KEYS)
    record["evaluate"]["exact_change"] = metrics["aarch64"]["exact"] - metrics["x86_64"]["exact"]
    record["agree"] = (
        record["predict"]["agree"]
        and record["evaluate"]["same"]
        and record["answers"]["identical"] == record["answers"]["n"]
        and record.get("values", {}).get("within", True)
    )
    record["stderr_aarch64"] = arm.get("stderr", "")
    record["wall_s"] = {"aarch64_emulated": arm["wall_s"], "x86_64": host["wall_s"]}
    return record


def differing_answers(arm: dict, host: dict) -> list[dict]:
    """Each answer the two sides wrote differently: the expression, both answers and, for a value
    model, both raw predictions and how far apart they are (a rounding tie would be ~1e-6 apart)."""
    expressions = arm.get("expressions") or [None] * len(arm["answers"])
    found = []
    for i, (expression, a, h) in enumerate(zip(expressions, arm["answers"], host["answers"], strict=True)):
        if a == h:
            continue
        entry = {"expression": expression, "answer_aarch64": a, "answer_x86_64": h}
        if arm.get("values") is not None and host.get("values") is not None:
            entry.update(value_aarch64=arm["values"][i], value_x86_64=host["values"][i])
            entry["value_diff"] = abs(arm["values"][i] - host["values"][i])
        found.append(entry)
    return found


def summary(artifacts: list[dict], skipped: list[dict]) -> dict:
    """The recommended artifacts (they decide the outcome): how many were run and agree, the largest
    raw difference among those that agree, how the others differ, which were skipped; then those
    run but not recommended (``not_recommended``), with how they differ."""
    recommended = [a for a in artifacts if a.get("recommended", True)]
    diffs = [a["values"]["max_abs_diff"] for a in recommended if "values" in a and a["agree"]]
    return {
        "checked": len(recommended),
        "agree": sum(a["agree"] for a in recommended),
        "disagree": [_difference(a) for a in recommended if not a["agree"] and "error" not in a],
        "failed": [a["name"] for a in recommended if "error" in a],
        "answers_identical": sum(a["answers"]["identical"] for a in recommended if "answers" in a),
        "answers": sum(a["answers"]["n"] for a in recommended if "answers" in a),
        "max_abs_diff_agreeing": max(diffs) if diffs else None,
        "skipped": [s["name"] for s in skipped],
        "not_recommended": [
            {**_difference(a), "reason": a["not_recommended"], "agree": a["agree"]}
            for a in artifacts
            if not a.get("recommended", True)
        ],
    }


def _difference(artifact: dict) -> dict:
    """How one artifact's two sides differ, in numbers (its name only where a command failed)."""
    if "error" in artifact:
        return {"name": artifact["name"], "error": artifact["error"]}
    found = {
        "name": artifact["name"],
        "answers_differ": artifact["answers"]["n"] - artifact["answers"]["identical"],
        "n": artifact["answers"]["n"],
        "exact_aarch64": artifact["evaluate"]["aarch64"]["exact"],
        "exact_x86_64": artifact["evaluate"]["x86_64"]["exact"],
    }
    if "values" in artifact:
        values = artifact["values"]
        found.update(
            values_differ=values["n"] - values["identical"],
            max_abs_diff=values["max_abs_diff"],
            tolerance=values["tolerance"],
        )
        gaps = [d["value_diff"] for d in artifact["answers"].get("differ", []) if "value_diff" in d]
        if gaps:
            found["value_diff_where_answers_differ"] = [min(gaps), max(gaps)]
    if "builtin_kernels" in artifact:
        kernels = artifact["builtin_kernels"]
        found["builtin_kernels"] = {
            "values_differ": kernels["x86_64_vs_aarch64"]["n"] - kernels["x86_64_vs_aarch64"]["identical"],
            "max_abs_diff": kernels["x86_64_vs_aarch64"]["max_abs_diff"],
            "xnnpack_vs_builtin_max_abs_diff": kernels["xnnpack_vs_builtin_max_abs_diff"],
        }
    return found
