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


def trained_exact_section(records: list[StoredRecord]) -> Section:
    """The trained exact scan: an ablation, a held-out suite scored through the exported files, and
    (where its study ran) how many of its discrete patterns are exact."""
    stored = [record.to_json() for record in records]
    found = [r for r in stored if exact_scan.is_record(r)]
    search = next((sign_scan_search.summary_markdown(r) for r in stored if sign_scan_search.is_record(r)), None)
    return study_section("results.trained_exact", found, lambda r: exact_scan.section_markdown(r, search))


def language_model_section(records: list[StoredRecord]) -> Section:
    """The pre-trained Gemma 3 270M fine-tuned with LoRA, beside the prior report's row."""
    found = [r.extra["gemma3_270m"] for r in records if r.extra.get("gemma3_270m")]
    reference = REFERENCE_LLM_ROWS["Gemma 3 270M"]
    return study_section(
        "results.language_model", found, lambda record: gemma_findings.render_section(record, reference)
    )


def language_model_line(records) -> str | None:
    """The README's bullet on the fine-tuned Gemma 3 270M (None where no stored run has the study)."""
    found = [r.extra["gemma3_270m"] for r in records if r.extra.get("gemma3_270m")]
    return gemma_findings.readme_line(found[0], REFERENCE_LLM_ROWS["Gemma 3 270M"]) if found else None
