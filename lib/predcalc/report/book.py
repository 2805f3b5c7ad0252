"""The report as a browsable book (``make book``, ``python -m predcalc.report.book``).

Builds a static site with Sphinx, MyST-NB and the Sphinx Book Theme from what is already
there: ``reports/findings.md`` (the plain-text source of the numbers, written by
``predcalc report``), the executed notebooks in ``reports/runs/NAME/NAME.ipynb`` and the
README. Nothing is executed. The pages are written into ``build/book_src/`` (with
``book/conf.py`` and ``book/_static/``), the site into ``build/book/`` (``index.html`` at its
root).

Chapters: the question and the answer (``index``), the results split by question, one page per
architecture notebook and per study notebook (a notebook without an executed copy falls back to
its source in ``notebooks/``, with a note saying so), deployment, how to reproduce, and the
findings page itself. Numbers are formatted for people on the way: percentages with one
decimal, errors in plain notation (or ``4.2 × 10⁻⁷``), scores past a million marked unbounded.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from predcalc.paths import ROOT

CONFIG = ROOT / "book"
SOURCE = ROOT / "build" / "book_src"
OUT = ROOT / "build" / "book"

MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full"
WIDE_FIGURE = 900  # pixels: a notebook figure wider than the text column spans the margin too
UNBOUNDED = 1e6  # a benchmark score past this divides by an error at float32 precision

# Notebooks 01-19 and 30 train architectures on the seed's protocol; the rest are studies.
ARCHITECTURE_PREFIXES = tuple(f"{i:02d}_" for i in range(1, 20)) + ("30_",)


# --------------------------------------------------------------------------- numbers


def _float(text: str) -> float | None:
    text = text.strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def scientific(value: float, digits: int = 2) -> str:
    """``4.2 × 10⁻⁷``: scientific notation as a person writes it."""
    exponent = math.floor(math.log10(abs(value)))
    mantissa = value / 10 ** exponent
    if round(mantissa, digits - 1) >= 10:
        mantissa, exponent = mantissa / 10, exponent + 1
    return f"{mantissa:.{digits - 1}f}\u00a0×\u00a010{str(exponent).translate(_SUPERSCRIPT)}"


def number(value: float | str, digits: int = 3) -> str:
    """An error or a ratio in plain notation with ``digits`` significant digits.

    ``0.0651``, ``2.47``, ``410``, ``3,447,000``; below 0.0001 ``4.2 × 10⁻⁷``."""
    if isinstance(value, str):
        parsed = _float(value)
        if parsed is None:
            return value.strip()
        value = parsed
    if not math.isfinite(value):
        return "∞" if value > 0 else ("−∞" if value < 0 else "n/a")
    if value == 0:
        return "0"
    if abs(value) < 1e-4:
        return scientific(value)
    if abs(value) >= 10 ** digits:
        return f"{round(value, digits - 1 - math.floor(math.log10(abs(value)))):,.0f}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def percent(text: str, decimals: int = 1) -> str:
    """``99.97 %`` -> ``100.0 %``; empty stays empty."""
    value = _float(text.replace("%", ""))
    return "" if value is None else f"{value:.{decimals}f}\u00a0%"


def score(text: str) -> str:
    """The seed's benchmark score: plain up to a million, past it ``unbounded``."""
    value = _float(text)
    if value is None:
        return text.strip()
    if value >= UNBOUNDED:
        return "unbounded"
    return number(value)


def p_value(text: str) -> str:
    value = _float(text)
    if value is None:
        return text.strip()
    return "< 0.001" if value < 0.001 else number(value, 2)


_SCI = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?e[+-]?\d+)(?![\w.])")
_PCT2 = re.compile(r"(?<![\w.])(\d+\.\d\d) %")


def prose(text: str) -> str:
    """Numbers inside a sentence: ``100.00 %`` -> ``100.0 %``, ``1.06e-06`` -> ``1.1 × 10⁻⁶``."""
    text = _PCT2.sub(lambda m: f"{float(m.group(1)):.1f}\u00a0%", text)
    return _SCI.sub(lambda m: number(float(m.group(1))), text)


