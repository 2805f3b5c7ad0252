"""The findings in a paper's shape, as data: Question, Answer, Method, Results, What we learned,
Limitations, then the Appendix (:class:`~predcalc.report.document.Document`).

Every number comes from the stored runs (``reports/runs/*/metrics.json``, the sweeps and the
edge suites' JSON); the prior report's published numbers come from
:mod:`predcalc.report.anchors`. Words that carry a claim say its box (inputs, digits, terms,
operators) and its kind (trained, partly built, memorised table, code).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from predcalc import recommended
from predcalc.paths import relative
from predcalc.readable import share
from predcalc.report import findings as F
from predcalc.report import prose, protocol_appendix
from predcalc.report.anchors import PRIOR_REPORT
from predcalc.report.answer import (
    CHOSEN_ON,
    HELD_OUT_KIND,
    MODEL_KINDS,
    answer_section,
    families_notes,
    retraining_shift,
    short_name,
    trained_exact_facts,
)
from predcalc.report.appendix import answer_suite_blocks, appendix_sections, budgets, data_seeds
from predcalc.report.budget import training_budgets
from predcalc.report.calculator import calculator_facts, calculator_lesson, mechanism, results_blocks
from predcalc.report.calculator_fresh import RESTART_CHOICE, calculator_payload, fresh_blocks
from predcalc.report.calculator_untouched import untouched_blocks
from predcalc.report.data_seeds import data_seed_facts
from predcalc.report.digits import digits_section
from predcalc.report.document import Bullets, Document, Figure, Section, Table, Text
from predcalc.report.edges import load_suites
from predcalc.report.lessons import learned_section
from predcalc.report.names import with_short_names
from predcalc.report.reach import held_out_shift, plot_reach, reach_caption, reach_frame
from predcalc.report.records import StoredRecord, prints_prior_score
from predcalc.report.related import related_section
from predcalc.report.rounded import rounded_facts, rounded_section
from predcalc.report.scoreboard import candidates
from predcalc.report.seed_split import not_superseded, seed_split_records
from predcalc.report.studies import FINISHES, extended_title, is_study
from predcalc.report.study_sections import trained_exact_section
from predcalc.report.tables import plain_cell

# The project's goal on the protocol: exact accuracy in / out / long, parameters, training seconds.
GOAL = F.GOAL

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


def _pct(value: float) -> str:
    return share(value, 1)


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
        # counts the sentences quote, from the data: training seeds per model, seeds of the held-out suite
        self.seeds = max((len(model.runs) for _, model in self.models.values()), default=0)
        held = (self.edges.get("heldout_record") or {}).get("models") or {}
        self.heldout_seeds = max((len(by_seed) for by_seed in held.values()), default=0)

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

    def exact_everywhere(self) -> list[str]:
        """Trained models exact on the three protocol test sets on every seed (the goal's accuracy)."""
        out = []
        for name in self.general.get("name", []):
            if name in FINISHES or name not in self.models:
                continue
            runs = self.models[name][1].runs
            if len(runs) >= 5 and all(min(self.accuracy(name, t)) >= GOAL[t] for t in ("in", "out", "long")):
                out.append(name)
        return out

    # ---- main part

    def question(self) -> Section:
        return Section(
            "question",
            "Question",
            [
                Text(
                    "A neural network reads an arithmetic expression (`3 - -2 + 4`) and predicts its value. Which "
                    "architecture does this best, and does any of them generalise: to unseen expressions, to numbers "
                    "outside the training range, to longer expressions? The common ground is the protocol of "
                    f"{PRIOR_REPORT}: training on `a op b op c` with integers -5..4 and `+`/`-`."
                )
            ],
        )

    def answer(self) -> Section:
        return answer_section(self)

    def method(self) -> Section:
        subsections = [self._protocol(), self._models(), self._mechanisms(), self._selection(), self._statistics()]
        return Section("method", "Method", [], subsections=[s for s in subsections if not s.empty])

    def _protocol(self) -> Section:
        counts = next((r.data for r in self.notebooks if r.data is not None and not is_study(r)), None)
        text = (
            f"The protocol of {PRIOR_REPORT} (its data split: the prior report's `GetXY.py`, part of that report's "
            "published code given to this project as its seed, not a file of this repository): expressions "
            "`a op b op c`, integers "
            "-5..4, `+`/`-`, written with spaces; 4,000 draws de-duplicated and split 75/25 into training and "
            "validation. Test sets: *in range* (every unseen expression of that form), *out of range* "
            "(integers from {-8..-5, 5..8}, all 2,048) and *long* (2 to 8 integers of -5..5, 100 per length). "
            "Exact accuracy counts a prediction that rounds to the true value; MAE is the mean absolute error."
        )
        blocks = [Text(text)]
        if counts:
            blocks.append(
                Text(
                    f"Data seed {counts['seed']} for every notebook: "
                    + ", ".join(f"{k} {v:,}" for k, v in counts["counts"].items())
                    + " expressions."
                )
            )
        return Section("method.protocol", "Protocol", blocks)

    def _models(self) -> Section:
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
        intro = Text(
            "The Appendix maps each name used here to its registry name, size and notebook. *Trained*: every weight "
            "by gradient "
            "descent; *partly built*: trained, then finished in closed form (a gate set by hand, a readout "
            "solved by least squares); the *built form* kinds (a computation's form built, its weights trained) are "
            "defined under the Appendix's *Reading the families table*. The prior report's rows are rebuilt as "
            "faithful replicas: "
            + ", ".join(
                short_name(n)
                for n in ("fnn2", "rnn2", "bilstm_attention", "transformer4_reference", "transformer5_reference")
            )
            + ". Where the prior report's code does not fix a size, its published parameter count is matched "
            "(Appendix)."
        )
        self.models_table = Table(pd.DataFrame(rows), cell=plain_cell) if rows else None
        return Section("method.models", "Models", [intro])

    def _models_appendix(self) -> Section:
        """The main text's names beside the registry names (the table :meth:`_models` builds)."""
        if getattr(self, "models_table", None) is None:
            self._models()
        if self.models_table is None:
            return Section("appendix.models", "The models by name", part="appendix")
        return Section("appendix.models", "The models by name", [self.models_table], part="appendix")

    def _mechanisms(self) -> Section:
        trains = {model.name: model.notebook for model in recommended.recommended()}
        items = [
            f"**Syntax-gated scan**, the *typed scan* (`scan_typed`, {trains['scan_typed']}): tokens arrive typed (number or operator, what a "
            "lexer knows). A linear recurrence whose gates read only the token type carries the sign of the next "
            "number; the value enters once, multiplied by that sign state, and a linear readout sums. Nothing in "
            "the recurrence depends on the magnitude of the numbers or on the length.",
            "**Gated readout with local token features**, the *gated-sum transformer, bounded* "
            f"(`transformer4_local_bounded`, {trains['transformer4_local_bounded']}): a "
            "transformer encoder (self-attention over every token, padding masked, no positional encoding) whose "
            "tokens are described by local features: the token, the token before it and its position's parity; "
            "the readout is a sum of the numbers' values (given), each scaled by a learned gate, instead of one "
            "CLS vector. *Bounded*: the features see tanh(x) so that large numbers do not saturate the gates. "
            "With the gates rounded to -1, 0 or 1 it is the *gated-sum transformer with rounded gates*.",
        ]
        if self.study("calculator"):
            items.append(mechanism(self.study("calculator")[0].to_json()))
        return Section("method.mechanisms", "How the main models work", [Bullets(items)])

    def _notebooks(self, text: str) -> str:
        """``text`` with ``<model>`` replaced by the notebook that trains a recommended model and
        ``<additive suite>`` by the extended-suite study trained on the protocol (names from data)."""
        for model in recommended.recommended():
            text = text.replace(f"<{model.name}>", model.notebook)
        additive = [r.notebook for r in self.study("extended") if "additive" in extended_title(r)]
        return text.replace("<additive suite>", ", ".join(additive) or "the extended-suite study")

    def _selection(self) -> Section:
        frame = pd.DataFrame(
            [
                {"choice": with_short_names(c), "chosen on": self._notebooks(on), "numbers it touches": touched}
                for c, on, touched in SELECTION
            ]
        )
        self.selection_table = Table(frame, cell=plain_cell)
        return Section(
            "method.selection",
            "Development and held-out data",
            [
                Text(
                    "Every set that chose a variant, a bound or a hyperparameter is a development set, and the numbers "
                    "it produced are development numbers. Claims about reach come only from the held-out suite 5151, "
                    "drawn after every choice (the sign scan's recipe included) and scored on every seed through "
                    "the exported files, and for the calculator from its held-out family draw. An earlier held-out "
                    "edge suite (seed 31) and a second (seed 4040), drawn as held out, then helped choose the sign "
                    "scan's recipe: they are development suites here, shown in the Appendix, not claimed on. "
                    "Suite 5151 served several studies in turn; no choice was made on it. "
                    "The Appendix's *Which set chose what* lists every choice and the numbers it touches."
                ),
            ],
        )

    def _selection_appendix(self) -> Section:
        """Every choice, the data that made it and the numbers it touches (the table :meth:`_selection` builds)."""
        if getattr(self, "selection_table", None) is None:
            self._selection()
        return Section("appendix.selection", "Which set chose what", [self.selection_table], part="appendix")

    def _statistics(self) -> Section:
        seeds = max((len(model.runs) for _, model in self.models.values()), default=1)
        items = prose.bullets(
            "statistics.md.j2",
            seeds=seeds,
            fresh=fresh_seed_counts(self),
            retrained=retraining_shift(self.edges, HELD_OUT_KIND),
            scored_notebooks=prints_prior_score(self.reports / "runs"),
            unequal_budgets=len(training_budgets(self)) > 1,
        )
        return Section("method.statistics", "Statistics", [Bullets(items)])

    def results(self) -> Section:
        subsections = [
            self._summary(),
            self._edges(),
            self._calculator(),
            trained_exact_section(self.notebooks),
            rounded_section(self.notebooks),
        ]
        return Section("results", "Results", [], subsections=[s for s in subsections if not s.empty])

    def _summary(self) -> Section:
        path = self.reports / "figures" / "reach.png"
        frame = reach_frame(self)
        if frame.empty:
            return Section("results.summary", "Summary", [])
        if self.figures or not path.is_file():  # the book reads the stored figure; `predcalc report` redraws it
            plot_reach(frame, path)
        facts = trained_exact_facts(self)
        caption = reach_caption(
            frame,
            self.heldout_seeds,
            held_out_shift(self.edges),
            facts["protocol_seeds"] if facts else "",
        )
        return Section("results.summary", "Summary", [Figure(path, caption)])

    def _edges(self) -> Section:
        return Section("results.edges", "Held-out suite", answer_suite_blocks(self))

    def _calculator(self) -> Section:

        records = self.study("calculator")
        payload = calculator_payload(records[0]) if records else {}
        blocks = (
            results_blocks(records[0].to_json()) + fresh_blocks(payload) + untouched_blocks(payload.get("untouched"))
            if records
            else []
        )
        return Section("results.calculator", "The learned calculator", blocks)

    def learned(self) -> Section:
        return learned_section(self, calculator_lesson)

    def limitations(self) -> Section:
        records = self.study("calculator")
        items = prose.bullets(
            "limitations.md.j2",
            seeds=self.seeds,
            retrained=retraining_shift(self.edges, HELD_OUT_KIND),
            scored=[short_name(n) for n in self.edges.get(HELD_OUT_KIND) or {}],
            calculator=calculator_facts(calculator_payload(records[0])) if records else None,
            sign_scan=trained_exact_facts(self),
            data_seeds=data_seed_facts(self.reports),
            rounded=rounded_facts(self.notebooks),
        )
        return Section("limitations", "Limitations", [Bullets(items)])

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
            families_notes(self),
            digits_section(self.study("digits"), self.relative),
            self._models_appendix(),
            self._selection_appendix(),
            budgets(self),
            data_seeds(self),
            *moved,
            *appendix_sections(self),
        ]

    def document(self) -> Document:
        main = [
            self.question(),
            self.answer(),
            related_section(self),
            self.method(),
            self.results(),
            self.learned(),
            self.limitations(),
        ]
        sources = self.table.get("source", pd.Series(dtype=str)).astype(str)
        rows = {
            record.notebook: self.table[sources.str.startswith(record.notebook + " ")] for record in self.notebooks
        }  # a notebook's own rows ("NB (profile, seeds)"), not the published
        facts = {
            "rows_by_notebook": rows,
            "table_rows": len(self.table),
            "notebooks": {r.notebook: self.relative(r) for r in self.notebooks},
        }
        note = (
            f"Generated by `predcalc report` from `{self.runs_label}/*/metrics.json`, the sweeps and the "
            "edge suites; do not edit by hand."
        )
        profiles = sorted({str(r.profile).split(" with ")[0] for r in self.notebooks} - {""})
        if profiles and profiles != ["full"]:
            note += " " + " ".join(
                prose.say("smoke_note.md.j2", profiles=profiles, seeds=self.seeds, notebooks=len(self.notebooks))
            )
        return Document(
            "Findings",
            [s for s in main if not s.empty] + self.appendix(),
            note,
            facts,
        )


