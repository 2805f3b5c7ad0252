"""The committed findings keep a paper's shape, and every figure of the report fits a screen."""

import re
import struct
from pathlib import Path

import pytest

from predcalc.paths import ROOT
from predcalc.report.document import Bullets, Document, Section, Text

FINDINGS = ROOT / "reports" / "findings.md"


def _png_size(path: Path) -> tuple[int, int]:
    with path.open("rb") as handle:
        head = handle.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


def test_findings_have_a_papers_sections_a_short_main_body_and_answer():
    text = FINDINGS.read_text()
    headings = re.findall(r"^(#{1,2}) (.+)$", text, flags=re.M)
    top = [title for level, title in headings if level == "##"]
    for title in ("Question", "Answer", "Related work", "Method", "Results", "What we learned", "Limitations"):
        assert title in top, title
    assert "# Appendix" in text
    main = text.split("\n# Appendix", 1)[0]
    assert len(main.splitlines()) < 300
    prose = [line for line in main.splitlines() if not line.startswith("|")]  # tables aside
    assert sum(len(line.split()) for line in prose) < 5000  # a short main body; the rest is the Appendix
    answer = main.split("## Answer", 1)[1].split("\n## ", 1)[0]
    assert answer.strip().startswith("| family | model | kind |")  # the Answer opens with the families table
    bullets = [line for line in answer.splitlines() if line.startswith("- ")]
    assert 1 <= len(bullets) <= 5 and all(len(b) <= 800 for b in bullets)
    related = main.split("## Related work", 1)[1].split("\n## ", 1)[0]
    assert 'Anton Mukin, "Neural Predictive Calculator: Findings"' in related and "AntonStantan/matura" in related
    for anchor in ("NALU", "NAU", "Neural GPU", "NPI", "scratchpads", "Abacus", "position coupling"):
        assert anchor in related, anchor
    assert "ANCHORS.md" not in text  # the published numbers are cited from the repository


def test_every_report_figure_is_at_most_2400_pixels():
    figures = list((ROOT / "reports").glob("figures/*.png")) + list((ROOT / "reports" / "runs").glob("*/*.png"))
    assert figures
    for path in figures:
        assert max(_png_size(path)) <= 2400, path


def test_a_section_is_found_by_key_whatever_its_title():
    doc = Document(
        "Findings",
        [
            Section("answer", "The short answer", [Bullets(["a"])]),
            Section("appendix.x", "X", [Text("t")], part="appendix"),
        ],
    )
    assert doc.section("answer").title == "The short answer"
    assert [s.key for s in doc.part("appendix")] == ["appendix.x"]
    assert doc.get("missing") is None
    with pytest.raises(KeyError, match="no section with key 'missing'"):
        doc.section("missing")
    with pytest.raises(ValueError, match="part must be"):
        Section("k", "K", part="middle")


def test_the_appendix_shows_each_models_exact_accuracy_once():
    from predcalc.report.appendix import ACCURACY_COLUMNS

    text = (ROOT / "reports" / "findings.md").read_text()
    section = text.split("## Every trained model", 1)[1].split("\n## ", 1)[0]
    headers = [line for line in section.splitlines() if line.startswith("| model |")]
    for column in ACCURACY_COLUMNS:
        assert sum(f"| {column} |" in header for header in headers) == 1, column
