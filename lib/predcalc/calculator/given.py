"""What the calculator is given and what it learns, generated from its code.

Every row of :func:`given_table` is read from the code it describes: the rule steps' encodings and
value targets (:data:`predcalc.calculator.rules.RULES`, each formula below evaluated on every input
of its step and compared with the code's features, so a changed encoding fails here rather than
leaving a stale row), the staircases (above, below, period, centred), the control's kind features
(:data:`~predcalc.calculator.rules.KIND_FEATURES`) and relations, the schedule's constants
(:mod:`predcalc.calculator.engine`, :mod:`predcalc.calculator.tokens`) and the trainable weights of
each step network (their names and sizes, from a built model).
"""

from __future__ import annotations

import inspect
import re

import numpy as np

from predcalc.calculator import engine, rules, tokens
from predcalc.calculator.steps import STEPS, TARGETS

# rules.py's NumPy stand-in for keras.ops (private there; see given_ablations on why it stays so)
_NUMPY_OPS = rules._NumpyOps

#: The names of each rule step's inputs (the columns of :attr:`Step.inputs`).
INPUT_NAMES = {
    "addsub": ("carry", "mode", "a", "b"),
    "compare": ("state", "a", "b"),
    "muldigit": ("carry", "a", "d"),
    "qdigit": ("q", "k", "compare"),
}
#: Each rule step's encoding as formulas over its inputs (checked against the code by :func:`features`).
FEATURES = {
    "addsub": ("a", "b", "carry", "mode * b", "mode * carry"),
    "compare": ("a * (state == 0)", "b * (state == 0)", "state == 1", "state == 2"),
    "muldigit": ("a * d", "a", "d", "carry"),
    "qdigit": ("q", "(compare != 1) * k", "(compare != 1) * q"),
}
#: Each rule step's intermediate value target as a formula (checked against the code by :func:`features`).
VALUES = {
    "addsub": "where(mode == 0, a + b + carry, a - b - carry)",
    "compare": "where(state == 0, a - b, where(state == 1, -10, 10))",
    "muldigit": "a * d + carry",
    "qdigit": "where(compare != 1, k, q)",
}
#: Products among the features: multiplication given, not learned.
_PRODUCT = re.compile(r"\w+\s*\*\s*\w+|\)\s*\*\s*\w+")


def _evaluate(formula: str, columns: dict) -> np.ndarray:
    return np.asarray(eval(formula, {"where": np.where}, columns), np.float64)  # noqa: S307 (formulas above)


def features(name: str) -> dict:
    """The encoding and value target of a rule step, checked on its whole input domain against the
    code; raises if :data:`FEATURES` or :data:`VALUES` no longer describe :data:`rules.RULES`."""
    rule, domain = rules.RULES[name], STEPS[name].domain()
    columns = dict(zip(INPUT_NAMES[name], domain.T))
    code = np.asarray(rule.features(_NUMPY_OPS, domain), np.float64)
    written = np.stack([np.broadcast_to(_evaluate(f, columns), len(domain)) for f in FEATURES[name]], axis=1)
    if code.shape != written.shape or not np.array_equal(code, written):
        raise AssertionError(f"given.FEATURES[{name!r}] no longer matches rules.RULES[{name!r}].features")
    if not np.array_equal(rule.value(domain), _evaluate(VALUES[name], columns)):
        raise AssertionError(f"given.VALUES[{name!r}] no longer matches rules.RULES[{name!r}].value")
    return {
        "features": list(FEATURES[name]),
        "products": [f for f in FEATURES[name] if _PRODUCT.search(f)],
        "value": VALUES[name],
        "staircase": {
            "above": rule.above,
            "below": rule.below,
            "period": rule.period,
            "centred": rule.centred,
        },
    }