def cell(column: str, text: str) -> str:
    """One table cell, formatted by what its column holds."""
    name = column.strip().lower()
    if not text.strip():
        return ""
    if name == "score":
        return score(text)
    if name == "p":
        return p_value(text)
    if text.strip().endswith("%") and _float(text.replace("%", "")) is not None:
        return percent(text)
    if _SCI.fullmatch(text.strip()):
        return number(text)
    return prose(text.strip())


# --------------------------------------------------------------------------- findings.md


@dataclasses.dataclass
class Section:
    level: int
    title: str
    lines: list[str]


@dataclasses.dataclass
class Table:
    header: list[str]
    rows: list[list[str]]

    def column(self, name: str) -> int:
        return self.header.index(name)

    def records(self) -> list[dict[str, str]]:
        return [dict(zip(self.header, row)) for row in self.rows]


def sections(text: str) -> list[Section]:
    """The markdown split at every heading (the text before the first one is dropped)."""
    found: list[Section] = []
    fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        match = None if fence else re.match(r"^(#{1,6}) (.*)$", line)
        if match:
            found.append(Section(len(match.group(1)), match.group(2).strip(), []))
        elif found:
            found[-1].lines.append(line)
    return found


def find(found: list[Section], prefix: str) -> Section | None:
    return next((s for s in found if s.title.startswith(prefix)), None)


