"""The findings as data (:class:`~predcalc.report.document.Document`): the hand-written Question,
Answer, Method, Results and Limitations (:mod:`~predcalc.report.written`), then the generated
Appendix.

Every number of the Appendix comes from the stored runs (``reports/runs/*/metrics.json``, the
sweeps and the edge suites' JSON); the prior report's published numbers come from
:mod:`predcalc.report.anchors`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from predcalc import recommended
from predcalc.paths import relative
from predcalc.report import findings as F
from predcalc.report import protocol_appendix, written
from predcalc.report.answer import (
    CHOSEN_ON,
    MODEL_KINDS,
    families_table,
    short_name,
)
from predcalc.report.appendix import answer_suite_blocks, appendix_sections, budgets, data_seeds
from predcalc.report.calculator_fresh import RESTART_CHOICE
from predcalc.report.digits import digits_section
from predcalc.report.document import Document, Section, Table, Text
from predcalc.report.edges import load_suites
from predcalc.report.names import with_short_names
from predcalc.report.reach import plot_reach, reach_frame
from predcalc.report.records import StoredRecord
from predcalc.report.scoreboard import candidates
from predcalc.report.seed_split import not_superseded, seed_split_records
from predcalc.report.studies import FINISHES, extended_title
from predcalc.report.tables import plain_cell

# Which choice was made on which data (the development side of the protocol). A set that chose
# something is a development set: the claims about reach come from the held-out edge suite.
SELECTION = [
    (
        "the families table's model of each family (Answer)",
        f"{CHOSEN_ON['trained']} (trained); {CHOSEN_ON['partly built']} (partly built)",
        "none of the held-out numbers",
    ),
    (
        "`transformer4_reference` -> `transformer4_gated` -> `transformer4_local` -> `transformer4_local_bounded` "
        "(readout, then token features, then their bound), in that order",
        "the protocol's out-of-range (-8..8) and long (2-8 terms) test sets",
        "out-of-range and long accuracy of these four",
    ),
    (
        "the tanh bound of `transformer4_local_bounded`",
        "the development edge probe: 3 numbers of -99..99, 20 and 60 terms",
        "that probe's axes",
    ),
    ("the peak learning rate of `transformer5_reference`", "validation loss of 25-epoch trials (a sweep)", "none"),
    (
        "the tuned transformer5's size and rate (`predcalc tune`, the prior report's space)",
        "validation loss of 10-epoch trials, seed 0",
        "none",
    ),
    (
        "the syntax-gated scan's design (typed tokens, multiplicative value path)",
        "the protocol's test sets (in, out of range, long), through the ablations of <scan_typed>",
        "its in-range, out-of-range and long accuracy",
    ),
    (
        "the scan's closed-form finishes (operators overwrite, readout solved by least squares), the partly built "
        "`scan_typed_solved`",
        "the protocol's test sets and the extended suite of <additive suite> (`+ -`, up to 6 digits, more terms)",
        "the finishes' scores on those sets",
    ),
    (
        "`mlstm_stable`, `mamba_bounded` (stabilisers)",
        "seeds that failed in the first full runs (in and out of range)",
        "their in and out-of-range accuracy",
    ),
    (
        "the sign scan's training recipe (straight-through gates, clamp, closed initial gates, soft write gradient, "
        "fixed gate threshold)",
        "in <scan_exact>, over its seeds 0-9: the held-out edge suite's sets it can read (seed 31) and a second suite "
        "(seed 4040), both development data for this model",
        "its exact-seed counts on those suites and its ablation; its claim uses a third suite (seed 5151) drawn after, "
        "on fresh seeds",
    ),
    (
        "the calculator's rule units, learned schedule and the control's relations and maximum-margin training",
        "each step's check on every reachable input and the calculator families of family seed 1000 with the "
        "adversarial draw of seed 2000, on training seeds 0-14",
        "the development draw's family scores and the control's held-out windows on seeds 0-14 (the claims use "
        "family seed 7777 and control seeds 15-24)",
    ),
    RESTART_CHOICE,
]

# One line per family of the main tables: the registry names shown, faithful replicas first.
FAMILIES = {
    "FNN": ("fnn2", "fnn2_cosine", "fnn_baseline"),
    "RNN": ("rnn2",),
    "LSTM / GRU": ("lstm", "gru", "lstm_typed"),
    "BiLSTM + attention": ("bilstm_attention",),
    "transformer (regression)": ("transformer4_reference", "transformer5_reference", "transformer4_local_bounded"),
    "efficient RNN": ("min_gru", "min_lstm", "slstm", "mlstm_stable", "mamba_bounded"),
    "arithmetic units (NAU / NMU)": ("nau_nmu", "nau_nmu_dense"),
    "syntax-gated scan": ("scan_typed",),
}


NO_RUNS = "_no runs yet: `predcalc run` first._"
FAMILIES_NOTE = (
    "One model of each family, chosen on development data. Each cell: exact accuracy as the mean over "
    "seeds, the seeds exact on every expression, and the lowest and highest seed (%). The held-out column "
    "is suite 5151, read through each seed's exported files; a set longer than a model's files read is "
    "not read, not scored 0."
)
SMOKE_NOTE = (
    "**Smoke result.** This Appendix comes from a quick run, with fewer seeds and epochs than the full "
    "profile: it shows that every notebook runs end to end, not what the models can do. The hand-written "
    "findings above it state the full profile's numbers (`reports/findings.md`)."
)


class Findings:
    """The stored runs, indexed once; each ``*_section`` method returns one Section."""

    def __init__(
        self,
        records: list[StoredRecord],
        reports: Path,
        edges: dict | None = None,
        runs_label: str = "reports/runs",
        figures: bool = False,
    ):
        self.records, self.reports, self.runs_label, self.figures = records, Path(reports), runs_label, figures
        self.notebooks = [r for r in records if not r.sweep]
        self.models = {name: (record, model) for record, name, model, _ in F.unique_models(records)}
        self.general = F.generalisation_table(records)
        self.table = F.model_table(records)
        self.edges = edges or {}
        pool = [(name, model) for name, (_, model) in self.models.items() if name not in FINISHES]
        self.pool = candidates(pool, F.baseline_runs(records))
        # the most training seeds of any model, which the Appendix's scoreboard quotes
        self.seeds = max((len(model.runs) for _, model in self.models.values()), default=0)

    # ---- helpers

    def accuracy(self, name: str, test_set: str) -> list[float]:
        return [r.metrics[test_set]["accuracy"] for r in self.models[name][1].runs]

    def has(self, *names: str) -> bool:
        return all(name in self.models for name in names)

    def study(self, key: str) -> list[StoredRecord]:
        """The notebook records of the study ``key`` (``"calculator"``, ``"extended"``...), by their kind."""
        return [r for r in self.notebooks if r.study == key]

    def relative(self, record: StoredRecord) -> str:
        return Path(os.path.relpath(record.folder, self.reports)).as_posix()

    def _models_table(self) -> Table | None:
        """The names used in the text beside the registry names, sizes, kinds and notebooks."""
        rows = []
        for family, names in FAMILIES.items():
            for name in names:
                if name not in self.models:
                    continue
                record, model = self.models[name]
                rows.append(
                    {
                        "name in the text": short_name(name),
                        "registry name": f"`{name}`",
                        "family": family,
                        "what it is": model.label,
                        "params": model.params,
                        "kind": MODEL_KINDS.get(name, "trained"),
                        "notebook": record.notebook,
                    }
                )
        for name in FINISHES:
            if name in self.models:
                record, model = self.models[name]
                rows.append(
                    {
                        "name in the text": short_name(name),
                        "registry name": f"`{name}`",
                        "family": "syntax-gated scan",
                        "what it is": model.label,
                        "params": model.params,
                        "kind": "partly built (closed form)",
                        "notebook": record.notebook,
                    }
                )
        return Table(pd.DataFrame(rows), cell=plain_cell) if rows else None

    def _models_appendix(self) -> Section:
        """The names used in the text beside the registry names (:meth:`_models_table`)."""
        table = self._models_table()
        return Section("appendix.models", "The models by name", [table] if table else [], part="appendix")

    def _notebooks(self, text: str) -> str:
        """``text`` with ``<model>`` replaced by the notebook that trains a recommended model and
        ``<additive suite>`` by the extended-suite study trained on the protocol (names from data)."""
        for model in recommended.recommended():
            text = text.replace(f"<{model.name}>", model.notebook)
        additive = [r.notebook for r in self.study("extended") if "additive" in extended_title(r)]
        return text.replace("<additive suite>", ", ".join(additive) or "the extended-suite study")

    def _selection_appendix(self) -> Section:
        """Every choice, the data that made it and the numbers it touches."""
        frame = pd.DataFrame(
            [
                {"choice": with_short_names(c), "chosen on": self._notebooks(on), "numbers it touches": touched}
                for c, on, touched in SELECTION
            ]
        )
        return Section("appendix.selection", "Which set chose what", [Table(frame, cell=plain_cell)], part="appendix")

    def _held_out_appendix(self) -> Section:
        """The held-out suite set by set, through each seed's exported files."""
        return Section(
            "appendix.held_out", "The held-out suite, set by set", answer_suite_blocks(self), part="appendix"
        )

    def appendix(self) -> list[Section]:
        protocol_names = [n for names in FAMILIES.values() for n in names]
        moved = [
            s
            for s in (
                protocol_appendix.reference_protocol(self, protocol_names),
                protocol_appendix.published(self),
                protocol_appendix.extended(self),
            )
            if not s.empty
        ]
        return [
            self.families(),
            digits_section(self.study("digits"), self.relative),
            self._models_appendix(),
            self._selection_appendix(),
            self._held_out_appendix(),
            budgets(self),
            data_seeds(self),
            *moved,
            *appendix_sections(self),
        ]

    def families(self) -> Section:
        """The families table: each family's model, chosen on development data, on every set."""
        table = families_table(self)
        if table.empty:
            return Section("appendix.families", "The families table", [Text(NO_RUNS)], part="appendix")
        return Section(
            "appendix.families",
            "The families table",
            [Text(FAMILIES_NOTE), Table(table, cell=plain_cell)],
            part="appendix",
        )

    def document(self, prose: str = "") -> Document:
        """The findings: the hand-written sections of ``prose`` (:mod:`~predcalc.report.written`),
        then the generated Appendix; the summary figure is drawn again when ``figures`` is set."""
        path = self.reports / "figures" / "reach.png"
        frame = reach_frame(self)
        if not frame.empty and (self.figures or not path.is_file()):  # the book reads the stored figure
            plot_reach(frame, path)
        sources = self.table.get("source", pd.Series(dtype=str)).astype(str)
        rows = {
            record.notebook: self.table[sources.str.startswith(record.notebook + " ")] for record in self.notebooks
        }  # a notebook's own rows ("NB (profile, seeds)"), not the published
        facts = {
            "rows_by_notebook": rows,
            "table_rows": len(self.table),
            "notebooks": {r.notebook: self.relative(r) for r in self.notebooks},
            "prose": prose,
        }
        note = (
            f"Generated by `predcalc report` from `{self.runs_label}/*/metrics.json`, the sweeps and the "
            "edge suites; do not edit by hand."
        )
        profiles = sorted({str(r.profile).split(" with ")[0] for r in self.notebooks} - {""})
        if profiles and profiles != ["full"]:
            note += " " + SMOKE_NOTE
        return Document("Findings", written.sections(prose) + self.appendix(), note, facts)


def load_edges(reports: Path) -> dict:
    """The edge suites' stored scores (``reports/edges/*.json``), or {} before they were run."""

    return load_suites(Path(reports) / "edges")


def build_document(runs: Path = F.RUNS, reports: Path = F.REPORTS, figures: bool = False) -> Document:
    """The findings Document from the stored runs and sweeps under ``runs`` and ``reports``; with
    ``figures`` its figures are drawn again (else a stored figure is reused)."""

    notebooks = F.load_runs(runs)
    records = notebooks + not_superseded(seed_split_records(Path(reports) / "sweeps"), notebooks)

    prose = written.read() if written.SOURCE.is_file() else ""
    return Findings(records, Path(reports), load_edges(reports), relative(Path(runs)), figures).document(prose)
