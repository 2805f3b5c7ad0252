"""Report: the findings' generated tables, built from ``reports/runs/*/metrics.json``.

- :mod:`~predcalc.report.findings`: ``predcalc report`` (findings.md, findings.html).
- :mod:`~predcalc.report.tables`: markdown tables and number formatting.
- :mod:`~predcalc.report.records`: the typed records the report passes around (folder, profile, kind).
- :mod:`~predcalc.report.studies`: the studies' sections of the findings.
- :mod:`~predcalc.report.anchors`: the prior report's published numbers.

The last stage: may import every other package, and none imports it.
"""
