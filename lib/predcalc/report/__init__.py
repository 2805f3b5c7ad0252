"""Report: ``predcalc report`` (:mod:`~predcalc.report.appendix`) and the book (:mod:`~predcalc.report.book`),
from the stored runs and records. The last stage: only the notebooks' steps and the CLI import it."""
