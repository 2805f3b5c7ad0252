"""Report: ``predcalc report`` and the book, from the stored runs and records.

- :mod:`~predcalc.report.appendix`: ``predcalc report`` (findings.md: the hand-written part, then the Appendix's tables).
- :mod:`~predcalc.report.families`: the families table and the models by name, read from the registry.
- :mod:`~predcalc.report.findings`: the stored runs as tables (the notebooks print them too).
- :mod:`~predcalc.report.book`: the book (``make book``).
- :mod:`~predcalc.report.anchors`: the prior report's published numbers.

The last stage: may import every other package, and none imports it but the notebooks' steps and the CLI.
"""
