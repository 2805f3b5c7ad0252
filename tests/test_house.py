"""The house rules a newcomer relies on: a short README with compact tables, links that resolve in a fresh clone,
no module in lib/ over 600 lines, and a report package that knows no notebook by name."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "predcalc"
MAX_README_LINES = 100
MAX_TABLE_CELL = 40
MAX_MODULE_LINES = 600

# Modules still being split, each with the work that shortens it; an entry is removed once its file
# is short enough (the test says so), so the list only shrinks.
LONG_MODULES: dict[str, str] = {}
NOTEBOOK_NAME = re.compile(r"\b\d\d_[a-z]")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)  # code blocks hold no links
    return [m.group(1) for m in LINK.finditer(text)]


def test_the_readme_starts_within_100_lines_with_its_two_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= MAX_README_LINES, f"README.md has {len(text.splitlines())} lines"
    assert "make report" in text and "make test-fast" in text


def test_no_readme_table_cell_is_over_40_characters():
    text = re.sub(r"```.*?```", "", (ROOT / "README.md").read_text(), flags=re.S)
    rows = [line.strip().strip("|").split("|") for line in text.splitlines() if line.lstrip().startswith("|")]
    long = [cell.strip() for row in rows for cell in row if len(cell.strip()) > MAX_TABLE_CELL]
    assert rows, "README.md has no table"
    assert not long, f"README table cells over {MAX_TABLE_CELL} characters: {long}"
    assert max(len(row) for row in rows) <= 8, "a README table has more than 8 columns"


def test_every_relative_link_in_the_readme_and_docs_resolves_in_the_repository():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert len(pages) > 1, "docs/ has no pages"
    dead = []
    for page in pages:
        for target in _links(page):
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if not path.exists() or ROOT not in path.parents or "build" in path.relative_to(ROOT).parts[:1]:
                dead.append(f"{page.relative_to(ROOT)}: {target}")
    assert not dead, f"links dead in a fresh clone: {dead}"


def test_the_readme_links_every_docs_page():
    linked = {Path(t).name for t in _links(ROOT / "README.md") if t.startswith("docs/")}
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert pages <= linked, f"docs pages the README does not link: {sorted(pages - linked)}"


def _long_modules() -> dict[str, int]:
    lengths = {p.relative_to(LIB).as_posix(): len(p.read_text().splitlines()) for p in LIB.rglob("*.py")}
    return {name: n for name, n in lengths.items() if n > MAX_MODULE_LINES}


def test_no_module_in_lib_is_over_600_lines():
    long = _long_modules()
    unexpected = {name: n for name, n in long.items() if name not in LONG_MODULES}
    assert not unexpected, f"modules over {MAX_MODULE_LINES} lines (split them by job): {unexpected}"
    done = [f"{name} ({owner})" for name, owner in LONG_MODULES.items() if name not in long]
    assert not done, f"short enough now, remove from LONG_MODULES: {done}"


def _naming_notebooks() -> dict[str, list[str]]:
    hits: dict[str, list[str]] = {}
    for path in sorted((LIB / "report").rglob("*")):
        if path.suffix not in (".py", ".j2", ".md"):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if NOTEBOOK_NAME.search(line):
                hits.setdefault(path.relative_to(LIB).as_posix(), []).append(f"{number}: {line.strip()}")
    return hits


def test_the_report_package_names_no_notebook():
    hits = _naming_notebooks()
    assert not hits, f"report/ names notebooks (take names from records or reports/recommended.json): {hits}"


def test_the_notebooks_index_lists_every_notebook_once():
    from predcalc.training.runner import discover, notebook_groups

    groups = notebook_groups(ROOT / "notebooks")
    listed = [name for names in groups.values() for name in names]
    assert sorted(listed) == sorted(p.stem for p in discover(directory=ROOT / "notebooks"))
    assert len(listed) == len(set(listed)), "a notebook is in two groups"


def test_every_docs_page_opens_with_its_title():
    """The book renders docs/ too: each page starts with one ``# `` title (MyST wants it)."""
    untitled = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if not p.read_text().startswith("# ")]
    assert not untitled, f"docs pages without a '# ' title on their first line: {untitled}"


