"""The full profile's values, shown where a student reads the parameters: each line of a notebook's
``parameters`` cell that the full profile overrides ends its comment with ``full profile: VALUE``,
generated from :data:`predcalc.training.runner.PROFILES` and the notebook's own metadata (never
typed by hand, so it cannot go stale). Hand-written "the full profile ..." clauses are replaced.

    python -m predcalc.training.notebook_tools annotate notebooks/01_fnn.ipynb [...]
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import nbformat

from predcalc.training.runner import parameters_for

LABEL = "full profile: "
# A hand-written clause about the full profile: "the full profile: 200", "; the full profile uses [..]",
# "the full profile trains all five models" (up to the next ';' or parenthesis).
_HAND = re.compile(
    r"(?:^|[;,]\s*)\s*(?:the\s+)?full(?:\s+profile)?\s*(?::|uses\b|trains\b|exports\b|adds\b)"
    r"[^;()]*?(?=,\s+with\b|;|\(|\)|$)",
    re.I,
)


def full_values(path: Path) -> dict:
    """The values the full profile injects into ``path``'s parameters (its output folder aside)."""
    values = parameters_for(Path(path), "full", Path("unused"))
    values.pop("output_dir", None)
    values.pop("profile", None)
    return values


def comment_for(comment: str, value) -> str:
    """``comment`` (without ``#``) with its clauses about the full profile replaced by the value."""
    kept = re.sub(r"\s+", " ", _HAND.sub(" ", comment)).strip(" ;,")
    return f"{kept}; {LABEL}{value!r}" if kept else f"{LABEL}{value!r}"


def _literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def annotate_source(source: str, values: dict) -> str:
    """The parameters cell's source with a generated comment on each assignment ``values`` names."""
    lines = source.split("\n")
    comments = {
        token.start[0]: token
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    }
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        if name not in values or _literal(node.value) == values[name]:
            continue  # the full profile leaves it as it is: nothing to say
        row = node.end_lineno
        line = lines[row - 1]
        token = comments.get(row)
        code = line[: token.start[1]].rstrip() if token else line.rstrip()
        text = token.string.lstrip("#").strip() if token else ""
        lines[row - 1] = f"{code}  # {comment_for(text, values[name])}"
    return "\n".join(lines)


def annotate(path: Path) -> bool:
    """Rewrite ``path``'s parameters cell with the generated comments; True if it changed."""
    notebook = nbformat.read(path, as_version=4)
    values = full_values(path)
    for cell in notebook.cells:
        if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
            new = annotate_source(cell.source, values)
            if new == cell.source:
                return False
            cell.source = new
            nbformat.write(notebook, path)
            return True
    return False
