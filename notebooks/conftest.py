"""nbval runs the notebooks at a smaller profile: ``PREDCALC_NOTEBOOK_PROFILE=smoke pytest --nbval-lax notebooks``.

The profile's values that a notebook declares (``predcalc.training.runner.PROFILES``, and the
notebook's own ``metadata.predcalc.profiles``) are appended to its ``parameters`` cell, as papermill
would inject them: one epoch instead of many, so that CI checks every cell in minutes. The cells
nbval compares (tagged ``nbval-check-output``) print nothing these values change. Without the variable the
notebooks run as written (their quick defaults).
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

PROFILE_VARIABLE = "PREDCALC_NOTEBOOK_PROFILE"


def _injection(notebook: Path, profile: str) -> str:
    from predcalc.training import runner

    values = runner.parameters_for(notebook, profile, Path("unused"))
    values = {k: v for k, v in values.items() if k not in ("output_dir", "profile")}
    if not values:
        return ""
    lines = [f"{k} = {v!r}" for k, v in sorted(values.items())]
    return f"\n# injected by notebooks/conftest.py ({PROFILE_VARIABLE}={profile})\n" + "\n".join(lines) + "\n"


def pytest_collection_modifyitems(session, config, items):
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
