"""What the Limitations say of other data draws: the data-seed study's stored runs
(:mod:`predcalc.studies.data_seeds`), per model in the main text's names."""

from __future__ import annotations

from pathlib import Path

from predcalc.paths import DATA_SEEDS
from predcalc.report.names import short_name
from predcalc.studies.data_seeds import NOT_RETRAINED, TEST_SETS, summary


def data_seed_facts(reports=DATA_SEEDS.parent) -> dict | None:
    """``{"models": [{"name", "label", "draws": [{"data_seed", "exact", "seeds", "low"}]}], "not_retrained",
    "sets"}``: per model and data seed, the training seeds exact on every test set, how many ran,
    and the lowest per-seed accuracy over the sets, from ``reports``' ``data_seeds`` folder; None before the
    study has run."""
    stored = summary(Path(reports) / DATA_SEEDS.name)
    if not stored:
        return None
    models = []
    for name, by_data in stored.items():
        draws = [
            {
                "data_seed": int(data_seed),
                "exact": len(about["exact_seeds"]),
                "seeds": len(about["seeds"]),
                "low": min(about["low"].values()),
                "failing": [s for s in about["seeds"] if s not in about["exact_seeds"]],
            }
            for data_seed, about in sorted(by_data.items(), key=lambda item: int(item[0]))
        ]
        models.append({"name": name, "label": short_name(name), "draws": draws})
    return {
        "models": models,
        "not_retrained": [short_name(n) for n in NOT_RETRAINED],
        "sets": list(TEST_SETS),
    }
