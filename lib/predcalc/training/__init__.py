"""Training: fit a registered model on a protocol, score it, run seeds and notebooks.

- :mod:`~predcalc.training.fit`: build a registered model, train it, evaluate it, one run's record.
- :mod:`~predcalc.training.metrics`: MAE, MRE, exact accuracy, the prior report's benchmark score and t-test.
- :mod:`~predcalc.training.experiment`: several models x seeds (optionally in worker processes).
- :mod:`~predcalc.training.runner`: ``predcalc run``, every notebook through papermill.
- :mod:`~predcalc.training.sweep`: ``predcalc sweep``, notebooks x a parameter grid x seeds.
- :mod:`~predcalc.training.tune`: ``predcalc tune``, a keras-tuner search over a registered model.
- :mod:`~predcalc.training.notebook_tools`: keep notebook sources diff-friendly.

Imports data and models; never deploy, studies or report (``deploy.export.export_results`` exports
what ``run_seeds`` trained).
"""
