"""Results subsections whose words a study writes with its own template beside its code.

Each takes the stored notebook records and finds its study by the study's own test of the record's
stored (JSON) form, which the study's template then reads, so the report names no notebook.
"""

from __future__ import annotations

from collections.abc import Callable

from predcalc.report.anchors import REFERENCE_LLM_ROWS
from predcalc.report.document import Section, Text
from predcalc.report.records import StoredRecord
from predcalc.studies import exact_scan, gemma_findings, sign_scan_search


def study_section(key: str, records: list[dict], render: Callable[[dict], str]) -> Section:
    """A subsection rendered by a study: its first heading is the title, the rest its body (empty
    where no stored run has the study)."""
    if not records:
        return Section(key, "", [])
    lines = render(records[0]).strip().splitlines()
    title = lines[0].lstrip("#").strip() if lines and lines[0].startswith("#") else ""
    body = "\n".join(lines[1:] if title else lines).strip()
    return Section(key, title, [Text(body)])


def lead_and_details(markdown: str) -> tuple[str, str]:
    """A study's section split at its first subsection heading: the lead (title and paragraphs) and
    the subsections (tables, ablations) that the Appendix holds."""
    lines = markdown.strip().splitlines()
    cut = next((i for i, line in enumerate(lines) if i and line.startswith("### ")), len(lines))
    return "\n".join(lines[:cut]), "\n".join(lines[cut:])


def _trained_exact_markdown(records: list[StoredRecord]) -> str | None:
    stored = [record.to_json() for record in records]
    found = [r for r in stored if exact_scan.is_record(r)]
    search = next((sign_scan_search.summary_markdown(r) for r in stored if sign_scan_search.is_record(r)), None)
    return exact_scan.section_markdown(found[0], search) if found else None


def trained_exact_details(records: list[StoredRecord]) -> Section:
    """The trained exact scan's tables (held-out suite, ablation, initialisation, float32, side probe),
    in the Appendix."""
    markdown = _trained_exact_markdown(records)
    details = lead_and_details(markdown)[1] if markdown else ""
    if not details:
        return Section("appendix.trained_exact", "", [], part="appendix")
    return Section("appendix.trained_exact", "The sign scan in detail", [Text(details)], part="appendix")


def language_model_section(records: list[StoredRecord]) -> Section:
    """The pre-trained Gemma 3 270M fine-tuned with LoRA, beside the prior report's row."""
    found = [r.extra["gemma3_270m"] for r in records if r.extra.get("gemma3_270m")]
    reference = REFERENCE_LLM_ROWS["Gemma 3 270M"]
    return study_section(
        "results.language_model", found, lambda record: gemma_findings.render_section(record, reference)
    )
