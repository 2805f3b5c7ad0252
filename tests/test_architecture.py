"""The import contract of ARCHITECTURE.md, read from the source (every import, also those inside functions).

data -> layers -> models -> training -> deploy -> report, with studies beside deploy; calculator
beside models (its study, which trains an end-to-end baseline, at the studies' level); paths.py,
registry.py and record.py (the metrics.json record) under everything, cli.py over it. No private name crosses a module; repository paths come from
paths.py only; an import inside a function keeps a heavy dependency lazy and says why.
"""

import ast
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "lib" / "predcalc"

BELOW = {  # what each package may import, besides itself (record: the metrics.json record, beside paths)
    "paths": set(),
    "record": {"paths"},
    "data": {"paths"},
    "layers": {"paths"},
    "models": {"paths", "data", "layers"},
    "calculator": {"paths", "data", "layers"},
    "training": {"paths", "record", "data", "layers", "models"},
    "studies": {"paths", "record", "data", "layers", "models", "training"},
    "llm": {"paths", "record", "data", "layers", "models", "training", "studies"},  # the edge suites
    "deploy": {"paths", "record", "data", "layers", "models", "training"},
    "jetson": {"paths", "record", "data", "layers", "models", "training", "deploy"},  # the emulated Jetson check
    "report": {"paths", "record", "data", "layers", "models", "calculator", "training", "studies", "deploy", "llm"},
    # the notebooks' steps: over the report, which names no notebook
    "notebooks": {
        "paths",
        "record",
        "data",
        "layers",
        "models",
        "calculator",
        "training",
        "studies",
        "llm",
        "deploy",
        "report",
    },
    "cli": {
        "paths",
        "record",
        "data",
        "layers",
        "models",
        "calculator",
        "training",
        "studies",
        "deploy",
        "report",
        "llm",
    },
}
PLACED = {
    "registry": "paths",  # the table of things by unique name: standard library only, under everything
    "readable": "paths",
    "errors": "paths",  # one line of an error: standard library only, under everything
    "quiet": "paths",  # silencing TensorFlow's and absl's lines: standard library only, under everything
    "cli_commands": "cli",  # what each command does; cli.py parses the command line  # numbers for people (the book's rule for shares): standard library only, under everything
    "recommended": "record",  # reports/recommended.json, the one list of recommended models: beside the record
    "calculator.study": "studies",  # a module that sits at another package's level
    "calculator.fresh": "studies",  # the restart recipe's study: notebook 40's held-out draw (calculator.study)
    "calculator.untouched": "studies",  # the restart recipe on an untouched draw (calculator.fresh)
    "studies.edge_seeds": "report",
    "studies.exact_scan": "report",
    "studies.data_seeds": "report",
    "studies.rounded_transformer": "report",  # exports and scores its seeds' ONNX files (deploy)
    "studies.sign_scan_search": "report",  # reads exact_scan's sets and record
    "studies.sign_scan_descent": "report",  # rounds with sign_scan_search
    "deploy.digit_suite_others": "report",  # value files (deploy) and the calculator's file on the digit suite
}  # each scores the studies' edge suites through deploy's exported files
# Files other branches are rewriting now; each entry names what is left for its owner to fix.
PENDING: dict[str, str] = {}
PATH_NAMES = {name for name, value in vars(__import__("predcalc.paths").paths).items() if isinstance(value, Path)}


def modules():
    for path in sorted(LIB.rglob("*.py")):
        relative = path.relative_to(LIB)
        dotted = ".".join(relative.with_suffix("").parts).removesuffix(".__init__")
        yield relative.as_posix(), dotted, ast.parse(path.read_text(), str(path))


def imported(node):
    """``(module, [names])`` of a predcalc import (names empty for ``import predcalc.x``), else None."""
    if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("predcalc"):
        return node.module, [alias.name for alias in node.names]
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.startswith("predcalc."):
                return alias.name, []
    return None


def package(dotted: str) -> str:
    parts = dotted.split(".")
    for length in range(len(parts), 0, -1):
        if ".".join(parts[:length]) in PLACED:
            return PLACED[".".join(parts[:length])]
    return parts[0]


def pending(relative: str) -> bool:
    return any(relative.startswith(prefix) for prefix in PENDING)


def test_packages_import_only_those_below_them():
    wrong = []
    for relative, dotted, tree in modules():
        own = package(dotted)
        for node in ast.walk(tree):
            found = imported(node)
            if found is None or found[0] == "predcalc":
                continue
            target = found[0].removeprefix("predcalc.")
            other = package(target)
            if other not in (own, dotted.split(".")[0]) and other not in BELOW[own]:
                wrong.append(f"{relative}:{node.lineno} ({own}) imports {found[0]} ({other})")
    assert not wrong, "\n".join(wrong)


def test_no_private_name_crosses_a_module():
    wrong = []
    for relative, dotted, tree in modules():
        for node in ast.walk(tree):
            found = imported(node)
            if found and found[0] != f"predcalc.{dotted}":
                wrong += [
                    f"{relative}:{node.lineno} imports {found[0]}.{name}"
                    for name in found[1]
                    if name.startswith("_") and not name.startswith("__")
                ]
    assert not wrong, "\n".join(wrong)


def test_repository_paths_come_from_paths_py():
    wrong = []
    for relative, _, tree in modules():
        if pending(relative):
            continue
        for node in ast.walk(tree):
            found = imported(node)
            if found and found[0] != "predcalc.paths":
                wrong += [
                    f"{relative}:{node.lineno} takes {name} from {found[0]}" for name in found[1] if name in PATH_NAMES
                ]
    assert not wrong, "\n".join(wrong)


def lazy_imports_without_reason(source: str, tree) -> list[int]:
    """Lines of function-level imports with no comment on the import block (its lines, or the line above)."""
    lines = source.splitlines()
    missing = []
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        block = []
        for node in function.body + [None]:
            if isinstance(node, (ast.Import, ast.ImportFrom)) or (
                isinstance(node, ast.Try)
                and block == []
                and all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in node.body)
            ):
                block.append(node)
                continue
            if block:
                first, last = block[0].lineno, block[-1].end_lineno
                text = lines[first - 2 : last] if first >= 2 else lines[first - 1 : last]
                if not any("#" in line for line in text):
                    missing.append(first)
                block = []
    return missing


def test_function_level_imports_say_why_they_are_lazy():
    wrong = []
    for relative, _, tree in modules():
        if pending(relative):
            continue
        source = (LIB / relative).read_text()
        wrong += [f"{relative}:{line}" for line in lazy_imports_without_reason(source, tree)]
    assert not wrong, "lazy imports need a comment saying why:\n" + "\n".join(wrong)


@pytest.mark.parametrize(
    "source, flagged",
    [
        ("def f():\n    import keras\n    return keras\n", [2]),
        ("def f():\n    import keras  # heavy: the runtime install has no Keras\n", []),
        ("def f():\n    # Keras only here\n    import keras\n    import numpy\n", []),
        ("import os\n\n\ndef f():\n    return os\n", []),
    ],
)
def test_the_lazy_import_rule_itself(source, flagged):
    assert lazy_imports_without_reason(source, ast.parse(source)) == flagged
