"""The restart recipe's fresh seeds scored end to end on a family draw never scored before.

The fresh study (:mod:`predcalc.calculator.fresh`) scored seeds 300-309 on notebook 40's held-out draw
(family seed 7777), a draw scored before on the design seeds and on the one-start seeds whose failures
prompted the restarts. Here the same seeds are trained again with the frozen recipe, exactly as the fresh
study trains them, and scored on a draw of a family seed chosen after the recipe was frozen
(:data:`UNTOUCHED_SEED`).
"""

from __future__ import annotations

#: The family seed of the untouched draw: chosen after the restart recipe and the fresh seeds' record were
#: committed, and before anything was scored on it; no integer from 8317 to 8335 (the seeds its families are
#: drawn with, ``seed + index``) appears anywhere else in lib/, notebooks/, reports/ or tests/.
UNTOUCHED_SEED = 8317
