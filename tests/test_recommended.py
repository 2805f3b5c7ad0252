"""reports/recommended.json: the one list of recommended models, read by the report, deploy and the edge study."""

import ast
import json
from pathlib import Path

import pytest

from predcalc import recommended
from predcalc.paths import RUNS

LIB = Path(__file__).resolve().parents[1] / "lib" / "predcalc"


def test_every_entry_names_an_existing_notebook_run_and_export_folder():
    entries = recommended.read()
    assert entries, "reports/recommended.json lists no model"
    for model in entries:
        assert (RUNS / model.notebook).is_dir(), model.notebook
        assert (RUNS / model.export).is_dir(), model.export
        # a digit model's export is its seeds' folder beside the run's (a run is replaced whole)
        prefix = f"{model.notebook}/export/" if model.input == "value" else f"{model.notebook}_seeds/"
        assert model.export.startswith(prefix), model.export


def test_every_value_model_has_the_kind_the_registry_and_the_findings_give_it():
    from predcalc.models import get_spec

    for model in recommended.read():
        if model.input == "value":
            assert model.kind == get_spec(model.name).shown_kind, model.name


def test_every_digit_model_is_trained_reads_digits_and_names_its_box():
    from predcalc.models.digits import DIGIT_MODELS

    digit_models = recommended.digit_models()
    assert digit_models, "no digit model is recommended"
    for model in digit_models:
        assert model.name in DIGIT_MODELS and model.kind == "trained"
        assert set(model.box) == {"digits", "terms"} and model.box["digits"][1] >= model.box["digits"][0]


def test_readers_agree_with_the_file():
    data = json.loads(recommended.RECOMMENDED_FILE.read_text())["models"]
    assert set(recommended.exports()) == {entry["export"] for entry in data if entry.get("input", "value") == "value"}
    assert set(recommended.headline()) == {entry["name"] for entry in data if entry["headline"]}
    assert recommended.on_edges() == {entry["name"]: entry["notebook"] for entry in data if entry["edges"]}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"name": "m", "kind": "", "notebook": "n", "export": "n/export/m"}, "has no kind"),
        ({"name": "m", "kind": "trained"}, "entry 1 is malformed"),
    ],
)
def test_a_bad_entry_is_refused_in_one_line(tmp_path, entry, message):
    path = tmp_path / "recommended.json"
    path.write_text(json.dumps({"models": [entry]}))
    with pytest.raises(ValueError, match=message) as error:
        recommended.read(path)
    assert "\n" not in str(error.value)


def test_no_module_keeps_its_own_list_of_recommended_models():
    """A sequence naming two or more recommended models, or a dict mapping them to their notebooks or
    export folders, is a second copy of the list (facts about one model each, keyed by name, are not)."""
    entries = recommended.read()
    names = {model.name for model in entries}
    places = {model.notebook for model in entries} | {model.export for model in entries}

    def constants(items):
        return [item.value for item in items if isinstance(item, ast.Constant) and isinstance(item.value, str)]

    copies = []
    for path in sorted(LIB.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                listed = names.intersection(constants(node.elts))
            elif isinstance(node, ast.Dict):
                keys, values = constants(node.keys), constants(node.values)
                listed = set()
                if values and set(values) <= places:
                    listed = (names | places).intersection(keys) or set(values)
            else:
                continue
            if len(listed) >= 2:
                copies.append(f"{path.relative_to(LIB)}:{node.lineno} {sorted(listed)}")
    assert not copies, "lists of recommended models outside reports/recommended.json: " + "; ".join(copies)


def test_the_recommended_list_says_which_data_chose_each_model_as_the_families_table_does():
    """Every entry chosen by the families table's rule is the table's choice on the stored runs, every headline
    model is in the table, and a candidate of a family that the rule did not choose says so."""
    from predcalc.report import families
    from predcalc.report import findings as F

    records = F.load_runs(RUNS)
    if not records:
        pytest.skip("no stored runs")
    specs = families.registry()
    stored = {name for _, name, _, _ in F.unique_models(records)}
    chosen = {name for _, _, name, _ in families.choices(records, specs)}
    assert set(recommended.family_choices()) <= chosen
    assert {name for name in recommended.headline() if name in stored} <= chosen  # a study's model has no row
    candidates = {name for name in stored if specs.get(name) and specs[name].findings_family}
    for model in recommended.recommended():
        assert model.chosen_on, f"{model.name}: chosen_on is empty"
        if model.name in candidates and model.name not in chosen:
            assert model.chosen_on.startswith("not chosen"), model.name
