"""The Answer: one table of architecture families, then a few sentences.

Each family's row shows its best trained model, and its best partly built model where there is
one, on the protocol's three test sets and the held-out edge suite. The best model of a family
is chosen on development data only (:data:`CHOSEN_ON`), never on the held-out suite the table then
shows. Each cell gives the mean exact accuracy over seeds, the number of seeds exact on every
expression of the set out of all seeds, and the per-seed minimum and maximum.

The sentences live in ``templates/answer.md.j2``; this module computes their numbers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from predcalc.calculator.prose import error_bound
from predcalc.report import prose
from predcalc.report.calculator import fresh_rule_seeds
from predcalc.report.calculator_fresh import calculator_payload, cell_lead
from predcalc.report.cell import Cell  # noqa: F401  (paper reads it through here)
from predcalc.report.held_out import (  # noqa: F401  (the report's other sections read them through here)
    HELD_OUT_KIND,
    heldout_seeds,
    not_read,
    suite_cell,
)
from predcalc.report.names import short_name
from predcalc.report.rounded import rounded_row
from predcalc.report.studies import FINISHES
from predcalc.studies import arithmetic_units, exact_scan
from predcalc.studies.edges import THIRD_HELDOUT_SEED

# Families of the main text: (family, trained candidates, partly built candidates), registry names.
FAMILIES = (
    ("feed-forward network", ("fnn2", "fnn2_cosine", "fnn_baseline"), ()),
    ("simple recurrent network", ("rnn2",), ()),
    ("LSTM / GRU", ("lstm", "gru", "lstm_typed"), ()),
    ("BiLSTM with attention", ("bilstm_attention",), ()),
    (
        "transformer encoder",
        (
            "transformer4",
            "transformer5",
            "transformer4_reference",
            "transformer5_reference",
            "transformer4_gated",
            "transformer4_local",
            "transformer4_local_bounded",
        ),
        (),
    ),
    ("minGRU / minLSTM", ("min_gru", "min_lstm"), ()),
    ("xLSTM (sLSTM, mLSTM)", ("slstm", "mlstm", "mlstm_stable"), ()),
    ("Mamba", ("mamba", "mamba_bounded"), ()),
    # the arithmetic units (NMU, NAU): shared across the terms, or the paper's dense stack over all tokens
    ("arithmetic units (NAU / NMU)", ("nau_nmu", "nau_nmu_dense"), ()),
    # the typed scan and its trained ablations (each removes one design element); the partly built: its finishes
    (
        "syntax-gated scan",
        ("scan_typed", "scan_typed_value_gates", "scan_numeric", "scan_typed_additive"),
        tuple(FINISHES),
    ),  # the partly built: the scan's closed-form finishes
)

# The trained exact scan's family: discrete (straight-through) gates and clamped weights, trained on the
# training split alone. It stores no validation loss, so it cannot be ranked against the typed scan on
# the data that chooses the other rows; it is its family's only model.
EXACT_FAMILY = "sign scan, discrete gates"
# Kinds beyond trained / partly built: the arithmetic units' weights are clamped to the solution's range
# (NAU [-1, 1], NMU [0, 1]); the per-term model's form (pairs, shared units, a fixed sum) is also built.
CLAMPED = "trained, clamped"
MODEL_KINDS = {
    "nau_nmu": "built form, trained units",
    "nau_nmu_dense": CLAMPED,
    "scan_typed": "built form, trained weights",  # type-only gates, value times a sign state: a signed sum
    "transformer4_local_bounded": "trained, built gated-sum readout",  # sum of token values times gates
}
SIGNS_TRAINED = "built form, trained signs"  # the sign scan: form built, magnitudes clamped, signs learned


# Which data chose each row's model (stated under the table).
CHOSEN_ON = {
    "trained": (
        "the lowest mean validation loss (the protocol's validation split) among the family's trained "
        "regression models (every one trained here on the protocol's split; not candidates: models that "
        "write digits, whose validation loss is another quantity, and the prior report's own FNN2 "
        "weights, not trained here)"
    ),
    "partly built": (
        "the highest mean exact accuracy on the extended suite (development data: it also chose "
        "the finish; none of its sets is in this table) among the family's partly built models"
    ),
}
# The "chosen by" column: the data that chose the row, and among how many candidates.
CHOSEN_BY = {"trained": "validation loss", "partly built": "the extended suite"}
# models whose design was developed on the protocol's test sets before validation loss chose among the family
DESIGNED_ON = {
    "transformer4_local_bounded": "design: the out-of-range and long sets and the edge probe",
    "scan_typed": "design: the protocol's test sets",
    "scan_exact": "design: the development suites (seeds 31, 4040) and the protocol's in and long sets",
    "calculator": "design: the development draws (family seeds 1000, 2000) on seeds 0-14 and 200-219",
}

PROTOCOL_SETS = (("in", "in range"), ("out", "out of range"), ("long", "long"))
HELD_OUT = f"held-out suite {THIRD_HELDOUT_SEED}"
CHOSEN = "chosen by"
NOT_COMPARABLE = "-"  # a cell the table leaves blank: not measured like for like (said under the table)


def _mean_val_loss(findings, name: str) -> float:
    losses = [r.extra.get("best_val_loss") for r in findings.models[name][1].runs]
    losses = [x for x in losses if x is not None and np.isfinite(x)]
    return float(np.mean(losses)) if losses else float("inf")


def best_trained(findings, names) -> str | None:
    """The family's trained model with the lowest mean validation loss (development data)."""
    present = [n for n in names if n in findings.models]
    return min(present, key=lambda n: _mean_val_loss(findings, n)) if present else None


