"""Keep notebooks diff-friendly: execute them with their defaults and keep only checked outputs.

    python -m predcalc.training.notebook_tools refresh notebooks/01_fnn.ipynb [...]
    python -m predcalc.training.notebook_tools annotate notebooks/*.ipynb   # full-profile comments

A cell tagged ``nbval-check-output`` (nbval's tag; the ``# NBVAL_CHECK_OUTPUT`` comment also
works) keeps its (deterministic) output, which ``pytest --nbval-lax`` compares on every CI run;
every other output and execution count is dropped. Cell tags (``parameters``) are kept.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from predcalc.training.profile_comments import annotate
from predcalc.training.runner import kernel_environment

CHECK_MARK = "# NBVAL_CHECK_OUTPUT"
CHECK_TAG = "nbval-check-output"


def is_checked(cell) -> bool:
    """Whether nbval compares this cell's output (its tag, or the comment in its source)."""
    return CHECK_TAG in cell.get("metadata", {}).get("tags", []) or CHECK_MARK in cell.get("source", "")


def strip(notebook) -> None:
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        if is_checked(cell):
            cell.outputs = [o for o in cell.outputs if o.get("name") != "stderr"]
            continue
        cell.outputs = []
        cell.execution_count = None
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
        cell.metadata.pop("papermill", None)
    notebook.metadata.pop("papermill", None)


def refresh(path: Path, timeout: int = 1200) -> None:
    kernel_environment()
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    strip(notebook)
    nbformat.write(notebook, path)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 2 or argv[0] not in ("refresh", "strip", "annotate"):
        print("usage: python -m predcalc.training.notebook_tools refresh|strip|annotate NOTEBOOK...", file=sys.stderr)
        return 2
    if argv[0] == "annotate":  # the full profile's values as comments in each parameters cell
        for name in argv[1:]:
            print(f"{'annotated' if annotate(Path(name)) else 'unchanged'} {name}")
        return 0

    for name in argv[1:]:
        path = Path(name)
        if argv[0] == "refresh":
            refresh(path)
        else:
            notebook = nbformat.read(path, as_version=4)
            strip(notebook)
            nbformat.write(notebook, path)
        print(f"{argv[0]}ed {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
