"""The study of what the rule rung is given: its parts (cached), their record, their tables.

:func:`variant_parts` trains each variant of :mod:`predcalc.calculator.given_ablations` at each
seed as one cached part (the code fingerprint covers that module too, so the parts of the rest of
the study keep theirs); :func:`given_fields` turns them into the record's ``"given"`` field.
"""

from __future__ import annotations

from pathlib import Path

from predcalc.calculator import given_ablations
from predcalc.calculator.box import record_box
from predcalc.calculator.cache import FINGERPRINTED, cached
from predcalc.calculator.given import given_table, kind_features, schedule

#: The code a part of this study depends on: the calculator's and the variants'.
GIVEN_MODULES = (*FINGERPRINTED, "predcalc.calculator.given_ablations")


def _backend() -> str:
    import keras  # the backend the part was trained on, recorded beside its numbers

    return keras.backend.backend()


def variant_parts(
    folder: Path | None,
    variants,
    seeds,
    expressions: int = 200,
    draw_n: int = 25,
    draw_seed: int = 7777,
    names=None,
    progress=None,
) -> dict:
    """``{variant: {seed: record}}`` of :func:`predcalc.calculator.given_ablations.variant_seed`,
    each stored as ``folder/VARIANT_SEED-DIGEST.json`` (``names`` limits the steps retrained; an end-to-end
    draw of ``draw_n`` expressions a family, fixed by ``draw_seed``, where ``draw_n`` is not 0)."""
    draw = given_ablations.end_to_end_draw(draw_n, draw_seed) if draw_n else None
    out: dict = {}
    for variant in variants:
        for seed in seeds:
            parameters = {
                "variant": variant,
                "seed": int(seed),
                "expressions": expressions,
                "draw_n": draw_n,
                "draw_seed": draw_seed,
                "names": sorted(names) if names else None,
            }
            key = f"{variant}_{seed}" + ("" if names is None else "_" + "_".join(sorted(names)))
            out.setdefault(variant, {})[str(seed)] = cached(
                folder,
                key,
                lambda variant=variant, seed=seed: {
                    **given_ablations.variant_seed(variant, seed, expressions, draw, names=names, progress=progress),
                    "backend": _backend(),
                },
                parameters=parameters,
                modules=GIVEN_MODULES,
            )
    return out


def variant_table(records: dict) -> list[dict]:
    """One row per (variant, step): seeds, exact seeds (0 wrong on the held-out inputs), the held-out
    wrong count of every seed, and end-to-end exact answers (min-max over seeds) where scored."""
    rows = []
    for variant, by_seed in records.items():
        seeds = sorted(by_seed, key=int)
        if not seeds:  # a variant no seed trained (the smoke profile trains none)
            continue
        for name in given_ablations.VARIANTS[variant]:
            if not all(name in by_seed[s]["steps"] for s in seeds):
                continue
            per = [by_seed[s]["steps"][name] for s in seeds]
            row = {
                "variant": variant,
                "step": name,
                "seeds": [int(s) for s in seeds],
                "exact_seeds": sum(p["held_out_wrong"] == 0 for p in per),
                "exact_everywhere": sum(p.get("wrong") == 0 for p in per),
                "held_out": per[0]["held_out"],
                "held_out_wrong": [p["held_out_wrong"] for p in per],
                "train_exact": [p["train_exact"] for p in per],
            }
            if all("end_to_end" in p for p in per):
                row["end_to_end"] = [p["end_to_end"]["exact"] for p in per]
                row["end_to_end_n"] = per[0]["end_to_end"]["n"]
            rows.append(row)
    return rows


def given_parts(
    folder: Path | None,
    variants,
    seeds,
    level_seeds,
    expressions: int = 200,
    draw_n: int = 10,
    draw_seed: int = 7777,
    progress=None,
) -> dict:
    """Every part of the study of given pieces: each of ``variants`` at each of ``seeds`` (a list, or
    a list per variant; ``given``,
    the shipped rule steps, retrains the four rule steps; its control's fresh seeds are the study's
    own, :func:`predcalc.calculator.study.control_on_seeds`) and the control with learned levels at
    each of ``level_seeds`` (seeds whose given control the study already trained)."""
    out: dict = {}
    for variant in variants:
        names = given_ablations.RULE_STEPS if variant == "given" else None
        these = seeds.get(variant, []) if isinstance(seeds, dict) else seeds
        out.update(variant_parts(folder, [variant], these, expressions, draw_n, draw_seed, names, progress))
    if level_seeds:
        out.update(
            variant_parts(folder, ["learned_levels"], level_seeds, expressions, draw_n, draw_seed, None, progress)
        )
    return out


