"""nbval runs the notebooks at a smaller profile: ``PREDCALC_NOTEBOOK_PROFILE=smoke pytest --nbval-lax notebooks``.

The profile's values that a notebook declares (``predcalc.training.runner.PROFILES``, and the
notebook's own ``metadata.predcalc.profiles``) are appended to its ``parameters`` cell, as papermill
would inject them: one epoch instead of many, so that CI checks every cell in minutes. The cells
nbval compares (tagged ``nbval-check-output``) print nothing these values change. Without the variable the
notebooks run as written (their quick defaults).
"""

import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

PROFILE_VARIABLE = "PREDCALC_NOTEBOOK_PROFILE"

# make test-notebooks runs pytest-xdist with --dist loadfile --no-loadscope-reorder: a free worker
# takes the next notebook in collection order. The longest at the smoke profile (40_calculator about
# 3 min, 10_mamba about 2 min, the others here 0.5 to 1 min: clean-clone CI log of 2026-11-26, two
# cores) go first, so that no worker is left alone with a long notebook at the end; the rest follow
# in xdist's own default order (most cells first). A notebook's cells keep their order.
LONGEST_FIRST = [
    "40_calculator",
    "10_mamba",
    "30_beyond_reference",
    "06_transformer",
    "02_rnn",
    "08_min_rnn",
    "32_four_operators",
    "22_timeseries",
    "21_parallel_scan",
    "20_vanishing_gradients",
    "31_extended_suite",
]


def _longest_first(items):
    notebooks = Counter(Path(str(item.fspath)).stem for item in items)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: (rank.get(n := Path(str(item.fspath)).stem, len(rank)), -notebooks[n], n))


def _injection(notebook: Path, profile: str) -> str:
    from predcalc.training import runner

    values = runner.parameters_for(notebook, profile, Path("unused"))
    values = {k: v for k, v in values.items() if k not in ("output_dir", "profile")}
    if not values:
        return ""
    lines = [f"{k} = {v!r}" for k, v in sorted(values.items())]
    return f"\n# injected by notebooks/conftest.py ({PROFILE_VARIABLE}={profile})\n" + "\n".join(lines) + "\n"


def pytest_collection_modifyitems(session, config, items):
    _longest_first(items)
    profile = os.environ.get(PROFILE_VARIABLE)
    if not profile:
        return
    done = set()
    for item in items:
        cell = getattr(item, "cell", None)
        if cell is None or "parameters" not in cell.get("metadata", {}).get("tags", []):
            continue
        notebook = Path(str(item.fspath))
        if notebook in done:
            continue
        done.add(notebook)
        cell.source = cell.source + _injection(notebook, profile)