def _scope_words(record: StoredRecord) -> str:
    """An extended-suite study's box in a few words: its operators and what it was trained on."""
    scope = record.entries["extended"].get("scope") or {}
    operators = "`+ - * /`, parentheses" if scope.get("parentheses") else "`+ -`"
    trained = (
        "trained on the protocol" if scope.get("trained_on", "protocol") != "extended suite" else "trained on its world"
    )
    return f"{operators}, {trained}"


def fresh_seed_counts(findings) -> list[dict]:
    """The models whose claim rests on their own fresh seeds, not the 5 training seeds: name and count."""
    sign, rounded = trained_exact_facts(findings), rounded_facts(findings.notebooks)
    counts = [(sign["name"], sign["fresh"]["seeds"]) if sign and sign["fresh"] else None]
    counts.append((rounded["name"], rounded["n"]) if rounded else None)
    return [{"name": name, "n": n} for name, n in filter(None, counts)]


def load_edges(reports: Path) -> dict:
    """The edge suites' stored scores (``reports/edges/*.json``), or {} before they were run."""

    return load_suites(Path(reports) / "edges")


def build_document(runs: Path = F.RUNS, reports: Path = F.REPORTS, figures: bool = False) -> Document:
    """The findings Document from the stored runs and sweeps under ``runs`` and ``reports``; with
    ``figures`` its figures are drawn again (else a stored figure is reused)."""

    notebooks = F.load_runs(runs)
    records = notebooks + not_superseded(seed_split_records(Path(reports) / "sweeps"), notebooks)

    return Findings(records, Path(reports), load_edges(reports), relative(Path(runs)), figures).document()
