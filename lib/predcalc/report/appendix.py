"""The findings' Appendix: every model, the prior report's columns computed its way, the recipe and
search studies, stabilised layers, the edge suites in detail, export, language models, speed, the
side studies, the calculator in detail and the runs (one function per section, each taking the
:class:`~predcalc.report.paper.Findings` of the stored runs)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from predcalc import recommended
from predcalc.calculator.given_study import given_markdown
from predcalc.data.protocol import reference_protocol
from predcalc.deploy.bench import deployment_markdown
from predcalc.report import findings as F
from predcalc.report import prose
from predcalc.report.anchors import REFERENCE_ROWS
from predcalc.report.answer import family_rows, trained_exact_record
from predcalc.report.budget import training_budgets
from predcalc.report.calculator import detail_blocks, section
from predcalc.report.calculator_fresh import calculator_payload, fresh_seed_blocks
from predcalc.report.cell import set_cell
from predcalc.report.data_seeds import data_seed_facts
from predcalc.report.document import Bullets, Figure, Section, Table, Text
from predcalc.report.edges import edges_lines, seed_facts, suite_blocks
from predcalc.report.names import short_name
from predcalc.report.recipe_ablation import peak_probe_lines, recipe_ablation_lines
from predcalc.report.rounded import rounded_details, suite_cells
from predcalc.report.scoreboard import TEXT as SCOREBOARD_TEXT
from predcalc.report.scoreboard import exact_signed_long, scoreboard_table
from predcalc.report.seed_split import seed_split_lines
from predcalc.report.studies import is_study, studies_markdown
from predcalc.report.study_sections import language_model_section, trained_exact_details
from predcalc.report.tables import plain_cell
from predcalc.studies.edges import THIRD_HELDOUT_SEED as HELD_OUT
from predcalc.training.runner import PROFILES
from predcalc.training.tune import final_comparison, search_facts


def _demote(lines: list[str]) -> list[str]:
    """Lines of an older markdown section without its own headings (the Section carries the title)."""
    return [line for line in lines if not line.startswith("#")]


def appendix_sections(findings) -> list[Section]:
    sections = [
        all_models(findings),
        reference_way(findings),
        recipe(findings),
        search(findings),
        stability(findings),
        development_edges(findings),
        trained_exact_details(findings.notebooks),
        rounded_details(findings.notebooks),
        export(findings),
        llm(findings),
        bench(findings),
        studies(findings),
        calculator_detail(findings),
        runs(findings),
    ]
    return [s for s in sections if not s.empty]


# Shown once, in the exact-accuracy table, not again beside the errors.
ACCURACY_COLUMNS = ("acc in", "acc out", "acc long")


def budgets(findings) -> Section:
    """The families table's training budgets (the Statistics say only that they differ)."""
    items = prose.bullets("budget.md.j2", budgets=training_budgets(findings))
    return Section("appendix.budgets", "Training budgets", [Bullets(items)] if items else [], part="appendix")


def data_seeds(findings) -> Section:
    """The cheapest exact models on two other data draws, seed by seed (the Limitations give the counts)."""
    facts = data_seed_facts(findings.reports)
    items = prose.bullets("data_seeds.md.j2", data_seeds=facts) if facts else []
    return Section("appendix.data_seeds", "Data seeds", [Bullets(items)] if items else [], part="appendix")


def all_models(findings) -> Section:
    if findings.general.empty:
        return Section(
            "appendix.all_models",
            "Every trained model",
            [Text("_no runs yet: `predcalc run` first._")],
            part="appendix",
        )
    general = findings.general.drop(columns=["name"])
    return Section(
        "appendix.all_models",
        "Every trained model",
        [
            Text(
                "Mean over seeds [lowest-highest seed] on the protocol's test sets, this project's definitions "
                "(MAE long an absolute error; MRE divided by max(|y|, 1)); *published* rows show only the "
                "columns the prior report defines the same way, means of its 5 runs as it published them. "
                "Exact accuracy is in the next table (not repeated here)."
            ),
            Table(F.model_table(findings.records, ranges=True).drop(columns=list(ACCURACY_COLUMNS), errors="ignore")),
            Text("Exact accuracy with the per-seed range, ordered by out-of-range then long accuracy:"),
            Table(general),
            *[Text(line) for line in F.ablation_lines(findings.records) if line.strip()],
            *[Text(line) for line in seed_split_lines(findings.records) if line.strip() and not line.startswith("#")],
        ],
        part="appendix",
    )


