"""The families table's training budgets, read from each row's stored parameters and epochs run."""

from types import SimpleNamespace

from predcalc.report import prose
from predcalc.report.budget import training_budgets


def _model(epochs_run, loss=0.1):
    runs = [SimpleNamespace(epochs=e, extra={"best_val_loss": loss}) for e in epochs_run]
    return SimpleNamespace(runs=runs)


def _record(epochs, patience):
    return SimpleNamespace(parameters={"epochs": epochs, "patience": patience})


def _findings():
    models = {
        "fnn2": (_record(200, 20), _model([93, 113])),
        "fnn2_cosine": (_record(200, 20), _model([120, 200], loss=0.05)),  # the lower loss: the row
        "rnn2": (_record(200, 20), _model([33, 84])),
        "transformer4_local_bounded": (_record(200, 200), _model([200, 200])),
    }
    return SimpleNamespace(models=models)


def test_budgets_group_each_rows_cap_and_patience():
    budgets = training_budgets(_findings())
    assert [(g["epochs"], g["patience"], g["early_stopping"]) for g in budgets] == [(200, 20, True), (200, 200, False)]
    first = budgets[0]["models"]
    assert [(m["name"], m["low"], m["high"]) for m in first] == [("fnn2_cosine", 120, 200), ("rnn2", 33, 84)]
    assert budgets[1]["models"][0]["low"] == budgets[1]["models"][0]["high"] == 200


def test_budget_sentence_names_the_model_without_early_stopping():
    (text,) = prose.bullets("budget.md.j2", budgets=training_budgets(_findings()))
    assert "200 epochs at patience 200, so no seed stopped early: bounded gated-sum transformer: 200 epochs run" in text
    assert "RNN 470 units (prior report's RNN2): 33-84 epochs run" in text


def test_one_budget_for_all_says_nothing():
    findings = _findings()
    findings.models["transformer4_local_bounded"] = (_record(200, 20), _model([150, 180]))
    assert prose.bullets("budget.md.j2", budgets=training_budgets(findings)) == []
