"""The findings' Gemma section, rendered from the study's record (``metrics.json["gemma3_270m"]``).

:func:`section_context` turns the record into the numbers the section states (per seed, ranges,
the comparison with the prior report's row by the project's rule: a side only when every seed lies
on it); ``templates/gemma_finetune.md.j2`` holds the sentences. The prior report's row is passed
in (``report.anchors.REFERENCE_LLM_ROWS["Gemma 3 270M"]``), since this package sits below the report.
"""

from __future__ import annotations

from pathlib import Path

import jinja2

from predcalc.studies.gemma_study import EDGE_SETS, PREFERRED_ORDER

TEMPLATES = Path(__file__).parent / "templates"
TEMPLATE = "gemma_finetune.md.j2"
SET_LABELS = {
    "in": "in range (3 numbers, -5..4)",
    "out": "out of range (3 numbers, ±5..8)",
    "long": "long (2-8 numbers, -5..5)",
}
EDGE_LABELS = {
    "digits_exactly_2": "3 numbers of exactly 2 digits",
    "digits_exactly_3": "3 numbers of exactly 3 digits",
    "terms_9_14": "9-14 numbers from -5..5",
}


def percent(value) -> str:
    return "n/a" if value is None else f"{100 * float(value):.2f} %"


def side(values, reference) -> str:
    """``above`` / ``below`` when every seed lies on that side of ``reference``, else ``not resolved``."""
    if all(v > reference for v in values):
        return "above"
    if all(v < reference for v in values):
        return "below"
    return "not resolved"


def section_context(record: dict, reference: dict, reference_name: str = "Gemma 3 270M") -> dict:
    """The numbers of the section, formatted."""
    seeds = record.get("seeds") or []
    rows = []
    for name in PREFERRED_ORDER:
        values = [s["scores"][name]["accuracy"] for s in seeds]
        ref = reference[f"accuracy_{name}"]
        rows.append(
            {
                "set": SET_LABELS[name],
                "n": record["test_counts"][name],
                "per_seed": [percent(v) for v in values],
                "low": percent(min(values)) if values else "n/a",
                "high": percent(max(values)) if values else "n/a",
                "reference": percent(ref),
                "side": side(values, ref) if values else "not resolved",
            }
        )
    base = record.get("base") or {}
    controls = []
    for mode in ("zero_shot", "few_shot"):
        if mode in base:
            scores = base[mode]["scores"]
            controls.append(
                {
                    "mode": mode.replace("_", "-"),
                    "scores": [percent(scores[name]["accuracy"]) for name in PREFERRED_ORDER],
                    "n": scores[PREFERRED_ORDER[0]]["n"],
                }
            )
    search = record.get("search") or {}
    search_rows = [
        {
            "name": r["recipe"]["name"],
            "rank": r["recipe"]["rank"],
            "targets": ", ".join(r["recipe"]["targets"]),
            "trainable": f"{r['trainable_params']:,}",
            "steps": r["recipe"]["steps"],
            "validation": percent(r["validation"]["accuracy"]),
            "n": r["validation"]["n"],
            "chosen": r["recipe"]["name"] == search.get("chosen"),
        }
        for r in search.get("rows", [])
    ]
    edge_rows = [
        {
            "set": EDGE_LABELS[name],
            "n": seeds[0]["edges"][name]["n"],
            "per_seed": [percent(s["edges"][name]["accuracy"]) for s in seeds],
        }
        for name in EDGE_SETS
        if seeds and name in seeds[0].get("edges", {})
    ]
    recipe = seeds[0]["recipe"] if seeds else None
    trend = loss_trend(seeds)
    agreement = (seeds[0].get("greedy_agreement") or {}) if seeds else {}
    return {
        "label": record["label"],
        "reference_name": reference_name,
        "seeds": [s["seed"] for s in seeds],
        "rows": rows,
        "controls": controls,
        "search_rows": search_rows,
        "search_validation_n": search_rows[0]["n"] if search_rows else None,
        "edge_rows": edge_rows,
        "recipe": recipe,
        "trainable": f"{seeds[0]['trainable_params']:,}" if seeds else None,
        "passes": f"{recipe['steps'] * recipe['batch_size'] / record['train_count']:.2f}"
        if recipe and record.get("train_count")
        else "n/a",
        "agreement": [
            {"set": name, "agree": a["agree"], "n": a["n"]} for name, a in agreement.items() if a is not None
        ],
        "export": record.get("export"),
        "trend": trend,
    }


#: Training steps per window of :func:`loss_trend`.
TREND_WINDOW = 20


def loss_trend(seeds: list[dict], window: int = TREND_WINDOW) -> dict | None:
    """Whether the training loss was still falling when the budget ended: per seed, the mean loss of
    the last ``window`` steps against the ``window`` before them, and how many seeds fell. None when
    a seed stored fewer than two windows of losses."""
    losses = [s.get("losses") or [] for s in seeds]
    if not losses or any(len(values) < 2 * window for values in losses):
        return None
    pairs = [(sum(v[-2 * window : -window]) / window, sum(v[-window:]) / window) for v in losses]
    return {
        "window": window,
        "pairs": [f"{before:.3f} to {last:.3f}" for before, last in pairs],
        "falling": sum(last < before for before, last in pairs),
    }


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_section(record: dict, reference: dict, reference_name: str = "Gemma 3 270M") -> str:
    """The Gemma section of the findings, as Markdown."""
    return _environment().get_template(TEMPLATE).render(**section_context(record, reference, reference_name))