# Notebooks whose parameters cell is being rewritten (annotate each once that lands:
# python -m predcalc.training.notebook_tools annotate notebooks/NAME.ipynb), each with the work.
UNANNOTATED = {"07_gemma_finetune": "the Gemma study", "40_calculator": "the calculator study"}


def _parameters(path: Path) -> str:
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    return next(c.source for c in notebook.cells if "parameters" in c.metadata.get("tags", []))


def test_each_parameters_cell_shows_the_full_profile_values_it_is_given():
    from predcalc.training.profile_comments import annotate_source, full_values

    stale = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        if path.stem in UNANNOTATED:
            continue
        source = _parameters(path)
        if annotate_source(source, full_values(path)) != source:
            stale.append(path.name)
    assert not stale, f"run python -m predcalc.training.notebook_tools annotate on {stale}"


def test_each_notebook_runs_its_headline_models_by_default():
    import ast
    import json

    models = json.loads((ROOT / "reports" / "recommended.json").read_text())["models"]
    missing = []
    for model in (m for m in models if m.get("headline")):
        source = _parameters(ROOT / "notebooks" / f"{model['notebook']}.ipynb")
        defaults = {
            node.targets[0].id: ast.literal_eval(node.value)
            for node in ast.parse(source).body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "models"
        }
        if "models" in defaults and model["name"] not in defaults["models"]:  # no list: its one model
            missing.append(f"{model['notebook']}: {model['name']}")
    assert not missing, f"headline models the quick run leaves out: {missing}"


# Issue 43: "seed" means a random seed only; the prior report is `reference` in code. The former names
# of the prior report's things, each as it stood; a line that keeps one on purpose (an alias for files or
# commands of before) says "old name (issue 43)", and the calculator study's fingerprinted module that
# still reads two of them (predcalc.data.calculator_families) keeps them until its parts are recomputed.
FORMER_REFERENCE_NAMES = re.compile(
    r"\b(?:_?seed_protocol|_?Seed(?:LSTM|GRU)?Cell|_?seed_(?:lstm|gru)_cell|_?seed_weights\w*|\w*_seed_weights"  # old name (issue 43)
    r"|load_seed_\w+|keras_\w+_to_seed|_?seed_to_keras\w*|_keras_to_seed|numpy_seed_\w+|seed_rows?"  # old name (issue 43)
    r"|SEED_(?:LLM_)?ROWS|seed_recipe\w*|SEED_RECIPE\w*|seed_cell\w*|\w*seed_way\w*|SEED_WAY\w*|mre_seed"  # old name (issue 43)
    r"|seed_model|seed_baseline|seed_score|SEED_LONG|seed_getxy\w*|seed_in_test|seed_peak|SEED_PEAK\w*"  # old name (issue 43)
    r"|seed_schedule|_?adamw_seed|SEED_TEST_SETS|SEED_OPERATORS|SEED_\w*WEIGHT\w*|transformer\d_seed\w*"  # old name (issue 43)
    r"|\d\d_beyond_seed|seed004\w*)\b"  # old name (issue 43)
)
FINGERPRINTED_KEEPS = {"data/calculator_families.py"}


def test_no_identifier_in_lib_calls_the_prior_report_seed():
    found = [
        f"{path.relative_to(LIB)}:{number}: {match.group(0)}"
        for path in sorted(LIB.rglob("*.py"))
        if path.relative_to(LIB).as_posix() not in FINGERPRINTED_KEEPS
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "old name (issue 43)" not in line
        for match in FORMER_REFERENCE_NAMES.finditer(line)
    ]
    assert not found, "the prior report is `reference` in code, not `seed`: " + "; ".join(found)