def reference_way(findings) -> Section:
    reference_way = F.reference_way_table(findings.records)
    if reference_way.empty:
        return Section("appendix.reference_way", "The prior report's columns, computed its way", part="appendix")
    data_seed = next(r.data["seed"] for r in findings.notebooks if r.data is not None and not is_study(r))
    perfect = exact_signed_long(reference_protocol(data_seed).test_long.values)
    blocks = [Text(F.REFERENCE_WAY_TEXT), Table(reference_way)]
    blocks += [Text(line) for line in F.reference_weights_lines(findings.records) if line.strip()]
    blocks += [
        Text(SCOREBOARD_TEXT.format(perfect=perfect, seeds=findings.seeds, p=2 ** (findings.seeds - 1))),
        Table(scoreboard_table(findings.pool), cell=plain_cell),
    ]
    return Section("appendix.reference_way", "The prior report's columns, computed its way", blocks, part="appendix")


def recipe(findings) -> Section:
    lines = recipe_ablation_lines(findings.records, findings.reports / "sweeps") + peak_probe_lines(
        findings.reports / "sweeps", findings.records
    )
    return Section(
        "appendix.recipe",
        "The prior report's transformer recipe",
        [Text(line) for line in _demote(lines)],
        part="appendix",
    )


def search(findings) -> Section:
    """The prior report's transformer5 search space, searched again (``predcalc tune``), and its
    best trial on 5 seeds against the published in-range MAE and the replica's."""
    folder = findings.reports / "tune" / "transformer5_reference_space"
    if not (folder / "tune.json").is_file():
        return Section("appendix.search", "The transformer5 search", part="appendix")
    summary = json.loads((folder / "tune.json").read_text())
    config = summary["config"]
    published = REFERENCE_ROWS["transformer5"]["mae_in"]
    lead = (
        f"The prior report chose transformer5's size and rate by a {config['trials']}-trial keras-tuner "
        "Bayesian search (25-epoch trials, validation loss). `predcalc tune tuning/transformer5_reference_space.yaml` "
        f"runs the same space and trial count on this protocol, resumable, with {config['epochs']}-epoch trials "
        "so that a trial fits this 2-core machine; trials choose on the validation split only."
    )
    if summary["trials_finished"] < config["trials"]:
        later = summary["trials_finished"] - int(summary["best"]["trial"]) - 1
        lead += (
            f" It stopped at {summary['trials_finished']} of {config['trials']} trials for time: the best so far "
            f"is trial {summary['best']['trial']}, and the {later} trials after it did not improve on it (the "
            "same command runs the rest)."
        )
    final = final_comparison(folder, published)
    if final is None:
        lead += (
            " The 5-seed training of the best trial, which the comparison with the published MAE needs, has not run."
        )
    else:
        mean, low, high = final["spread"]
        replica = (
            [r.metrics["in"]["mae"] for r in findings.models["transformer5_reference"][1].runs]
            if findings.has("transformer5_reference")
            else []
        )
        verdict = {
            "better": "it closes the gap (every seed is below the published MAE)",
            "worse": "it does not close the gap (every seed is above the published MAE)",
        }.get(final["test"]["verdict"], "whether it closes the gap is not resolved by the seeds")
        if replica and (min(final["mae"]) <= max(replica) and min(replica) <= max(final["mae"])):
            verdict += "; against `transformer5_reference` the seeds' ranges overlap: not resolved"
        lead += (
            f" The best trial, trained like `transformer5_reference` on {len(final['mae'])} seeds, reaches an in-range "
            f"MAE of {mean:.4g} [{low:.4g}-{high:.4g}] against the published {published}"
            + (
                f" and `transformer5_reference`'s {np.mean(replica):.4g} [{min(replica):.4g}-{max(replica):.4g}]"
                if replica
                else ""
            )
            + f": {verdict}."
        )
    blocks = [Text(lead), Bullets(search_facts(folder, published, "the published transformer5"))]
    if (folder / "trials.png").is_file():
        blocks.append(
            Figure(
                folder / "trials.png",
                "Each trial's validation loss against each searched hyperparameter (log scale where the space is).",
            )
        )
    return Section("appendix.search", "The transformer5 search, repeated", blocks, part="appendix")


def stability(findings) -> Section:
    stability = F.stability_table(findings.records)
    if stability.empty:
        return Section("appendix.stability", "Stabilised mLSTM and bounded Mamba", part="appendix")
    return Section(
        "appendix.stability",
        "Stabilised mLSTM and bounded Mamba, every seed",
        [Text(F.STABILITY_TEXT), Table(stability)],
        part="appendix",
    )


def development_edges(findings) -> Section:
    blocks = suite_blocks(findings.edges, "development", recommended.headline())
    every = answer_suite_blocks(findings, every=True)
    record = findings.edges.get("heldout_record")
    facts = seed_facts(record) if record else []
    return Section(
        "appendix.development_edges",
        "The edge suites in detail",
        [
            Text(
                "The development probe chose the tanh bound (Method); its sets are development numbers, shown for "
                "completeness, scored like the held-out suite:"
            ),
            *blocks,
            *([Text(f"The held-out suite {HELD_OUT}, every model scored on it:"), *every[1:]] if every else []),
            *first_heldout_blocks(findings),
            *(
                [Text(f"The held-out edge suite (seed {record['suite']['seed']}), model by model:"), Bullets(facts)]
                if facts
                else []
            ),
            Text("The first edge probe, as the 06 notebook scored it (first seed, Keras):"),
            *[Text(line) for line in _demote(edges_lines(findings.records))],
        ],
        part="appendix",
    )


