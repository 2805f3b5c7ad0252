"""The calculator study's parts, stored and read back: a code-fingerprint cache.

:func:`cached` stores a part's record under a folder keyed by its parameters and the code that
computes it (:func:`code_fingerprint`), so a long study resumes where it stopped and a change to the
calculator's code recomputes what it changes.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import re
import types
from pathlib import Path

from predcalc.paths import relative


def cached(folder: Path | None, key: str, compute, parameters: dict | None = None, modules: tuple | None = None):
    """``compute()``'s record, stored as ``folder/KEY-DIGEST.json`` and read back instead of recomputed
    while every parameter it depends on is the same.

    ``parameters`` (default: what ``compute`` reads: its default arguments, closure cells and the
    global names it uses, modules and functions left out) and :func:`code_fingerprint` (the code that
    trains, exports and runs the calculator) are hashed into ``DIGEST``, so a run with other sizes,
    epochs or seeds, or after a change to that code, computes its own part; an older part of the same
    key is replaced. The file holds ``{"code": fingerprint, "result": record}``. Not covered: this
    module's own functions and the end-to-end baseline's model code (delete the folder after changing
    those). ``modules`` (default :data:`FINGERPRINTED`) are the modules whose code is fingerprinted.
    """
    if folder is None:
        return compute()
    code = code_fingerprint() if modules is None else code_fingerprint(modules)
    digest = hashlib.sha256((_canonical(_read_by(compute) if parameters is None else parameters) + code).encode())
    path = Path(folder) / f"{key}-{digest.hexdigest()[:12]}.json"
    if path.is_file():
        return json.loads(path.read_text())["result"]
    record = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps({"code": code, "result": record}, indent=1, sort_keys=True) + "\n")
    temporary.replace(path)
    for stale in Path(folder).glob(f"{key}*.json"):  # the same part computed with other parameters
        if stale != path and re.fullmatch(rf"{re.escape(key)}(-[0-9a-f]{{12}})?", stale.stem):
            stale.unlink()
    return record


#: The modules whose code decides a part's numbers: the calculator's steps, training, export and
#: runtime, and the test families (the study's own tables and sentences are not among them).
FINGERPRINTED = (
    "predcalc.calculator.ablations",
    "predcalc.calculator.bench",
    "predcalc.calculator.engine",
    "predcalc.calculator.export",
    "predcalc.calculator.nets",
    "predcalc.calculator.reference",
    "predcalc.calculator.rules",
    "predcalc.calculator.runtime",
    "predcalc.calculator.steps",
    "predcalc.calculator.tokens",
    "predcalc.calculator.train",
    "predcalc.data.calculator_families",
    "predcalc.data.exact_answers",
    "predcalc.data.expressions",
)


def code_fingerprint(modules=FINGERPRINTED) -> str:
    """12 hex digits of the syntax trees of ``modules`` without their docstrings: a change to what the
    code does changes it; comments, docstrings and formatting do not."""
    digest = hashlib.sha256()
    for name in modules:
        tree = ast.parse(Path(importlib.util.find_spec(name).origin).read_text())
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (
                isinstance(body, list)
                and body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
        digest.update(name.encode() + ast.dump(tree).encode())
    return digest.hexdigest()[:12]


def _read_by(compute) -> dict:
    """The values ``compute`` reads from outside: default arguments, closure cells, global names."""
    code = compute.__code__
    found = {f"default_{i}": value for i, value in enumerate(compute.__defaults__ or ())}
    found.update({name: cell.cell_contents for name, cell in zip(code.co_freevars, compute.__closure__ or ())})
    found.update({name: compute.__globals__[name] for name in code.co_names if name in compute.__globals__})
    return {
        name: value
        for name, value in found.items()
        if not isinstance(value, (types.ModuleType, types.FunctionType, type))
    }


def _canonical(value) -> str:
    """A stable text of parameters (paths relative to the repository, so the digest is the same anywhere)."""

    def plain(item):
        if isinstance(item, Path):
            return relative(item)
        if isinstance(item, dict):
            return {str(k): plain(v) for k, v in sorted(item.items(), key=lambda kv: str(kv[0]))}
        if isinstance(item, (list, tuple)):
            return [plain(v) for v in item]
        return item if isinstance(item, (str, int, float, bool, type(None))) else repr(item)

    return json.dumps(plain(value), sort_keys=True)


def code_versions(folder: Path) -> list[str]:
    """The code fingerprints (:func:`code_fingerprint`) of the parts stored in ``folder``, each once:
    one entry when every part there was computed by the same code."""
    return sorted({json.loads(path.read_text())["code"] for path in Path(folder).glob("*.json")})
