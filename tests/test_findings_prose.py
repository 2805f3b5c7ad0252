"""The hand-written findings (reports/findings.md above the Appendix marker) are written for people:
a bounded length, short sentences, the sections a reader expects in order, and no number that is
not a claim of reports/claims.csv."""

import csv
import re

import pytest

from predcalc.paths import REPORTS, ROOT
from predcalc.report import written

MAX_WORDS = 2_500
MAX_MEAN_SENTENCE = 25
MAX_SENTENCE = 45
SECTIONS = ["Question", "Answer", "Method", "Results", "Limitations"]
NUMBER = re.compile(r"(?<![\w.^])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\w)")
WORD = re.compile(r"`[^`]+`|\d[\d,.]*\d|[\w'’-]*\w[\w'’-]*")
CITATION = {"2025"}  # the prior report's year: a citation, not a result


def prose_lines(text: str) -> list[str]:
    """The running text of ``text``: no heading, table, code block or HTML comment; one list item a
    line (an item ends a sentence)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    lines: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "|")):
            lines.append("")
        elif stripped.startswith("- "):
            lines += ["", stripped[2:]]
        else:
            lines.append(stripped)
    return lines


def sentences(text: str) -> list[str]:
    """The sentences of ``text``'s running text: a paragraph or list item split after `.`, `?`, `!`
    or `:`-free ends followed by a space (a decimal point is not an end)."""
    paragraphs = " ".join(line if line else "\n" for line in prose_lines(text)).split("\n")
    out = []
    for paragraph in paragraphs:
        out += [s.strip() for s in re.split(r"(?<=[.?!])\s+(?=[A-Z`*_(\d])", paragraph.strip()) if s.strip()]
    return out


def words(sentence: str) -> int:
    return len(WORD.findall(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", sentence)))


def test_the_measure_counts_words_and_sentences():
    text = "## Answer\n\nThe scan is exact on 99.5 % of it. A second one.\n\n| a | b |\n\n- An item\n- Another item.\n"
    assert sentences(text) == ["The scan is exact on 99.5 % of it.", "A second one.", "An item", "Another item."]
    assert [words(s) for s in sentences(text)] == [8, 3, 2, 2]


@pytest.fixture(scope="module")
def prose():
    return written.read(REPORTS / "findings.md")


def test_the_hand_written_findings_are_short_with_short_sentences(prose):
    found = sentences(prose)
    lengths = [words(s) for s in found]
    total, mean, longest = sum(lengths), sum(lengths) / len(lengths), max(lengths)
    assert total <= MAX_WORDS, f"{total} words before the Appendix (at most {MAX_WORDS})"
    assert mean <= MAX_MEAN_SENTENCE, f"mean sentence {mean:.1f} words (at most {MAX_MEAN_SENTENCE})"
    long = [s for s in found if words(s) > MAX_SENTENCE]
    assert longest <= MAX_SENTENCE, f"sentences over {MAX_SENTENCE} words: {long}"


def headings(text: str, level: int) -> list[str]:
    """The titles of ``text``'s headings of one level (``##``: 2)."""
    return re.findall(rf"^{'#' * level} (.+?)\s*$", text, flags=re.M)


def test_the_sections_come_in_a_readers_order_before_the_appendix(prose):
    assert headings(prose, 2) == SECTIONS
    page = (REPORTS / "findings.md").read_text()
    assert page.index(written.MARKER) < page.index("\n# Appendix\n")


def _claim_numbers() -> set[str]:
    with open(REPORTS / "claims.csv", newline="") as handle:
        return {n for row in csv.DictReader(handle) for n in NUMBER.findall(row["claim"])}


@pytest.mark.parametrize("page", ["reports/findings.md", "README.md"])
def test_every_number_in_the_hand_written_prose_is_one_a_claim_states(page):
    text = written.read(ROOT / page) if page.startswith("reports/") else (ROOT / page).read_text()
    text = re.sub(r"```.*?```|`[^`]*`|\]\([^)]*\)|<!--.*?-->", " ", text, flags=re.S)  # code, link targets
    missing = sorted(set(NUMBER.findall(text)) - _claim_numbers() - CITATION)
    assert not missing, f"{page}: numbers that no row of reports/claims.csv states: {missing}"


def test_a_rebuild_keeps_the_hand_written_part_as_it_is(prose, tmp_path):
    from predcalc.paths import RUNS
    from predcalc.report import appendix

    page = tmp_path / "findings.md"
    page.write_text(appendix.page([], tmp_path, RUNS))
    assert written.read(page) == prose
    assert page.read_text().split(written.MARKER, 1)[1].lstrip().startswith("# Appendix\n")
    method = prose.split("\n## Method\n", 1)[1].split("\n## ", 1)[0]
    assert "Protocol and test sets" in headings(method, 3)


def test_a_page_without_the_marker_is_refused_in_one_line(tmp_path):
    page = tmp_path / "findings.md"
    page.write_text("# Findings\n\n## Question\n\nWhich?\n")
    with pytest.raises(written.MissingProse, match="no Appendix marker"):
        written.read(page)
