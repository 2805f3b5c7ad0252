"""Studies: the side questions of the report, each behind one or two notebooks.

- :mod:`~predcalc.studies.backprop`: seed 004's BPTT by hand (00_backprop_by_hand);
  :mod:`~predcalc.studies.backprop_check`: the article's printed numbers and the Keras autodiff check.
- :mod:`~predcalc.studies.vanishing`: gradients reaching earlier states (20_vanishing_gradients).
- :mod:`~predcalc.studies.speed`: parallel scan vs sequential RNNs (21_parallel_scan).
- :mod:`~predcalc.studies.timeseries`: the efficient RNNs on real series (22_timeseries).
- :mod:`~predcalc.studies.explain`: integrated gradients, attention and gate statistics (23_explain).
- :mod:`~predcalc.studies.difficulty`: accuracy by difficulty on the extended suite (31, 32).

The language model (Gemma, notebook 07) has its own package, :mod:`predcalc.llm`.
"""