def extended_means(findings) -> dict[str, float]:
    """Mean exact accuracy over the families (and seeds) of the extended suite, per model it scored."""
    out = {}
    for record in findings.notebooks:
        entry = record.entries.get("extended") or {}
        for name, model in (entry.get("models") or {}).items():
            runs = model["runs"]
            out[name] = float(np.mean([[r["metrics"][f]["accuracy"] for f in entry["families"]] for r in runs]))
    return out


def best_built(findings, names) -> str | None:
    """The family's partly built model with the highest mean exact accuracy on the extended suite
    (development data not shown in the families table); one not scored there ranks last."""
    present = [n for n in names if n in findings.models]
    scores = extended_means(findings)
    return max(present, key=lambda n: scores.get(n, -1.0)) if present else None


def chosen_by(kind: str, candidates: int) -> str:
    """The families table's "chosen by" cell: the data that chose the row, among how many models."""
    if candidates <= 1:
        return f"its family's only {kind} model"
    return f"{CHOSEN_BY[kind]}, best of {candidates}"


def _keras_heldout(findings, name: str) -> dict:
    """A model's own Keras scores on held-out sets its notebook scored, ``{seed: {set: accuracy}}``."""
    return {
        str(r.seed): {
            k: v["accuracy"] for k, v in r.metrics.items() if k.split("/")[0] in arithmetic_units.HELDOUT_PREFIXES
        }
        for r in findings.models[name][1].runs
    }


def _heldout_text(findings, name: str) -> str:
    seeds = heldout_seeds(findings, name, HELD_OUT_KIND)
    if not seeds:
        keras = {s: sets for s, sets in _keras_heldout(findings, name).items() if sets}
        if not keras:
            return "not measured"
        per_seed = [float(np.mean(list(sets.values()))) for sets in keras.values()]
        exact = sum(all(v >= 1.0 for v in sets.values()) for sets in keras.values())
        return (
            f"Keras, not exported files: {prose.share(float(np.mean(per_seed)), 1)} over the "
            f"{len(next(iter(keras.values())))} sets of 3 numbers of both held-out suites, {exact}/{len(keras)} "
            f"exact on all, {prose.spread(per_seed)}"
        )
    return suite_cell(seeds, len(not_read(findings, name)))


def _protocol_cell(findings, name: str, test_set: str) -> str:
    return Cell(values=findings.accuracy(name, test_set)).text()


def family_rows(findings) -> list[dict]:
    """One row per (family, kind) with a model, then the calculator's row where it was run."""
    rows = []
    for family, trained, built in FAMILIES:
        for kind, names, pick in (("trained", trained, best_trained), ("partly built", built, best_built)):
            name = pick(findings, names)
            if name is None:
                continue
            model = findings.models[name][1]
            shown = MODEL_KINDS.get(name, kind) if kind == "trained" else kind
            row = {"family": family, "model": short_name(name), "kind": shown, "params": f"{model.params:,}"}
            for test_set, column in PROTOCOL_SETS:
                row[column] = _protocol_cell(findings, name, test_set)
            row[HELD_OUT] = _heldout_text(findings, name)
            row[CHOSEN] = chosen_by(kind, sum(n in findings.models for n in names))
            if name in DESIGNED_ON:
                row[CHOSEN] = f"{DESIGNED_ON[name]}; then {row[CHOSEN]}"
            rows.append((name, row))
    rounded = rounded_row(findings.notebooks, PROTOCOL_SETS, HELD_OUT, CHOSEN)
    family = [i for i, (_, row) in enumerate(rows) if rounded and row["family"] == rounded[0][1]["family"]]
    at = family[-1] + 1 if family else len(rows)  # beside its family's other rows
    rows[at:at] = rounded
    rows += trained_exact_rows(findings)
    rows += calculator_rows(findings)
    return rows


