"""What the notebooks call: each notebook's steps, tables, figures and the values its conclusion glues.

Above :mod:`predcalc.report` and the studies, below the command line: a module here may name a
notebook, the report package names none. :mod:`~predcalc.notebooks.steps` holds what the
architecture notebooks share; :mod:`~predcalc.notebooks.transformer_steps` and
:mod:`~predcalc.notebooks.bilstm_steps` what one of them needs alone.
"""
