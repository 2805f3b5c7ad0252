from predcalc.data.exact_answers import *  # noqa: F401,F403  (running processes only; untracked)