def trained_exact_record(findings) -> dict | None:
    """The trained exact scan's study record (an ablation and a held-out suite scored through the
    exported files), found by its keys."""
    found = [r.to_json() for r in findings.notebooks]
    return next((r for r in found if exact_scan.is_record(r)), None)


def trained_exact_facts(findings) -> dict | None:
    """Its seeds on the protocol's sets and on its own held-out suite, through each exported format."""
    record = trained_exact_record(findings)
    if record is None:
        return None
    seeds = sorted(record["seeds"], key=int)
    sets = list(record["data"]["heldout"]["sets"])

    def by_format(heldout: dict, exact: dict) -> dict:
        formats = {}
        for fmt, by_seed in heldout.items():
            per_seed = [float(np.mean([by_seed[s][n] for n in sets])) for s in sorted(by_seed, key=int)]
            formats[fmt] = {"exact": exact[fmt], "per_seed": per_seed, "mean": float(np.mean(per_seed))}
        return formats

    formats = by_format(record["heldout"], exact_scan.exact_everywhere(record))
    counts = exact_scan.fresh_counts(record)
    fresh = (  # the claim: the shipped recipe on seeds that chose nothing
        {
            "seeds": counts["n"],
            "list": prose.seeds_list(int(x) for x in counts["seeds"]),
            "formats": by_format(record["fresh"]["heldout"], counts["everywhere"]),
            "lower_bound": prose.share(1 - error_bound(counts["n"] - counts["everywhere"]["onnx"], counts["n"]), 1),
            # fresh seeds not exact even inside the training box (a gate stuck in training)
            "stuck": sum(r["scores"].get("in", 1.0) < 1.0 for r in record["fresh"].get("records", {}).values()),
        }
        if counts
        else None
    )
    weights = record["seeds"][seeds[0]]["weights"]
    return {
        "name": short_name("scan_exact"),
        "seeds": len(seeds),
        # the protocol's sets on the fresh seeds (through their ONNX files) where they ran, else the choosing seeds
        **protocol_scores(record, seeds),
        "choosing": prose.seeds_list(int(x) for x in seeds),  # the seeds the recipe's last changes were chosen on
        "fresh": fresh,
        "sets": len(sets),
        "weights": sum(len(v) if isinstance(v, list) else 1 for v in weights.values()),
        "formats": formats,
        "bound": record["float32_bound"]["bound"],
        "heldout_seed": record["data"]["heldout"]["seed"],
    }


def protocol_scores(record: dict, seeds: list[str]) -> dict:
    """The sign scan on the protocol's sets: its fresh seeds' scores through their ONNX files where the
    record has them (the seeds that chose nothing), else the choosing seeds' Keras scores."""
    fresh = ((record.get("fresh") or {}).get("development") or {}).get("onnx") or {}
    if fresh and all(t in scores for scores in fresh.values() for t, _ in PROTOCOL_SETS):
        by_seed = {s: fresh[s] for s in sorted(fresh, key=int)}
        label = f"fresh seeds {prose.seeds_list(int(s) for s in by_seed)}"
    else:
        by_seed = {s: record["seeds"][s]["scores"] for s in seeds}
        label = f"seeds {prose.seeds_list(int(s) for s in seeds)}"
    return {
        "protocol": {t: [scores[t] for scores in by_seed.values()] for t, _ in PROTOCOL_SETS},
        "protocol_exact": sum(all(scores[t] >= 1.0 for t, _ in PROTOCOL_SETS) for scores in by_seed.values()),
        "protocol_n": len(by_seed),
        "protocol_seeds": label,
    }


