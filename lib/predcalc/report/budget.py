"""The training budget of the families table's trained models: each one's epoch cap and
early-stopping patience (its notebook's stored parameters) and the epochs its seeds ran.

The notebooks did not give every family the same budget (the transformers' final run used patience
200, so no transformer seed stopped early); :func:`training_budgets` reads what each row had, and
the Method's statistics say it from ``budget.md.j2``.

Example:
    >>> training_budgets(findings)[0]["models"][0]
    {'name': 'fnn2_cosine', 'label': 'FNN 1 x 345, cosine schedule', 'low': 120, 'high': 200}
"""

from __future__ import annotations

from predcalc.report.answer import FAMILIES, best_trained
from predcalc.report.names import short_name


def training_budgets(findings) -> list[dict]:
    """The families table's trained models grouped by (epoch cap, patience): ``{"epochs",
    "patience", "early_stopping", "models": [{"name", "label", "low", "high"}]}``, where low and high
    are the fewest and most epochs a seed ran; the group with the most models first."""
    groups: dict[tuple, list[dict]] = {}
    for _, trained, _ in FAMILIES:
        name = best_trained(findings, trained)
        if name is None:
            continue
        record, model = findings.models[name]
        epochs, patience = record.parameters.get("epochs"), record.parameters.get("patience")
        ran = [run.epochs for run in model.runs if run.epochs]
        if epochs is None or patience is None or not ran:
            continue
        entry = {"name": name, "label": short_name(name), "low": min(ran), "high": max(ran)}
        groups.setdefault((int(epochs), int(patience)), []).append(entry)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return [
        {"epochs": epochs, "patience": patience, "early_stopping": patience < epochs, "models": models}
        for (epochs, patience), models in ordered
    ]
