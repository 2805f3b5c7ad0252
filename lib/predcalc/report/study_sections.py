"""Results subsections whose words a study writes with its own template beside its code.

Each takes the stored notebook records and finds its study by the keys its record holds, so the
report names no notebook.
"""

from __future__ import annotations

from collections.abc import Callable

from predcalc.report.anchors import REFERENCE_LLM_ROWS
from predcalc.report.document import Section, Text
from predcalc.studies import exact_scan, gemma_findings


def study_section(key: str, records: list[dict], render: Callable[[dict], str]) -> Section:
    """A subsection rendered by a study: its first heading is the title, the rest its body (empty
    where no stored run has the study)."""
    if not records:
        return Section(key, "", [])
    lines = render(records[0]).strip().splitlines()
    title = lines[0].lstrip("#").strip() if lines and lines[0].startswith("#") else ""
    body = "\n".join(lines[1:] if title else lines).strip()
    return Section(key, title, [Text(body)])


def trained_exact_section(records: list[dict]) -> Section:
    """The trained exact scan: an ablation, and a held-out suite scored through the exported files."""
    found = [r for r in records if exact_scan.is_record(r)]
    return study_section("results.trained_exact", found, exact_scan.section_markdown)


def language_model_section(records: list[dict]) -> Section:
    """The pre-trained Gemma 3 270M fine-tuned with LoRA, beside the prior report's row."""
    found = [r["gemma3_270m"] for r in records if r.get("gemma3_270m")]
    reference = REFERENCE_LLM_ROWS["Gemma 3 270M"]
    return study_section(
        "results.language_model", found, lambda record: gemma_findings.render_section(record, reference)
    )