def trained_exact_rows(findings) -> list[dict]:
    """The trained exact scan's row: the protocol's sets, and its own held-out suite through ONNX."""
    facts = trained_exact_facts(findings)
    if facts is None:
        return []
    row = {
        "family": EXACT_FAMILY,
        "model": f"{facts['name']} ({facts['protocol_seeds']})",
        "kind": SIGNS_TRAINED,
        # the caption counts every saved parameter: the gate offset is one, fixed unless the recipe learns it
        "params": str(facts["weights"])
        + ("" if (trained_exact_record(findings).get("recipe") or {}).get("learn_offset", True) else " + 1 fixed"),
    }
    for test_set, column in PROTOCOL_SETS:
        row[column] = Cell(values=facts["protocol"][test_set]).text()
    onnx = facts["formats"]["onnx"]
    choosing = facts["choosing"]
    # the column's suite where the record scored it (it does: its fingerprint is the stored suite's), else its own
    suite = "ONNX files" if facts["heldout_seed"] == THIRD_HELDOUT_SEED else "its own held-out suite, ONNX files"
    if facts["fresh"] is None:
        row[HELD_OUT] = (
            f"{prose.share(onnx['mean'], 1)} over {facts['sets']} of {facts['sets']} sets ({suite}), "
            f"{onnx['exact']}/{facts['seeds']} exact on all, {prose.spread(onnx['per_seed'])} "
            f"(seeds {choosing}, which chose its recipe)"
        )
    else:  # the claim: fresh seeds; the choosing seeds beside it
        fresh = facts["fresh"]["formats"]["onnx"]
        row[HELD_OUT] = (
            f"{prose.share(fresh['mean'], 1)} over {facts['sets']} of {facts['sets']} sets ({suite}), "
            f"{fresh['exact']}/{facts['fresh']['seeds']} fresh seeds exact on all, {prose.spread(fresh['per_seed'])}; "
            f"seeds {choosing}, which chose its recipe: {onnx['exact']}/{facts['seeds']}"
        )
    row[CHOSEN] = f"{DESIGNED_ON['scan_exact']}; {chosen_by('trained', 1)}"
    return [("scan_exact", row)]


def calculator_rows(findings) -> list[dict]:
    """The learned calculator's row: its held-out family draw only. The protocol's sets lie inside its
    own training world (where the networks trained on the protocol's split meet them out of range and
    long), so its cells there are left blank: not comparable with the other rows."""
    records = findings.study("calculator")
    if not records:
        return []
    record = calculator_payload(records[0])  # the calculator study's stored payload, its fresh-seed record beside it
    steps = record.get("steps") or {}
    params = sum(int(step.get("parameters", 0)) for step in steps.values())
    row = {
        "family": "learned calculator",
        "model": short_name("calculator"),
        "kind": "built loop, given features and targets, trained steps",
        "params": f"{params:,}" if params else "",
    }
    for _, column in PROTOCOL_SETS:
        row[column] = NOT_COMPARABLE
    families = (record.get("held_out") or {}).get("families") or {}
    if families:
        mean = float(np.mean([f["mean"] for f in families.values()]))
        worst = min(f["min"] for f in families.values())
        seeds = next(iter(families.values()))["seeds"]
        exact = f"{seeds}/{seeds} exact on all" if worst >= 1.0 else f"worst seed on a family {prose.share(worst, 1)}"
        fresh = fresh_rule_seeds((record.get("given") or {}).get("fresh_steps") or [])
        swapped = fresh["end_to_end_low"]
        restarted = cell_lead(record, fresh)  # the restart recipe's fresh seeds, one start a step beside them
        lead = (
            restarted + "; "
            if restarted
            else f"fresh seeds: {fresh['complete']}/{fresh['fresh_seeds']} with every rule step exact on every input"
            + (
                f" (one fresh step in a reference calculator: down to {prose.share(swapped, 1)} exact)"
                if swapped
                else ""
            )
            + "; "
            if fresh["fresh_seeds"]
            else ""
        )
        row[HELD_OUT] = (
            f"{lead}development seeds, which chose its design: {prose.share(mean, 1)} over {len(families)} "
            f"families (its own draw), {exact}"
        )
    else:
        row[HELD_OUT] = "not measured"
    row[CHOSEN] = f"{DESIGNED_ON['calculator']}; its family's only model"
    return [("calculator", row)]


def families_table(findings) -> pd.DataFrame:
    rows = family_rows(findings)
    return pd.DataFrame([row for _, row in rows]) if rows else pd.DataFrame()