def _split_row(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def tables(lines: list[str]) -> list[Table]:
    out, block = [], []
    for line in lines + [""]:
        if line.startswith("|"):
            block.append(line)
            continue
        if len(block) >= 2:
            header = _split_row(block[0])
            rows = [_split_row(b) for b in block[2:]]
            out.append(Table(header, [r + [""] * (len(header) - len(r)) for r in rows]))
        block = []
    return out


def paragraphs(lines: list[str]) -> list[str]:
    """The lines that are neither table rows nor images."""
    return [line for line in lines if not line.startswith("|") and not line.lstrip().startswith("![")]


def markdown_table(header: list[str], rows: list[list[str]], right: set[int] | None = None) -> str:
    right = set(range(1, len(header))) if right is None else right
    rule = ["---:" if i in right else "---" for i in range(len(header))]
    body = [header, rule] + rows
    return "\n".join("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body)


def notebook_of(source: str) -> str:
    """``03_lstm (full, 5 seeds; ...)`` -> ``03_lstm``."""
    return source.split(" ")[0]


# --------------------------------------------------------------------------- pages


@dataclasses.dataclass
class Notebook:
    name: str
    path: Path
    executed: bool
    title: str
    run: dict

    @property
    def doc(self) -> str:
        return f"notebooks/{self.name}"

    @property
    def architecture(self) -> bool:
        return self.name.startswith(ARCHITECTURE_PREFIXES)


def _png_width(output: dict) -> int:
    """The pixel width of an output's PNG (0 when it has none)."""
    import base64

    data = output.get("data", {}).get("image/png")
    if not data:
        return 0
    head = base64.b64decode("".join(data)[:64])
    return int.from_bytes(head[16:20], "big") if head[:8] == b"\x89PNG\r\n\x1a\n" else 0


def _question(path: Path) -> str:
    """The notebook's ``**Question.**`` paragraph, without the label."""
    notebook = json.loads(path.read_text())
    for c in notebook["cells"]:
        if c["cell_type"] == "markdown":
            paragraphs = "".join(c["source"]).split("\n\n")
            start = next((i for i, p in enumerate(paragraphs) if p.startswith("**Question.**")), None)
            if start is None:
                continue
            kept = []  # up to the paragraph that asks, leaving out display formulas
            for paragraph in paragraphs[start:start + 4]:
                if not paragraph.lstrip().startswith("$$"):
                    kept.append(" ".join(paragraph.split()))
                if paragraph.rstrip().endswith("?"):
                    break
            return " ".join(kept).removeprefix("**Question.**").strip()
    return ""


def _title(path: Path) -> str:
    notebook = json.loads(path.read_text())
    for c in notebook["cells"]:
        if c["cell_type"] == "markdown":
            for line in "".join(c["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return path.stem


def notebooks(root: Path = ROOT) -> list[Notebook]:
    """Every notebook in ``notebooks/``, paired with its executed copy when there is one."""
    from predcalc.training.runner import ALIASES, discover

    found = []
    for listed in discover(directory=root / "notebooks"):
        name = listed.stem  # an alias (03_lstm) runs its template (03_gated_rnn) under its own name
        source = listed if listed.exists() else listed.with_name(f"{ALIASES[name][0]}.ipynb")
        executed = root / "reports" / "runs" / name / f"{name}.ipynb"
        path = executed if executed.exists() else source
        run_json = executed.parent / "run.json"
        run = json.loads(run_json.read_text()) if run_json.exists() else {}
        found.append(Notebook(name, path, executed.exists(), _title(path), run))
    return found


def _link(notebook: Notebook, text: str | None = None) -> str:
    return f"[{text or notebook.title}]({notebook.doc}.ipynb)"


def _toctree(docs: list[str], caption: str | None = None) -> list[str]:
    return ["```{toctree}", ":hidden:", *([f":caption: {caption}"] if caption else []), "", *docs, "```", ""]


def _short_title(notebook: Notebook) -> str:
    """``03 · LSTM: ...`` -> ``LSTM: ...`` (the number is in the contents already)."""
    return re.sub(r"^\d\d\s*·\s*", "", notebook.title)


class Book:
    """Writes the pages of the book from the findings, the README and the notebooks."""

    def __init__(self, root: Path = ROOT):
        self.root = root
        self.findings_text = (root / "reports" / "findings.md").read_text()
        self.findings = sections(self.findings_text)
        self.readme = sections((root / "README.md").read_text())
        self.notebooks = notebooks(root)
        self.by_name = {n.name: n for n in self.notebooks}
        results = find(self.findings, "Results")
        self.results = tables(results.lines)[0] if results else Table([], [])
        general = find(self.findings, "What generalises")
        self.general = tables(general.lines)[0] if general and tables(general.lines) else Table([], [])

    # ---- helpers

    def _readme(self, title: str) -> str:
        section = find(self.readme, title)
        return self._relink("\n".join(section.lines).strip()) if section else ""

    def _relink(self, text: str) -> str:
        """Links into the repository: the findings and notebooks go to their pages, others become paths."""

        def replace(match):
            label, target = match.group(1), match.group(2)
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                return match.group(0)
            name = Path(target).stem
            if target.endswith("findings.md"):
                return f"[{label}](findings.md)"
            if target.endswith(".ipynb") and name in self.by_name:
                return f"[{label}]({self.by_name[name].doc}.ipynb)"
            return label if label.startswith("`") else f"{label} (`{target}`)"

        return re.sub(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)", replace, text)

    def _model_link(self, model: str, name: str) -> str:
        return f"[{model}]({self.by_name[name].doc}.ipynb)" if name in self.by_name else model

    def _results(self) -> list[dict]:
        """The results rows, each with ``notebook``: the one that trained it (or its model's)."""
        rows, current = [], ""
        for record in self.results.records():
            if record["source"] != "seed (published)":
                current = notebook_of(record["source"])
            rows.append({**record, "notebook": current})
        return rows

    def _result_model(self, r: dict) -> str:
        if r["source"] == "seed (published)":
            return f"{r['model']} <small>(seed, published)</small>"
        return self._model_link(r["model"], r["notebook"])

    def _notebook_rows(self, name: str) -> list[list[str]]:
        """The results rows a notebook trained (published seed rows stay with their model)."""
        rows, current = [], None
        for record in self.results.records():
            source = record["source"]
            if source != "seed (published)":
                current = notebook_of(source)
            if current == name:
                rows.append(record)
        return rows

    # ---- chapters

    def index(self) -> str:
        question = find(self.findings, "Question")
        answer = find(self.findings, "Answer")
        architectures = [n for n in self.notebooks if n.architecture]
        studies = [n for n in self.notebooks if not n.architecture]
        lines = [
            "# The question and the answer", "",
            "A neural network reads an arithmetic expression (`3 - -2 + 4`) and predicts its value. "
            "This book is the research report of *predcalc*: the findings and every executed notebook "
            "(Keras 3), published together. The numbers come from `reports/findings.md`, which "
            "`predcalc report` writes from the runs' `metrics.json`; each notebook page is the "
            "executed copy in `reports/runs/`, shown as it ran (nothing is re-run to build the book).", "",
            "## The question", "",
            *(prose(line) for line in question.lines if line.strip()), "",
            "## The answer", "",
            *(prose(line) for line in answer.lines), "",
            "## How to read it", "",
            "- [Results, question by question](results.md): exact accuracy in range, out of range and on "
            "long expressions; the size of the errors; the seed's benchmark score; why the winner "
            "generalises; fine-tuned language models; threats to validity.",
            f"- [Architectures](architectures.md): one chapter per architecture notebook "
            f"({len(architectures)}), each opening with its numbers from the findings.",
            f"- [Studies](studies.md): {len(studies)} studies (backpropagation by hand, vanishing "
            "gradients, parallel scans, time series, explanations, the extended suites).",
            "- [Deployment](deployment.md): the exported artifacts, their agreement with Keras, and "
            "their speed.",
            "- [How to reproduce](reproduce.md): the commands that rebuild every number here.",
            "- [The findings page](findings.md): `findings.md` in one page, the plain-text source of "
            "every number.", "",
        ]
        lines += _toctree(["results", "architectures", "studies", "deployment", "reproduce", "findings"],
                          caption="Chapters")
        return "\n".join(lines)

    def results_page(self) -> str:
        lines = ["# Results, question by question", "",
                 "The tables of `findings.md`, one per question. Means over seeds; rows marked "
                 "*seed (published)* are the seed's own numbers. Percentages are exact accuracy: a "
                 "prediction counts when it rounds to the true value.", ""]
        protocol = find(self.findings, "Protocol")
        if protocol:
            first = next((line for line in protocol.lines if line.strip()), "")
            lines += ["```{admonition} The protocol", prose(first), "```", ""]
        lines += self._exact_where() + self._errors() + self._scores() + self._why()
        lines += self._language_models() + self._threats()
        return "\n".join(lines)

    def _exact_where(self) -> list[str]:
        if not self.general.rows:
            return []
        section = find(self.findings, "What generalises")
        intro = next((line for line in section.lines if line.strip()), "")
        rows = []
        for r in self.general.records():
            nb = notebook_of(r["source"])

            def with_ci(t):
                ci = r.get(f"95 % CI {t}", "").replace(" to ", "–").replace(" %", "")
                return f"{percent(r[f'acc {t}'])}<br><small>{ci}</small>" if ci else percent(r[f"acc {t}"])

            rows.append([self._model_link(r["model"], nb), r["params"], with_ci("in"), with_ci("out"),
                         with_ci("long"), number(r.get("train s (max)", ""))])
        summary = [prose(line) for line in paragraphs(section.lines)
                   if line.startswith("Best out of range")]
        return ["## Which model is exact, and where?", "", prose(intro) + " Under each accuracy, its 95 % "
                "confidence interval over seeds.", "",
                markdown_table(["model", "parameters", "in range", "out of range", "long",
                                "training s (slowest seed)"], rows), "",
                *summary, ""]

    def _errors(self) -> list[str]:
        rows = [[self._result_model(r), r["params"], number(r["MAE in"]), number(r["MAE out"]),
                 number(r["MAE long"]), number(r["MRE in"]), number(r["MRE out"])] for r in self._results()]
        figure = ("::::{container} full-width\n:::{figure} figures/mae_by_test_set.png\n:alt: mean absolute error "
                  "per model and test set\n:width: 100%\n\nMean absolute error per test set (log scale), models "
                  "sorted by their error out of range; hollow markers are the seed's published numbers.\n:::\n::::")
        return ["## How large are the errors?", "",
                "Mean absolute error (MAE) and mean relative error (MRE) per test set. Errors below "
                "0.0001 are written as powers of ten.", "", figure, "",
                markdown_table(["model", "parameters", "MAE in", "MAE out", "MAE long",
                                "MRE in", "MRE out"], rows), ""]

    def _scores(self) -> list[str]:
        if "score" not in self.results.header:
            return []
        rows = [[self._result_model(r), r["params"], score(r["score"]), p_value(r["p"]),
                 number(r.get("epochs", ""))] for r in self._results()]
        return ["## Does it beat the seed's benchmark?", "",
                "The seed's benchmark score against the baseline FNN trained here (1 = as good as the "
                "baseline; higher is better) and the p-value of the two-sided t-test of log(score) over "
                "seeds. The score divides by the model's error, so once that error reaches float32 "
                "precision it grows without bound: scores past a million are marked *unbounded*. "
                "Compare scores within this report only: the published ones used the seed's own "
                "baseline.", "",
                markdown_table(["model", "parameters", "score", "p", "epochs (mean)"], rows), ""]

    def _why(self) -> list[str]:
        section = find(self.findings, "What generalises")
        if not section:
            return []
        text = paragraphs(section.lines)
        start = next((i for i, line in enumerate(text) if line.startswith("Why")), None)
        if start is None:
            return []
        return ["## Why does the syntax-gated scan generalise?", "",
                *(prose(line) for line in text[start:]), ""]

    def _language_models(self) -> list[str]:
        section = find(self.findings, "Fine-tuned language models")
        if not section or not tables(section.lines):
            return []
        table = tables(section.lines)[0]
        rows = [[cell(h, c) for h, c in zip(table.header, row)] for row in table.rows]
        link = (f" The pipeline is in {_link(self.by_name['07_gemma_finetune'])}."
                if "07_gemma_finetune" in self.by_name else "")
        return ["## Can a fine-tuned language model do it?", "", markdown_table(table.header, rows), "",
                *(prose(line) for line in paragraphs(section.lines) if line.strip()), link.strip(), ""]

    def _threats(self) -> list[str]:
        section = find(self.findings, "Threats to validity")
        return ["## Threats to validity", "", *(prose(line) for line in section.lines), ""] if section else []

    def _notebook_table(self, names: list[str]) -> str:
        rows = []
        for name in names:
            nb = self.by_name[name]
            models = [r for r in self._notebook_rows(name) if r["source"] != "seed (published)"]
            best = max(models, key=lambda r: _float(r["acc out"].replace("%", "")) or 0, default=None)
            exact = [percent(best[f"acc {t}"]) for t in ("in", "out", "long")] if best else ["", "", ""]
            rows.append([_link(nb, _short_title(nb)), str(len(models)) if models else "",
                         best["model"] if best else "fine-tuned language models: see the chapter", *exact])
        return markdown_table(["chapter", "models", "best out of range", "exact in", "exact out", "exact long"],
                              rows, right={1, 3, 4, 5})

    def architectures_page(self) -> str:
        names = [n.name for n in self.notebooks if n.architecture]
        return "\n".join([
            "# Architectures", "",
            "One chapter per architecture notebook, each the executed copy from `reports/runs/`. Every "
            "chapter opens with its rows of the findings; the code is folded where it is setup "
            "(*Show code* opens it).", "",
            self._notebook_table(names), "", *_toctree([self.by_name[n].doc for n in names])])

    def studies_page(self) -> str:
        lines = ["# Studies", "",
                 "Questions beside the main comparison, one notebook each (executed copies from "
                 "`reports/runs/`).", ""]
        for nb in self.notebooks:
            if nb.architecture:
                continue
            question = _question(nb.path)
            lines += [f"- {_link(nb)}" + (f". {question}" if question else ""), ""]
        return "\n".join(lines + _toctree([n.doc for n in self.notebooks if not n.architecture]))

    def _study_section(self, name: str) -> Section | None:
        return next((s for s in self.findings if s.level == 3 and f"({name}" in s.title), None)

    def deployment_page(self) -> str:
        lines = ["# Deployment", "",
                 "Every trained model is exported (SavedModel, LiteRT float32 / float16 / int8, ONNX) and "
                 "checked against Keras on every test set; `predcalc bench` times each runtime.", ""]
        export = find(self.findings, "Export")
        if export and tables(export.lines):
            lines += self._export_pivot(tables(export.lines)[0])
        bench = find(self.findings, "Deployment")
        if bench and tables(bench.lines):
            lines += ["## Speed", "", *(prose(line) for line in paragraphs(bench.lines) if line.strip()), "",
                      *self._bench_pivot(tables(bench.lines)[0])]
        for title in ("The calculator", "Deploy on a Jetson"):
            text = self._readme(title)
            if text:
                lines += [f"## {title}", "", text, ""]
        return "\n".join(lines)

    def _export_pivot(self, table: Table) -> list[str]:
        formats = list(dict.fromkeys(r["format"] for r in table.records()))
        cells, failures = {}, []
        for r in table.records():
            key = (r["model"], r["format"])
            if key in cells:  # the same model exported by a second notebook (e.g. 08_min_rnn's GRU)
                continue
            if r.get("error"):
                failures.append(f"- {r['model']}, {r['format']}: {r['error'][:160]}")
                cells[key] = f"failed ({len(failures)})"
                continue
            changes = [_float(r[f"acc change {t}"].replace("pt", "")) for t in ("in", "out", "long")]
            worst = min((c for c in changes if c is not None), default=0.0)
            cells[key] = f"{r['KB']} KB, {worst:+.1f} pt" if r.get("KB") else f"{worst:+.1f} pt"
        models = list(dict.fromkeys(m for m, _ in cells))
        rows = [[m] + [cells.get((m, f), "") for f in formats] for m in models]
        return ["## Export: size and accuracy against Keras", "",
                "Each cell: the artifact's size and its largest loss of exact accuracy (percentage "
                "points, worst of the in-range, out-of-range and long test sets) against the Keras model "
                "(first seed). Full-integer int8 quantises the input and output too, which the "
                "regression models do not survive.", "",
                markdown_table(["model"] + formats, rows), "",
                "Failed exports:", "", *failures, ""]

    def _bench_pivot(self, table: Table) -> list[str]:
        runtimes = list(dict.fromkeys(r["runtime"] for r in table.records()))
        latency, throughput = {}, {}
        for r in table.records():
            latency.setdefault((r["model"], r["runtime"]), number(r["median µs"]))
            throughput.setdefault((r["model"], r["runtime"]), r["expr/s"])
        models = list(dict.fromkeys(m for m, _ in latency))
        rows = [[m] + [latency.get((m, rt), "") for rt in runtimes] for m in models]
        rows2 = [[m] + [throughput.get((m, rt), "") for rt in runtimes] for m in models]
        return ["### Latency of one expression (median µs)", "", markdown_table(["model"] + runtimes, rows), "",
                "### Throughput (expressions per second, tokeniser included)", "",
                markdown_table(["model"] + runtimes, rows2), ""]

    def reproduce_page(self) -> str:
        lines = ["# How to reproduce", ""]
        for title, heading in (("Two commands", "Two commands"), ("Reproducibility", "Seeds and determinism"),
                               ("Mass training", "Mass training")):
            text = self._readme(title)
            if text:
                lines += [f"## {heading}", "", text, ""]
        lines += ["## This book", "",
                  "```bash\nmake book            # build/book/index.html from reports/ (no notebook is re-run)\n"
                  "make report book     # run every notebook first, then rebuild the findings and the book\n```",
                  "", "## Every run", "",
                  "The executed notebooks behind every page, with the command that reruns each.", ""]
        rows = []
        for nb in self.notebooks:
            profile = nb.run.get("profile", "")
            command = f"`predcalc run --profile {profile or 'full'} --only {nb.name}`"
            seconds = f"{nb.run['seconds']:,.0f}" if nb.run.get("seconds") is not None else ""
            finished = nb.run.get("finished", "")[:10]
            state = profile if nb.executed else "not executed yet"
            rows.append([_link(nb, nb.name), state, seconds, finished, command])
        lines += [markdown_table(["notebook", "profile", "seconds", "finished", "command"], rows, right={2}), ""]
        return "\n".join(lines)

    def findings_page(self) -> str:
        """``findings.md`` whole, tables and numbers formatted, links and figures pointed into the book."""
        out, table = [], []
        lines = self.findings_text.splitlines()
        for line in lines + [""]:
            if line.startswith("|"):
                table.append(line)
                continue
            if table:
                parsed = tables(table)
                if parsed:
                    t = parsed[0]
                    out.append(markdown_table(t.header, [[cell(h, c) for h, c in zip(t.header, row)]
                                                         for row in t.rows], right=set()))
                else:
                    out += table
                table = []
            if line.startswith("# Findings"):
                out.append("# The findings page")
                out.append("")
                out.append("`reports/findings.md` as `predcalc report` wrote it, with its numbers formatted "
                           "for reading. The chapters split it by question.")
                continue
            line = re.sub(r"\]\(runs/([^/)]+)/[^/)]+\.ipynb\)",
                          lambda m: f"]({self.by_name[m.group(1)].doc}.ipynb)" if m.group(1) in self.by_name
                          else f"](#{m.group(1)})", line)
            image = re.match(r"^(\s*)!\[([^\]]*)\]\(([^)]+)\)", line)
            if image and image.group(1):
                continue  # a run's figures in the Runs list: its notebook's page shows them
            if image:  # a study's figure: across the margin too, as on the notebook pages
                out += ["", "::::{container} full-width", f"![{image.group(2)}]({image.group(3)})", "::::", ""]
                continue
            out.append(prose(line))
        return "\n".join(out)

    # ---- notebooks

    def notebook_summary(self, nb: Notebook) -> str:
        """The markdown that opens a notebook's page: its numbers in the findings and how it ran."""
        lines = []
        rows = self._notebook_rows(nb.name)
        if rows:
            table = [[r["model"] + (" *(seed, published)*" if r["source"] == "seed (published)" else ""),
                      r["params"], percent(r["acc in"]), percent(r["acc out"]), percent(r["acc long"]),
                      number(r["MAE out"]), score(r.get("score", ""))] for r in rows]
            lines += [markdown_table(["model", "parameters", "exact in", "exact out", "exact long", "MAE out",
                                      "score"], table, right={1, 2, 3, 4, 5, 6}), ""]
        study = self._study_section(nb.name)
        if study:
            for t in tables(study.lines):
                if len(t.rows) <= 25:
                    lines += [markdown_table(t.header, [[cell(h, c) for h, c in zip(t.header, row)]
                                                        for row in t.rows], right=set()), ""]
            lines += [prose(line) for line in paragraphs(study.lines) if line.strip().startswith("- ")]
            lines.append("")
        if nb.name == "07_gemma_finetune":
            lines += self._language_models()[2:3] + [""]
        if nb.executed:
            seconds = nb.run.get("seconds")
            ran = (f"profile `{nb.run.get('profile', '?')}`, {seconds:,.0f} s"
                   f"{', finished ' + nb.run['finished'][:10] if nb.run.get('finished') else ''}"
                   if seconds is not None else "")
            lines.append(f"This page is the executed copy `reports/runs/{nb.name}/{nb.name}.ipynb` ({ran}); "
                         f"rerun it with `predcalc run --profile full --only {nb.name}`.")
        else:
            lines.append(f"No executed copy is in `reports/runs/{nb.name}/` yet: this page shows the source "
                         f"`notebooks/{nb.name}.ipynb` with the outputs it keeps for validation. Run it with "
                         f"`predcalc run --profile full --only {nb.name}`.")
        body = "\n".join(lines).strip()
        kind = "In the findings" if (rows or study) else "About this run"
        return f":::{{admonition}} {kind}\n:class: tip\n\n{body}\n:::\n"

    def write_notebook(self, nb: Notebook, target: Path) -> None:
        import nbformat

        notebook = nbformat.read(nb.path, as_version=4)
        notebook.metadata.pop("widgets", None)
        for c in notebook.cells:
            if c.cell_type != "code":
                continue
            outputs = []
            for output in c.get("outputs", []):
                data = output.get("data", {})
                if "application/vnd.jupyter.widget-view+json" in data:
                    continue  # progress bars: their state is not saved, a browser shows nothing
                if output.get("output_type") == "stream" and output.get("name") == "stderr":
                    continue
                outputs.append(output)
            c.outputs = outputs
            tags = set(c.metadata.get("tags", []))
            source = c.source.strip()
            setup = (tags & {"parameters", "injected-parameters"} or source.startswith(("import ", "from "))
                     or source.count("\n") >= 15)
            if setup:
                tags.add("hide-input")
            if any(_png_width(o) > WIDE_FIGURE for o in outputs):
                tags.add("full-width")  # over the margin: a wide figure keeps its labels readable
            c.metadata["tags"] = sorted(tags)
        summary = nbformat.v4.new_markdown_cell(self.notebook_summary(nb))
        first = next((i for i, c in enumerate(notebook.cells) if c.cell_type == "markdown"), -1)
        notebook.cells.insert(first + 1, summary)
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, target)

    # ---- the whole source tree

    def write(self, source: Path = SOURCE, config: Path = CONFIG) -> list[str]:
        if source.exists():
            shutil.rmtree(source)
        shutil.copytree(config, source)
        pages = {"index": self.index(), "results": self.results_page(),
                 "architectures": self.architectures_page(), "studies": self.studies_page(),
                 "deployment": self.deployment_page(), "reproduce": self.reproduce_page(),
                 "findings": self.findings_page()}
        for name, text in pages.items():
            (source / f"{name}.md").write_text(text.rstrip() + "\n")
        figures = self.root / "reports" / "figures"
        if figures.exists():
            shutil.copytree(figures, source / "figures")
        for image in re.findall(r"!\[[^\]]*\]\((runs/[^)]+)\)", self.findings_text):
            path = self.root / "reports" / image
            if path.exists():
                (source / image).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, source / image)
        for nb in self.notebooks:
            self.write_notebook(nb, source / f"{nb.doc}.ipynb")
        mathjax = _mathjax()
        if mathjax:  # the single-file TeX-to-SVG component and the TeX extensions it may load
            target = source / "_mathjax" / "mathjax"
            target.mkdir(parents=True)
            shutil.copy2(mathjax / "tex-svg.js", target)
            shutil.copytree(mathjax / "input" / "tex", target / "input" / "tex")
        return list(pages) + [n.doc for n in self.notebooks]


def _mathjax() -> Path | None:
    """MathJax 3 as the ``sphinx-mathjax-offline`` wheel ships it, so formulas render offline."""
    import importlib.util

    spec = importlib.util.find_spec("sphinx-mathjax-offline")  # the wheel's folder has a hyphen
    if spec is None or not spec.submodule_search_locations:
        return None
    static = Path(list(spec.submodule_search_locations)[0]) / "static" / "mathjax"
    return static if (static / "tex-svg.js").exists() else None


def build(out: Path = OUT, source: Path = SOURCE, root: Path = ROOT, quiet: bool = True) -> Path:
    """Write the pages and run Sphinx; returns ``out/index.html``."""
    Book(root).write(source)
    if out.exists():
        shutil.rmtree(out)
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-n", "--keep-going", "-W", str(source), str(out)]
    if quiet:
        command.insert(3, "-q")
    subprocess.run(command, check=True)
    return out / "index.html"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m predcalc.report.book", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="the site (default build/book)")
    parser.add_argument("--source", type=Path, default=SOURCE, help="the generated pages (default build/book_src)")
    parser.add_argument("--verbose", action="store_true", help="Sphinx's progress output")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    index = build(args.out, args.source, quiet=not args.verbose)
    print(f"book: {index} ({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
