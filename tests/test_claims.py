"""The claims table (reports/claims.csv) against the records: every headline claim's values pass
its check, and a perturbed copy of a record makes its claim fail."""

import copy
import json
import shutil

import pytest

from predcalc import claims
from predcalc.paths import REPORTS

TABLE = REPORTS / "claims.csv"


def test_every_claim_holds_on_its_record():
    assert claims.failures(TABLE, REPORTS) == []


def test_every_row_names_a_box_a_kind_and_what_chose_it():
    rows = claims.read(TABLE)
    assert rows, "the claims table is empty"
    assert {row["kind"] for row in rows} <= {"trained", "partly built", "memorised", "code", "built"}


@pytest.mark.parametrize("row", claims.read(TABLE), ids=lambda row: row["id"])
def test_a_perturbed_record_fails_its_claim(row, tmp_path):
    record = json.loads((REPORTS / row["record"]).read_text())
    values = claims.resolve(record, row["values"])
    perturbed = copy.deepcopy(record)
    # change every value the claim reads: a number moves far, a string changes
    keys = row["values"].split(".")

    def change(node, rest):
        key = rest[0]
        if key == "*":
            chosen = list(node) if isinstance(node, dict) else range(len(node))
        else:
            chosen = [int(key) if isinstance(node, list) else key]
        for key in chosen:
            if len(rest) == 1:
                old = node[key]
                node[key] = (-1e9 if old > 0.5 else 1e9) if isinstance(old, int | float) else f"{old}-changed"
            else:
                change(node[key], rest[1:])

    change(perturbed, keys)
    target = tmp_path / row["record"]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(perturbed))
    table = tmp_path / "claims.csv"
    shutil.copy(TABLE, table)
    failed = [line for line in claims.failures(table, tmp_path) if line.startswith(row["id"] + ":")]
    assert failed, f"{row['id']} still holds with {values[0]!r} changed"


def test_checks_read_as_documented():
    assert claims.check([1.0, 0.995], "all >= 0.99")
    assert not claims.check([1.0, 0.9], "all >= 0.99")
    assert claims.check([1.0, 0.2, 0.99], "count >= 0.99 == 2")
    assert claims.check([1.0, 0.2, 0.99], "count >= 0.99 >= 1")
    assert claims.check(["trained"], "equals trained")
    assert claims.check(["3 numbers of 3 digits"], "equals 3 numbers of 3 digits")
    assert claims.check([0.21, 0.1978, 0.187], "mean == 0.198")
    assert not claims.check([0.21, 0.1978, 0.187], "mean == 0.197")
    assert claims.check([572.6], "mean == 573")
    assert claims.check([0.9367, 0.03], "max ~ 0.937") and not claims.check([0.9367, 0.03], "max == 0.937")
    with pytest.raises(claims.ClaimError):
        claims.check([1], "about 1")