def answer_suite_blocks(findings, every: bool = False) -> list:
    """The Answer's held-out suite (seed 5151), set by set: the Answer's models and the sign scan
    (``every``: every model scored on it, for the Appendix)."""
    third = findings.edges.get("third_heldout_record") or {}
    scored = list(third.get("models") or {})
    in_answer = {name for name, _ in family_rows(findings)}
    shown = scored if every else [name for name in scored if name in in_answer]
    blocks = with_sign_scan(findings, suite_blocks(findings.edges, "third_heldout", shown))
    if not blocks:
        return []
    left_out = [short_name(name) for name in scored if name not in shown]
    text = (
        f"The held-out suite {third['suite']['seed']} of the Answer's column, drawn after every choice of the models "
        "it scores, set by set: exact accuracy through each seed's exported ONNX file (retrained copies of the "
        "stored seeds), mean [min-max] over seeds and the seeds exact on every expression; a set longer than a "
        "model's files read is marked not read, not scored 0. The sign scan's and the gated-sum transformer with rounded gates' "
        "columns: their fresh seeds' ONNX files, the seeds of their claims (their sections below)."
        + (
            f" Also scored, in the Appendix's *The edge suites in detail*: the {'; the '.join(left_out)}."
            if left_out
            else ""
        )
    )
    return [Text(text), *blocks]


def first_heldout_blocks(findings) -> list:
    """The first held-out edge suite (seed 31), set by set: every model the edge study scored on it."""
    record = findings.edges.get("heldout_record")
    names = list((record or {}).get("models") or {})
    blocks = suite_blocks(findings.edges, "heldout", names) if names else []
    if not blocks:
        return []
    checked = next(iter(record["about"].values()))["unspaced_forms"]["checked"]
    text = (
        f"The first held-out edge suite (seed {record['suite']['seed']}), drawn after the choices of the models it "
        "scores (it was development data for the sign scan's recipe), through each seed's retrained copy's exported "
        "ONNX file at 159 tokens: mean [min-max] over seeds and the seeds exact on every expression. Unspaced forms "
        f"are not a set: the tokenisers lex spacing away before the network ({checked:,} expressions checked)."
    )
    return [Text(text), *blocks]


def with_sign_scan(findings, blocks: list) -> list:
    """The held-out suite's table with the sign scan's column added where its record scored the same
    suite (its fingerprint): its fresh seeds' ONNX scores, else its choosing seeds'."""
    record = trained_exact_record(findings)
    suite = (findings.edges.get("third_heldout_record") or {}).get("suite") or {}
    if not blocks or record is None or record["data"]["heldout"].get("fingerprint") != suite.get("fingerprint"):
        return blocks
    fresh = ((record.get("fresh") or {}).get("heldout") or {}).get("onnx") or {}
    by_seed = fresh or record["heldout"]["onnx"]
    frame = blocks[0].frame.copy()
    column = short_name("scan_exact") + (" (fresh seeds)" if fresh else "")
    cells = []
    for set_name in frame["set"]:
        values = [by_seed[s][set_name] for s in by_seed if set_name in by_seed[s]]
        cells.append(
            set_cell(float(np.mean(values)), min(values), max(values), sum(v >= 1.0 for v in values), len(values))
            if values
            else "not scored"
        )
    frame[column] = cells
    rounded = suite_cells(findings.notebooks, list(frame["set"]), suite.get("fingerprint"))
    if rounded:
        frame[rounded[0]] = rounded[1]
    return [Table(frame, cell=plain_cell), *blocks[1:]]


def export(findings) -> Section:
    exports = F.export_table(findings.records)
    if exports.empty:
        return Section("appendix.export", "Export", part="appendix")
    return Section(
        "appendix.export",
        "Export: LiteRT and ONNX against Keras",
        [
            Text(
                "First seed of each model, every test set; a verdict of *use* means the file gives the same exact "
                "answers as Keras (within 2 points). The recommended models' other seeds are checked in the "
                "held-out edge suite."
            ),
            Table(exports),
        ],
        part="appendix",
    )


