"""Where the repository's folders are: the one place that knows the layout on disk.

Light on purpose (no third-party import): the deploy runtimes and the command line read it
on a Jetson without Keras or TensorFlow.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # lib/predcalc/paths.py -> the repository
NOTEBOOKS = ROOT / "notebooks"
REPORTS = ROOT / "reports"
RUNS = REPORTS / "runs"


def relative(path) -> str:
    """``path`` relative to the repository root when it lies inside it (POSIX form), else as given."""
    path = Path(path)
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)
