"""The committed findings keep a paper's shape, and every figure of the report fits a screen."""

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


def test_findings_cite_the_prior_report_and_keep_the_detail_in_the_appendix():
    text = FINDINGS.read_text()
    main = text.split("\n# Appendix", 1)[0]
    assert "Anton Mukin" in main and "AntonStantan/matura" in main  # the prior work, cited where it is compared
    assert len(main.splitlines()) < len(text.splitlines()) / 3  # the detail is the Appendix's
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