def llm(findings) -> Section:
    gemma = language_model_section(findings.notebooks)
    if not gemma.empty:  # the pre-trained Gemma 3 270M beside the prior report's row (its study's template)
        return Section("appendix.llm", gemma.title, gemma.blocks, part="appendix")
    if not any(record.entries.get("llm") for record in findings.records):
        return Section("appendix.llm", "Fine-tuned language models", part="appendix")
    return Section(
        "appendix.llm",
        "Fine-tuned language models",
        [
            Table(F.llm_table(findings.records)),
            Text(
                "Rows that are not pre-trained are tiny models trained from random weights here: they check the "
                "fine-tuning pipeline and are not results of Gemma itself. The published rows are single runs "
                "of the prior report, scored on its own sets."
            ),
        ],
        part="appendix",
    )


def bench(findings) -> Section:
    bench = findings.reports / "bench.json"
    if not bench.is_file():
        return Section("appendix.bench", "Deployment speed", part="appendix")

    return Section(
        "appendix.bench",
        "Deployment speed (`predcalc bench`)",
        [Text(line) for line in _demote(deployment_markdown(json.loads(bench.read_text())))],
        part="appendix",
    )


def studies(findings) -> Section:
    subsections = []
    for record in findings.notebooks:
        if not is_study(record) or record.study == "calculator":
            continue
        lines = studies_markdown([record], {record.notebook: findings.relative(record)})
        lines = [line for line in lines if line.strip() != "## Studies"]
        title = next((line.lstrip("# ").strip() for line in lines if line.startswith("### ")), record.notebook)
        body = [line for line in lines if not line.startswith("### ")]
        if not any(line.strip() for line in body):
            continue  # a study this page has no section for: the Runs list links its notebook
        subsections.append(
            Section(
                f"appendix.studies.{record.notebook}",
                title,
                [Text(line) for line in body if line.strip()],
                part="appendix",
                notebooks=[record.notebook],
            )
        )
    return Section("appendix.studies", "Side studies", [], part="appendix", subsections=subsections)


def calculator_detail(findings) -> Section:

    records = findings.study("calculator")
    if not records:
        return Section("appendix.calculator", "The learned calculator in detail", part="appendix")
    given = records[0].to_json()  # the calculator study's stored payload, which its templates read
    lines = section(given, findings.relative(records[0]))
    # what the calculator is given, each given piece taken away on fresh seeds, every rule step on
    # fresh seeds and the measured box: the calculator study's own templates
    extra = [Text(given_markdown(given))] if "given" in given and "box" in given else []
    moved = detail_blocks(given) + fresh_seed_blocks(calculator_payload(records[0]))  # from the Results
    return Section(
        "appendix.calculator",
        "The learned calculator in detail",
        moved + [Text(line) for line in _demote(lines) if line.strip()] + extra,
        part="appendix",
        notebooks=[records[0].notebook],
    )


def runs(findings) -> Section:
    items = []
    for record in findings.records:
        if record.sweep:
            name, parameters = record.sweep, record.parameters
            items.append(
                f"sweep `{name}` in `reports/{findings.relative(record)}/` (`predcalc sweep "
                f"sweeps/{name}.yaml`): {record.notebook}, seeds {parameters['seeds']}"
            )
            continue
        profile = record.profile
        base = profile.split(" with ")[0] if isinstance(profile, str) else profile
        command = (
            f"predcalc run --profile {base} --only {record.notebook}"
            if base in PROFILES
            else f"predcalc run --only {record.notebook}"
        )
        if record.overrides:
            command += " --set " + " ".join(f"'{k}={json.dumps(v)}'" for k, v in record.overrides.items())
        items.append(f"[{record.notebook}]({findings.relative(record)}/{record.notebook}.ipynb): `{command}`")
    items += runs_without_metrics(findings)
    return Section(
        "appendix.runs",
        "Runs",
        [
            Text(
                "Each run's notebook and the command that reproduces it (`predcalc run` executes the notebook into "
                "`reports/runs/`, then `predcalc report` rebuilds this page; `make report PROFILE=full` does all)."
            ),
            Bullets(items),
        ],
        part="appendix",
    )


def runs_without_metrics(findings) -> list[str]:
    """Notebooks run beside the records (a ``run.json``) that store no metrics.json: a walk-through
    or a study whose record lives elsewhere, listed so that every executed notebook is reachable."""
    listed = {record.notebook for record in findings.notebooks}
    items = []
    for root in sorted({Path(record.folder).parent for record in findings.notebooks}):
        for run in sorted(root.glob("*/run.json")):
            name = run.parent.name
            if name in listed or not (run.parent / f"{name}.ipynb").is_file():
                continue
            profile = json.loads(run.read_text()).get("profile")
            folder = Path(os.path.relpath(run.parent, findings.reports)).as_posix()
            command = (
                f"predcalc run --profile {profile} --only {name}"
                if profile in PROFILES
                else f"predcalc run --only {name}"
            )
            items.append(f"[{name}]({folder}/{name}.ipynb): `{command}` (no metrics.json)")
    return items