def _control_rows(control_fresh: dict, seeds) -> dict:
    """The study's given control on ``seeds`` (:func:`predcalc.calculator.study.control_on_seeds`'s
    record), as the rows of :func:`variant_table`."""
    return {
        "given": {
            str(seed): {
                "steps": {
                    "control": {
                        **control_fresh[str(seed)],
                        "held_out": control_fresh[str(seed)]["reachable"] - control_fresh[str(seed)]["trained_on"],
                        "train_exact": 1.0 if control_fresh[str(seed)]["margin"] > 0 else None,
                        # a positive margin: every training window right, so the wrong ones are held out
                        "wrong": control_fresh[str(seed)]["held_out_wrong"]
                        if control_fresh[str(seed)]["margin"] > 0
                        else None,
                    }
                }
            }
            for seed in seeds
            if str(seed) in control_fresh
        }
    }


def given_fields(record: dict, parts: dict, control_fresh: dict, parameters: dict) -> dict:
    """The record's ``"given"`` and ``"box"`` fields.

    ``"given"``: what each step is given and learns (:func:`predcalc.calculator.given.given_table`,
    the kind features and the schedule), each given piece taken away on fresh seeds beside the
    shipped step on the same seeds (``"ablations"``: rows of :func:`variant_table`; the learned
    levels beside the study's given control, ``control_fresh``, on the same seeds), every step of the
    rule rung on fresh seeds (``"fresh_steps"``) and the backends the parts were trained on.
    ``"box"``: :func:`predcalc.calculator.box.record_box`."""
    level_seeds = sorted(parts.get("learned_levels", {}), key=int)
    controls = _control_rows(control_fresh, level_seeds)
    ablations = variant_table(parts) + variant_table(controls)
    ablations.sort(key=lambda row: (row["step"], row["variant"] != "given", row["variant"]))
    fresh = [row for row in variant_table(parts) if row["variant"] == "given"]
    fresh += variant_table(_control_rows(control_fresh, sorted(control_fresh, key=int)))
    return {
        "given": {
            "table": given_table(record.get("steps")),
            "kinds": kind_features(),
            "schedule": schedule(),
            "labels": dict(given_ablations.VARIANT_LABELS),
            "ablations": ablations,
            "fresh_steps": fresh,
            "parameters": parameters,
            "backends": sorted({r.get("backend", "?") for by_seed in parts.values() for r in by_seed.values()}),
        },
        "box": record_box(record),
    }


def _shares(values) -> str:
    from predcalc.readable import percent_number  # the one formatting rule of shares

    return ", ".join("?" if v is None else percent_number(v) for v in values)


def variant_frame(rows: list[dict], labels: dict | None = None):
    """Rows of :func:`variant_table` as a table, one per (step, variant): the seeds, how many are exact
    on the held-out inputs and on every input, the wrong held-out decisions and the share of training
    rows right of each seed, and each seed's end-to-end share (%) where scored. ``labels`` names the
    variants (without it the variant column is left out)."""
    import pandas as pd  # tables only when the notebook shows them

    table = []
    for row in rows:
        entry = {"step": row["step"]}
        if labels is not None:
            entry["variant"] = labels.get(row["variant"], row["variant"])
        entry |= {
            "seeds": ", ".join(str(s) for s in row["seeds"]),
            "exact seeds (held-out)": row["exact_seeds"],
            "exact seeds (all inputs)": row["exact_everywhere"],
            "of": len(row["seeds"]),
            "held-out inputs": row["held_out"],
            "wrong on held-out (per seed)": ", ".join(str(w) for w in row["held_out_wrong"]),
        }
        if labels is not None:
            entry["trained rows right % (per seed)"] = _shares(row["train_exact"])
        entry["end to end % (per seed)"] = _shares(row["end_to_end"]) if "end_to_end" in row else "not scored"
        table.append(entry)
    return pd.DataFrame(table)


def given_texts(given: dict) -> dict[str, str]:
    """The values the notebook glues from the record's ``"given"`` field, by name (``given_...``): the
    training expressions, the end-to-end draw's size and family seed, the backends and the parts' code
    fingerprints."""
    parameters = given["parameters"]
    return {
        "given_expressions": str(parameters["expressions"]),
        "given_draw_n": str(parameters["draw_n"]),
        "given_draw_seed": str(parameters["draw_seed"]),
        "given_backends": ", ".join(given["backends"]) or "none",
        "given_code_versions": ", ".join(given.get("code_versions", [])) or "none",
    }