def kind_features() -> list[dict]:
    """The control's given kind features, one row per token kind (from ``KIND_FEATURES``)."""
    names = {value: key for key, value in tokens.KINDS.items()} | {tokens.PAD: "padding", tokens.NUM: "number"}
    columns = ("number", "open", "close", "operator", "precedence level", "inverts")
    return [
        {"kind": names[k], **{c: int(v) for c, v in zip(columns, rules.KIND_FEATURES[k])}}
        for k in range(len(rules.KIND_FEATURES))
    ]


def schedule() -> list[dict]:
    """What code decides in the loop (no learned step involved), with the constants it uses."""
    gcd = inspect.getsource(engine.Engine.gcd)
    rounds = re.search(r"range\((\d+) \* width \+ 1\)", gcd)
    return [
        {
            "piece": "which ready reductions run together",
            "where": "engine._schedule",
            "given": "every other operator of a run of adjacent ready operators, from the first",
        },
        {
            "piece": "the loop's end",
            "where": "Engine.evaluate",
            "given": "the loop stops when one token is left",
        },
        {
            "piece": "quotient positions",
            "where": "Engine.divmod",
            "given": "the difference of the two operands' learned lengths",
        },
        {
            "piece": "Euclid's cap (Lamé)",
            "where": "Engine.gcd",
            "given": f"{rounds.group(1) if rounds else '?'} rounds per decimal digit, then an error",
        },
        {
            "piece": "refusal of large products",
            "where": "engine.MAX_DIGIT_PRODUCT",
            "given": f"operands whose digit counts multiply to more than {engine.MAX_DIGIT_PRODUCT:,}",
        },
        {
            "piece": "refusal of long inputs",
            "where": "tokens.MAX_CHARACTERS",
            "given": f"expressions longer than {tokens.MAX_CHARACTERS:,} characters",
        },
        {
            "piece": "lexing and alignment",
            "where": "tokens.lex, engine._pad, engine._shift",
            "given": "numbers as digit arrays, leading zeros dropped; columns aligned by significance",
        },
    ]


def learned_weights(name: str) -> list[dict]:
    """The trainable weights of a step's network (name and size), from a built model."""
    if name == "control":
        model = rules.build_control_rule(0)
    elif name in rules.RULES:
        model = rules.build_rule(name, 0)
    else:
        from predcalc.calculator.nets import build_step  # the table networks

        model = build_step(name, 0)
    model(STEPS[name].domain()[:1])  # built
    return [{"weight": w.path, "size": int(np.prod(w.shape))} for w in model.trainable_weights]


def given_table(steps_record: dict | None = None) -> list[dict]:
    """One row per step of the shipped (rule) calculator: what it reads and writes, what is given
    (encoding, products, value target, staircase, or the kind features and relations), and what is
    learned (the trainable weights and their count); ``steps_record`` (the record's ``"steps"``) adds
    how many of its reachable inputs each was trained on."""
    rows = []
    for name in STEPS:
        reads, writes = TARGETS[name]
        weights = learned_weights(name)
        row = {"step": name, "reads": reads, "writes": writes}
        if name in rules.RULES:
            found = features(name)
            stair = found["staircase"]
            row["kind"] = "rule network"
            row["given"] = (
                f"encoding [{', '.join(found['features'])}]; value target {found['value']}; "
                f"staircase targets with period {stair['period']:g} ({stair['above']} above, {stair['below']} below"
                + (", centred" if stair["centred"] else "")
                + ")"
            )
            row["given_products"] = found["products"]
        elif name == "control":
            row["kind"] = "relational pair scores"
            row["given"] = "kind features (number, (, ), operator, precedence level, inverts); relations: " + "; ".join(
                rules.RELATIONS
            )
            row["given_products"] = []
        else:
            row["kind"] = "memorised table (every row trained)"
            row["given"] = "one-hot inputs"
            row["given_products"] = []
        row["learned"] = ", ".join(w["weight"] for w in weights)
        row["learned_parameters"] = sum(w["size"] for w in weights)
        if steps_record and name in steps_record:
            row["trained_on"] = f"{steps_record[name]['trained_on']} of {steps_record[name]['reachable']}"
        rows.append(row)
    return rows
