"""The findings' section on the networks that read digits: notebook 41's record as a table.

The notebook's executed copy is the chapter (its markdown states the method and conclusion, with
numbers glued from its run); this section shows its held-out table, every seed's exact share on
each set, and links the notebook. Its words hold no number.
"""

from __future__ import annotations

import pandas as pd

from predcalc.deploy.digit_scores import seeds_cell
from predcalc.report.document import Section, Table

SETS = ("digits_10", "digits_20", "digits_30", "digits_50", "digits_100", "terms_6", "terms_9")


def digits_table(payload: dict) -> pd.DataFrame:
    """Models by rows, the suite's reach sets by columns."""
    rows = {}
    for model, by_seed in payload["scores"].items():
        label = payload["models"][model]["label"]
        row = {"model": label}
        for name in SETS:
            values = [sets[name]["exact"] for sets in by_seed.values() if name in sets]
            if values:
                row[name] = seeds_cell(values)
        rows[label] = row
    return pd.DataFrame(list(rows.values()))


def digits_section(records, relative) -> Section:
    """The section, from the record of notebook 41 (empty without one)."""
    if not records:
        return Section("appendix.digits", "Networks that read digits", [], part="appendix")
    record = records[0]
    payload = record.entries["digits"]
    link = f"[{record.notebook}]({relative(record)}/{record.notebook}.ipynb)"
    blocks = [Table(digits_table(payload), caption=f"Digit readers ({link}): each seed's exact share (%)")]
    return Section("appendix.digits", "Networks that read digits", blocks, part="appendix", notebooks=[record.notebook])
